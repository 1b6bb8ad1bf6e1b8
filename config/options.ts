// The one table of every daemon option: flag, short flag, type, default, config-file key,
// whether SIGHUP may change it, and the environment variable that feeds it. Parsing, merging,
// help text and the reload diff are all driven from here.

export interface RuntimeEntry {
  path?: string;
  runtimeArgs?: string[];
  runtimeType?: string;
  options?: Record<string, unknown>;
}

export interface Ulimit {
  Name: string;
  Soft: number;
  Hard: number;
}

export interface AddressPool {
  base: string;
  size: number;
}

export interface BuilderGcPolicy {
  keepStorage?: string;
  filter?: string[];
  all?: boolean;
}

export interface BuilderConfig {
  gc?: { enabled?: boolean; defaultKeepStorage?: string; policy?: BuilderGcPolicy[] };
}

/** The daemon's effective configuration: one camelCase field per option. */
export interface DaemonConfig {
  allowNondistributableArtifacts: string[];
  apiCorsHeader: string;
  authorizationPlugins: string[];
  bip: string;
  bridge: string;
  builder: BuilderConfig;
  cdiSpecDirs: string[];
  cgroupParent: string;
  clusterDefaultAdvertiseAddr: string;
  /** An extension (as dockerd once had): etcd://HOST:PORT[,HOST:PORT] (docs/api-extensions.md). */
  clusterStore: string;
  clusterStoreOpts: Record<string, string>;
  configFile: string;
  cpuRtPeriod: number;
  cpuRtRuntime: number;
  criSupervisor: boolean;
  dataRoot: string;
  debug: boolean;
  defaultAddressPools: AddressPool[];
  defaultCgroupnsMode: string;
  defaultGateway: string;
  defaultGatewayV6: string;
  defaultIpcMode: string;
  defaultNetworkOpts: Record<string, Record<string, string>>;
  defaultRuntime: string;
  /** Bytes. */
  defaultShmSize: number;
  defaultUlimits: Record<string, Ulimit>;
  dns: string[];
  dnsOpts: string[];
  dnsSearch: string[];
  execOpts: string[];
  execRoot: string;
  experimental: boolean;
  features: Record<string, boolean>;
  fixedCidr: string;
  fixedCidrV6: string;
  group: string;
  hostGatewayIp: string;
  hosts: string[];
  httpProxy: string;
  httpsProxy: string;
  icc: boolean;
  init: boolean;
  initPath: string;
  insecureRegistries: string[];
  ip: string;
  ip6tables: boolean;
  ipForward: boolean;
  ipMasq: boolean;
  iptables: boolean;
  ipv6: boolean;
  labels: string[];
  liveRestore: boolean;
  logDriver: string;
  logFormat: string;
  logLevel: string;
  logOpts: Record<string, string>;
  maxConcurrentDownloads: number;
  maxConcurrentUploads: number;
  maxDownloadAttempts: number;
  metricsAddr: string;
  mtu: number;
  networkControlPlaneMtu: number;
  noNewPrivileges: boolean;
  noProxy: string;
  nodeGenericResources: string[];
  oomScoreAdjust: number;
  pidfile: string;
  rawLogs: boolean;
  registryMirrors: string[];
  rootless: boolean;
  runtimes: Record<string, RuntimeEntry>;
  seccompProfile: string;
  selinuxEnabled: boolean;
  shutdownTimeout: number;
  storageDriver: string;
  storageOpts: string[];
  supervisor: string;
  supervisorNamespace: string;
  supervisorPluginsNamespace: string;
  tls: boolean;
  tlscacert: string;
  tlscert: string;
  tlskey: string;
  tlsverify: boolean;
  userlandProxy: boolean;
  userlandProxyPath: string;
  usernsRemap: string;
  // Environment-only settings (spec §Environment variables read by the daemon).
  /** ENGINE_TMPDIR, or '' for <data-root>/tmp. */
  tmpDir: string;
  /** ENGINE_RAMDISK set: do not pivot_root. */
  noPivotRoot: boolean;
  /** ENGINE_DISABLE_PIGZ set: never decompress with unpigz. */
  disablePigz: boolean;
  /** ENGINE_CERT_PATH, default ~/.engine: where the tls* files default to. */
  certPath: string;
}

export type ConfigField = keyof DaemonConfig;

/**
 * How a value is written on the command line:
 * bool (--x, --x=false), string, int, bytes (64M), list (repeatable string), map (k=v, repeatable),
 * mapmap (driver=opt=v), ulimit (name=soft[:hard]), runtime (name=path), pool (base=..,size=..),
 * feature (name[=bool]). `file` is a file-only key; `action` ends parsing (help, version, validate).
 */
export type OptionType =
  | 'string'
  | 'bool'
  | 'int'
  | 'bytes'
  | 'list'
  | 'map'
  | 'mapmap'
  | 'ulimit'
  | 'runtime'
  | 'pool'
  | 'feature'
  | 'file'
  | 'action';

export interface OptionDef {
  /** Long flag name without dashes; for a file-only option, its file key. */
  name: string;
  short?: string;
  /** The DaemonConfig field it sets; null for help/version/validate. */
  field: ConfigField | null;
  type: OptionType;
  default: unknown;
  /** Config-file key; a dotted key is nested (proxies.http-proxy). null: flag only. */
  fileKey: string | null;
  /** May be changed by SIGHUP (spec §Options changeable on reload). */
  reloadable: boolean;
  env?: string;
  /** false for options that exist only in the config file. */
  cli?: boolean;
  /** Placeholder shown in help. */
  arg?: string;
  description: string;
}

export const DEFAULT_HOST = 'unix:///var/run/engine.sock';
export const DEFAULT_CONFIG_FILE = '/etc/engine/daemon.json';
export const STOCK_RUNTIME = 'stdrt';

const o = (d: OptionDef): OptionDef => d;

export const OPTIONS: readonly OptionDef[] = [
  o({ name: 'add-runtime', field: 'runtimes', type: 'runtime', default: {}, fileKey: 'runtimes', reloadable: true, arg: 'runtime', description: 'Register an additional OCI compatible runtime' }),
  o({ name: 'allow-nondistributable-artifacts', field: 'allowNondistributableArtifacts', type: 'list', default: [], fileKey: 'allow-nondistributable-artifacts', reloadable: true, description: 'Allow push of nondistributable artifacts to registry' }),
  o({ name: 'api-cors-header', field: 'apiCorsHeader', type: 'string', default: '', fileKey: 'api-cors-header', reloadable: false, description: 'Set CORS headers in the Engine API' }),
  o({ name: 'authorization-plugin', field: 'authorizationPlugins', type: 'list', default: [], fileKey: 'authorization-plugins', reloadable: true, description: 'Authorization plugins to load' }),
  o({ name: 'bip', field: 'bip', type: 'string', default: '', fileKey: 'bip', reloadable: false, description: 'Specify network bridge IP' }),
  o({ name: 'bridge', short: 'b', field: 'bridge', type: 'string', default: '', fileKey: 'bridge', reloadable: false, description: 'Attach containers to a network bridge' }),
  o({ name: 'builder', field: 'builder', type: 'file', default: {}, fileKey: 'builder', reloadable: false, cli: false, description: 'Builder settings (garbage collection)' }),
  o({ name: 'cdi-spec-dir', field: 'cdiSpecDirs', type: 'list', default: [], fileKey: 'cdi-spec-dirs', reloadable: false, description: 'CDI specification directories to use' }),
  o({ name: 'cgroup-parent', field: 'cgroupParent', type: 'string', default: '', fileKey: 'cgroup-parent', reloadable: false, description: 'Set parent cgroup for all containers' }),
  o({ name: 'cluster-default-advertise-addr', field: 'clusterDefaultAdvertiseAddr', type: 'string', default: '', fileKey: 'cluster-default-advertise-addr', reloadable: false, description: 'Set default address or interface for cluster advertised address' }),
  o({ name: 'cluster-store', field: 'clusterStore', type: 'string', default: '', fileKey: 'cluster-store', reloadable: false, description: 'URL of the distributed storage backend (etcd://HOST:PORT[,HOST:PORT])' }),
  o({ name: 'cluster-store-opt', field: 'clusterStoreOpts', type: 'map', default: {}, fileKey: 'cluster-store-opts', reloadable: false, arg: 'map', description: 'Set cluster store options (kv.cacertfile, kv.certfile, kv.keyfile, discovery.ttl)' }),
  o({ name: 'config-file', field: 'configFile', type: 'string', default: DEFAULT_CONFIG_FILE, fileKey: null, reloadable: false, description: 'Daemon configuration file' }),
  o({ name: 'cpu-rt-period', field: 'cpuRtPeriod', type: 'int', default: 0, fileKey: 'cpu-rt-period', reloadable: false, description: 'Limit the CPU real-time period in microseconds for the parent cgroup for all containers (not supported with cgroups v2)' }),
  o({ name: 'cpu-rt-runtime', field: 'cpuRtRuntime', type: 'int', default: 0, fileKey: 'cpu-rt-runtime', reloadable: false, description: 'Limit the CPU real-time runtime in microseconds for the parent cgroup for all containers (not supported with cgroups v2)' }),
  o({ name: 'cri-supervisor', field: 'criSupervisor', type: 'bool', default: false, fileKey: 'cri-supervisor', reloadable: false, description: 'start supervisor with cri' }),
  o({ name: 'data-root', field: 'dataRoot', type: 'string', default: '/var/lib/engine', fileKey: 'data-root', reloadable: false, description: 'Root directory of persistent engine state' }),
  o({ name: 'debug', short: 'D', field: 'debug', type: 'bool', default: false, fileKey: 'debug', reloadable: true, description: 'Enable debug mode' }),
  o({ name: 'default-address-pool', field: 'defaultAddressPools', type: 'pool', default: [], fileKey: 'default-address-pools', reloadable: false, arg: 'pool-options', description: 'Default address pools for node specific local networks' }),
  o({ name: 'default-cgroupns-mode', field: 'defaultCgroupnsMode', type: 'string', default: 'private', fileKey: 'default-cgroupns-mode', reloadable: false, description: 'Default mode for containers cgroup namespace ("host" | "private")' }),
  o({ name: 'default-gateway', field: 'defaultGateway', type: 'string', default: '', fileKey: 'default-gateway', reloadable: false, arg: 'ip', description: 'Container default gateway IPv4 address' }),
  o({ name: 'default-gateway-v6', field: 'defaultGatewayV6', type: 'string', default: '', fileKey: 'default-gateway-v6', reloadable: false, arg: 'ip', description: 'Container default gateway IPv6 address' }),
  o({ name: 'default-ipc-mode', field: 'defaultIpcMode', type: 'string', default: 'private', fileKey: 'default-ipc-mode', reloadable: false, description: 'Default mode for containers ipc ("shareable" | "private")' }),
  o({ name: 'default-network-opt', field: 'defaultNetworkOpts', type: 'mapmap', default: {}, fileKey: 'default-network-opts', reloadable: false, arg: 'mapmap', description: 'Default network options (driver=opt=value)' }),
  o({ name: 'default-runtime', field: 'defaultRuntime', type: 'string', default: STOCK_RUNTIME, fileKey: 'default-runtime', reloadable: true, description: 'Default OCI runtime for containers' }),
  o({ name: 'default-shm-size', field: 'defaultShmSize', type: 'bytes', default: 64 * 1024 * 1024, fileKey: 'default-shm-size', reloadable: false, description: 'Default shm size for containers' }),
  o({ name: 'default-ulimit', field: 'defaultUlimits', type: 'ulimit', default: {}, fileKey: 'default-ulimits', reloadable: false, arg: 'ulimit', description: 'Default ulimits for containers' }),
  o({ name: 'dns', field: 'dns', type: 'list', default: [], fileKey: 'dns', reloadable: false, description: 'DNS server to use' }),
  o({ name: 'dns-opt', field: 'dnsOpts', type: 'list', default: [], fileKey: 'dns-opts', reloadable: false, description: 'DNS options to use' }),
  o({ name: 'dns-search', field: 'dnsSearch', type: 'list', default: [], fileKey: 'dns-search', reloadable: false, description: 'DNS search domains to use' }),
  o({ name: 'exec-opt', field: 'execOpts', type: 'list', default: [], fileKey: 'exec-opts', reloadable: false, description: 'Runtime execution options' }),
  o({ name: 'exec-root', field: 'execRoot', type: 'string', default: '/var/run/engine', fileKey: 'exec-root', reloadable: false, description: 'Root directory for execution state files' }),
  o({ name: 'experimental', field: 'experimental', type: 'bool', default: false, fileKey: 'experimental', reloadable: false, description: 'Enable experimental features' }),
  o({ name: 'feature', field: 'features', type: 'feature', default: {}, fileKey: 'features', reloadable: true, arg: 'map', description: 'Enable feature in the daemon' }),
  o({ name: 'fixed-cidr', field: 'fixedCidr', type: 'string', default: '', fileKey: 'fixed-cidr', reloadable: false, description: 'IPv4 subnet for fixed IPs' }),
  o({ name: 'fixed-cidr-v6', field: 'fixedCidrV6', type: 'string', default: '', fileKey: 'fixed-cidr-v6', reloadable: false, description: 'IPv6 subnet for fixed IPs' }),
  o({ name: 'group', short: 'G', field: 'group', type: 'string', default: 'engine', fileKey: 'group', reloadable: false, description: 'Group for the unix socket' }),
  o({ name: 'help', field: null, type: 'action', default: false, fileKey: null, reloadable: false, description: 'Print usage' }),
  o({ name: 'host', short: 'H', field: 'hosts', type: 'list', default: [DEFAULT_HOST], fileKey: 'hosts', reloadable: false, description: 'Daemon socket(s) to connect to' }),
  o({ name: 'host-gateway-ip', field: 'hostGatewayIp', type: 'string', default: '', fileKey: 'host-gateway-ip', reloadable: false, arg: 'ip', description: 'IP address that the special \'host-gateway\' string in --add-host resolves to. Defaults to the IP address of the default bridge' }),
  o({ name: 'http-proxy', field: 'httpProxy', type: 'string', default: '', fileKey: 'proxies.http-proxy', reloadable: false, env: 'HTTP_PROXY', description: 'HTTP proxy URL to use for outgoing traffic' }),
  o({ name: 'https-proxy', field: 'httpsProxy', type: 'string', default: '', fileKey: 'proxies.https-proxy', reloadable: false, env: 'HTTPS_PROXY', description: 'HTTPS proxy URL to use for outgoing traffic' }),
  o({ name: 'icc', field: 'icc', type: 'bool', default: true, fileKey: 'icc', reloadable: false, description: 'Enable inter-container communication' }),
  o({ name: 'init', field: 'init', type: 'bool', default: false, fileKey: 'init', reloadable: false, description: 'Run an init in the container to forward signals and reap processes' }),
  o({ name: 'init-path', field: 'initPath', type: 'string', default: '', fileKey: 'init-path', reloadable: false, description: 'Path to the init binary' }),
  o({ name: 'insecure-registry', field: 'insecureRegistries', type: 'list', default: [], fileKey: 'insecure-registries', reloadable: true, description: 'Enable insecure registry communication' }),
  o({ name: 'ip', field: 'ip', type: 'string', default: '0.0.0.0', fileKey: 'ip', reloadable: false, description: 'Default IP when binding container ports' }),
  o({ name: 'ip-forward', field: 'ipForward', type: 'bool', default: true, fileKey: 'ip-forward', reloadable: false, description: 'Enable net.ipv4.ip_forward' }),
  o({ name: 'ip-masq', field: 'ipMasq', type: 'bool', default: true, fileKey: 'ip-masq', reloadable: false, description: 'Enable IP masquerading' }),
  o({ name: 'ip6tables', field: 'ip6tables', type: 'bool', default: false, fileKey: 'ip6tables', reloadable: false, description: 'Enable addition of ip6tables rules (experimental)' }),
  o({ name: 'iptables', field: 'iptables', type: 'bool', default: true, fileKey: 'iptables', reloadable: false, description: 'Enable addition of iptables rules' }),
  o({ name: 'ipv6', field: 'ipv6', type: 'bool', default: false, fileKey: 'ipv6', reloadable: false, description: 'Enable IPv6 networking' }),
  o({ name: 'label', field: 'labels', type: 'list', default: [], fileKey: 'labels', reloadable: true, description: 'Set key=value labels to the daemon' }),
  o({ name: 'live-restore', field: 'liveRestore', type: 'bool', default: false, fileKey: 'live-restore', reloadable: true, description: 'Enable live restore of engine when containers are still running' }),
  o({ name: 'log-driver', field: 'logDriver', type: 'string', default: 'json-file', fileKey: 'log-driver', reloadable: false, description: 'Default driver for container logs' }),
  o({ name: 'log-format', field: 'logFormat', type: 'string', default: 'text', fileKey: 'log-format', reloadable: false, description: 'Set the logging format ("text"|"json")' }),
  o({ name: 'log-level', short: 'l', field: 'logLevel', type: 'string', default: 'info', fileKey: 'log-level', reloadable: false, description: 'Set the logging level ("debug"|"info"|"warn"|"error"|"fatal")' }),
  o({ name: 'log-opt', field: 'logOpts', type: 'map', default: {}, fileKey: 'log-opts', reloadable: false, arg: 'map', description: 'Default log driver options for containers' }),
  o({ name: 'max-concurrent-downloads', field: 'maxConcurrentDownloads', type: 'int', default: 3, fileKey: 'max-concurrent-downloads', reloadable: true, description: 'Set the max concurrent downloads' }),
  o({ name: 'max-concurrent-uploads', field: 'maxConcurrentUploads', type: 'int', default: 5, fileKey: 'max-concurrent-uploads', reloadable: true, description: 'Set the max concurrent uploads' }),
  o({ name: 'max-download-attempts', field: 'maxDownloadAttempts', type: 'int', default: 5, fileKey: 'max-download-attempts', reloadable: true, description: 'Set the max download attempts for each pull' }),
  o({ name: 'metrics-addr', field: 'metricsAddr', type: 'string', default: '', fileKey: 'metrics-addr', reloadable: false, description: 'Set default address and port to serve the metrics api on' }),
  o({ name: 'mtu', field: 'mtu', type: 'int', default: 1500, fileKey: 'mtu', reloadable: false, description: 'Set the containers network MTU' }),
  o({ name: 'network-control-plane-mtu', field: 'networkControlPlaneMtu', type: 'int', default: 1500, fileKey: 'network-control-plane-mtu', reloadable: false, description: 'Network Control plane MTU' }),
  o({ name: 'no-new-privileges', field: 'noNewPrivileges', type: 'bool', default: false, fileKey: 'no-new-privileges', reloadable: false, description: 'Set no-new-privileges by default for new containers' }),
  o({ name: 'no-proxy', field: 'noProxy', type: 'string', default: '', fileKey: 'proxies.no-proxy', reloadable: false, env: 'NO_PROXY', description: 'Comma-separated list of hosts or IP addresses for which the proxy is skipped' }),
  o({ name: 'node-generic-resource', field: 'nodeGenericResources', type: 'list', default: [], fileKey: 'node-generic-resources', reloadable: false, description: 'Advertise user-defined resource' }),
  o({ name: 'oom-score-adjust', field: 'oomScoreAdjust', type: 'int', default: 0, fileKey: 'oom-score-adjust', reloadable: false, description: 'Set the oom_score_adj for the daemon' }),
  o({ name: 'pidfile', short: 'p', field: 'pidfile', type: 'string', default: '/var/run/engine.pid', fileKey: 'pidfile', reloadable: false, description: 'Path to use for daemon PID file' }),
  o({ name: 'raw-logs', field: 'rawLogs', type: 'bool', default: false, fileKey: 'raw-logs', reloadable: false, description: 'Full timestamps without ANSI coloring' }),
  o({ name: 'registry-mirror', field: 'registryMirrors', type: 'list', default: [], fileKey: 'registry-mirrors', reloadable: true, description: 'Preferred registry mirror' }),
  o({ name: 'rootless', field: 'rootless', type: 'bool', default: false, fileKey: 'rootless', reloadable: false, description: 'Enable rootless mode; typically used with RootlessKit' }),
  o({ name: 'seccomp-profile', field: 'seccompProfile', type: 'string', default: 'builtin', fileKey: 'seccomp-profile', reloadable: false, description: 'Path to seccomp profile. Use "unconfined" to disable the default seccomp profile' }),
  o({ name: 'selinux-enabled', field: 'selinuxEnabled', type: 'bool', default: false, fileKey: 'selinux-enabled', reloadable: false, description: 'Enable selinux support' }),
  o({ name: 'shutdown-timeout', field: 'shutdownTimeout', type: 'int', default: 15, fileKey: 'shutdown-timeout', reloadable: true, description: 'Default shutdown timeout' }),
  o({ name: 'storage-driver', short: 's', field: 'storageDriver', type: 'string', default: '', fileKey: 'storage-driver', reloadable: false, env: 'ENGINE_DRIVER', description: 'Storage driver to use' }),
  o({ name: 'storage-opt', field: 'storageOpts', type: 'list', default: [], fileKey: 'storage-opts', reloadable: false, description: 'Storage driver options' }),
  o({ name: 'supervisor', field: 'supervisor', type: 'string', default: '', fileKey: 'supervisor', reloadable: false, description: 'supervisor grpc address' }),
  o({ name: 'supervisor-namespace', field: 'supervisorNamespace', type: 'string', default: 'engine', fileKey: 'supervisor-namespace', reloadable: false, description: 'Supervisor namespace to use' }),
  o({ name: 'supervisor-plugins-namespace', field: 'supervisorPluginsNamespace', type: 'string', default: 'plugins.engine', fileKey: 'supervisor-plugins-namespace', reloadable: false, description: 'Supervisor namespace to use for plugins' }),
  o({ name: 'tls', field: 'tls', type: 'bool', default: false, fileKey: 'tls', reloadable: false, description: 'Use TLS; implied by --tlsverify' }),
  o({ name: 'tlscacert', field: 'tlscacert', type: 'string', default: '~/.engine/ca.pem', fileKey: 'tlscacert', reloadable: false, description: 'Trust certs signed only by this CA' }),
  o({ name: 'tlscert', field: 'tlscert', type: 'string', default: '~/.engine/cert.pem', fileKey: 'tlscert', reloadable: false, description: 'Path to TLS certificate file' }),
  o({ name: 'tlskey', field: 'tlskey', type: 'string', default: '~/.engine/key.pem', fileKey: 'tlskey', reloadable: false, description: 'Path to TLS key file' }),
  o({ name: 'tlsverify', field: 'tlsverify', type: 'bool', default: false, fileKey: 'tlsverify', reloadable: false, env: 'ENGINE_TLS_VERIFY', description: 'Use TLS and verify the remote' }),
  o({ name: 'userland-proxy', field: 'userlandProxy', type: 'bool', default: true, fileKey: 'userland-proxy', reloadable: false, description: 'Use userland proxy for loopback traffic' }),
  o({ name: 'userland-proxy-path', field: 'userlandProxyPath', type: 'string', default: '', fileKey: 'userland-proxy-path', reloadable: false, description: 'Path to the userland proxy binary' }),
  o({ name: 'userns-remap', field: 'usernsRemap', type: 'string', default: '', fileKey: 'userns-remap', reloadable: false, description: 'User/Group setting for user namespaces' }),
  o({ name: 'validate', field: null, type: 'action', default: false, fileKey: null, reloadable: false, description: 'Validate daemon configuration and exit' }),
  o({ name: 'version', short: 'v', field: null, type: 'action', default: false, fileKey: null, reloadable: false, description: 'Print version information and quit' }),
];

/** Settings that come only from the environment (no flag, no file key). */
export const ENV_ONLY: ReadonlyArray<{ env: string; field: ConfigField; description: string }> = [
  { env: 'ENGINE_TMPDIR', field: 'tmpDir', description: 'Location of temporary files the daemon creates' },
  { env: 'ENGINE_RAMDISK', field: 'noPivotRoot', description: 'When set, disables pivot_root' },
  { env: 'ENGINE_DISABLE_PIGZ', field: 'disablePigz', description: 'Disables parallel decompression with unpigz' },
  { env: 'ENGINE_CERT_PATH', field: 'certPath', description: 'Location of authentication keys' },
];

const byFlag = new Map<string, OptionDef>();
const byShort = new Map<string, OptionDef>();
const byFileKey = new Map<string, OptionDef>();
for (const opt of OPTIONS) {
  if (opt.cli !== false) byFlag.set(opt.name, opt);
  if (opt.short) byShort.set(opt.short, opt);
  if (opt.fileKey) byFileKey.set(opt.fileKey, opt);
}

export function optionByFlag(name: string): OptionDef | undefined {
  return byFlag.get(name);
}
export function optionByShort(short: string): OptionDef | undefined {
  return byShort.get(short);
}
/** Looks up a file key; nested keys are written dotted (proxies.http-proxy). */
export function optionByFileKey(key: string): OptionDef | undefined {
  return byFileKey.get(key);
}
export function optionByField(field: ConfigField): OptionDef | undefined {
  return OPTIONS.find((opt) => opt.field === field);
}

/**
 * Sets one field from a value its option's parser made (or a reload's file value): the one place
 * a field is written by name, so callers need no cast of the config.
 */
export function setField(cfg: DaemonConfig, field: ConfigField, value: unknown): void {
  Object.assign(cfg, { [field]: value });
}

/** A fresh copy of the defaults (mutable containers are not shared between calls). */
export function defaultConfig(): DaemonConfig {
  const cfg = {} as DaemonConfig;
  for (const opt of OPTIONS) if (opt.field) setField(cfg, opt.field, structuredClone(opt.default));
  // Environment-only settings: their options carry no default.
  return Object.assign(cfg, { tmpDir: '', noPivotRoot: false, disablePigz: false, certPath: '~/.engine' });
}
