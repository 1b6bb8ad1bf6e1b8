// loadDaemonConfig: flags, then the config file, then the environment, then defaults; the
// reference daemon's conflict rules between flags and file; validation of the merged result.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { EngineError, invalidArgument, isCode } from '../lib/errors.ts';
import { parseGenericResources } from '../lib/generic-resources.ts';
import { parseClusterStore } from '../lib/cluster/store-url.ts';
import { fromHumanSize, isGoDuration } from '../lib/units.ts';
import type { ConfigField, DaemonConfig } from './options.ts';
import { DEFAULT_CONFIG_FILE, DEFAULT_HOST, STOCK_RUNTIME, defaultConfig, setField } from './options.ts';
import { fileEntries, fileValues, findConflicts, readConfigJson } from './file.ts';
import { helpText, parseFlags, type ParsedFlags } from './flags.ts';
import { isCidr, isIP } from './values.ts';
import type { BuilderConfig } from './options.ts';

export type { DaemonConfig, RuntimeEntry, Ulimit, AddressPool, BuilderConfig } from './options.ts';
export { helpText } from './flags.ts';

export type ConfigSource = 'default' | 'flag' | 'file' | 'env';
/** Where each field's value came from. */
export type ConfigSources = Record<ConfigField, ConfigSource>;

export type LoadResult =
  | { kind: 'help'; text: string }
  | { kind: 'version' }
  | { kind: 'validate'; ok: boolean; message: string; config?: DaemonConfig }
  | { kind: 'run'; config: DaemonConfig; sources: ConfigSources };

export const VALIDATE_OK = 'configuration OK';

/** The path in messages about the file: the reference daemon's wording with our product name. */
export function fileErrorPrefix(path: string): string {
  return `unable to configure the engine daemon with file ${path}: `;
}

/**
 * Parses argv and env into the daemon's configuration. Throws InvalidArgument for bad flags, a
 * bad file or a bad merged configuration, unless --validate was given, which reports instead.
 */
export function loadDaemonConfig(argv: readonly string[], env: NodeJS.ProcessEnv): LoadResult {
  const flags = parseFlags(argv);
  if (flags.help) return { kind: 'help', text: helpText() };
  if (flags.version) return { kind: 'version' };
  let merged: { config: DaemonConfig; sources: ConfigSources };
  try {
    merged = buildConfig(flags, env);
  } catch (err) {
    if (flags.validate) return { kind: 'validate', ok: false, message: err instanceof Error ? err.message : String(err) };
    throw err;
  }
  if (flags.validate) return { kind: 'validate', ok: true, message: VALIDATE_OK, config: merged.config };
  return { kind: 'run', ...merged };
}

/** Merges flags, file, env and defaults, then validates. */
export function buildConfig(flags: ParsedFlags, env: NodeJS.ProcessEnv): { config: DaemonConfig; sources: ConfigSources } {
  const config = defaultConfig();
  const sources = {} as ConfigSources;
  for (const f of Object.keys(config) as ConfigField[]) sources[f] = 'default';

  // Rootless (a flag): the user's own configuration file, as the reference's ~/.config/docker/daemon.json.
  const defaultFile = flags.values.rootless === true ? join(userDirs(env).config, 'engine', 'daemon.json') : DEFAULT_CONFIG_FILE;
  const configFile = (flags.values.configFile as string | undefined) ?? defaultFile;
  const explicitFile = flags.values.configFile !== undefined;
  let fromFile: Partial<Record<ConfigField, unknown>> = {};
  try {
    let json: Record<string, unknown> | null = null;
    try {
      json = readConfigJson(configFile);
    } catch (err) {
      // A missing default file is fine; a missing explicit --config-file is not.
      if (!(isCode(err, 'NotFound') && !explicitFile)) throw err;
    }
    if (json) {
      const entries = fileEntries(json);
      const conflict = findConflicts(flags, entries);
      if (conflict) throw invalidArgument(conflict);
      fromFile = fileValues(entries);
    }
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new EngineError(err instanceof EngineError ? err.code : 'InvalidArgument', fileErrorPrefix(configFile) + msg, { cause: err });
  }

  for (const [f, v] of Object.entries(fromFile)) {
    setField(config, f as ConfigField, v);
    sources[f as ConfigField] = 'file';
  }
  for (const [f, v] of Object.entries(flags.values)) {
    setField(config, f as ConfigField, v);
    sources[f as ConfigField] = 'flag';
  }
  config.configFile = configFile;
  applyEnv(config, sources, env);
  if (config.rootless) applyRootlessRoots(config, sources, env);

  // -H with an empty value means the default, as if -H were not given.
  const tls = config.tls || config.tlsverify;
  const hosts = config.hosts.filter((h) => h.trim() !== '');
  config.hosts = (hosts.length ? hosts : [DEFAULT_HOST]).map((h) => normalizeHost(h, tls));
  if (config.tlsverify) config.tls = true;

  validateConfig(config);
  return { config, sources };
}

/** The user's XDG directories (rootless mode), as the reference's homedir package finds them. */
function userDirs(env: NodeJS.ProcessEnv): { data: string; config: string; runtime: string | undefined } {
  const home = env.HOME || homedir();
  return {
    data: env.XDG_DATA_HOME || join(home, '.local', 'share'),
    config: env.XDG_CONFIG_HOME || join(home, '.config'),
    runtime: env.XDG_RUNTIME_DIR || undefined,
  };
}

/**
 * Rootless mode's per-user roots where no option names them: the data root under
 * $XDG_DATA_HOME/engine, the exec root, pidfile and socket under $XDG_RUNTIME_DIR.
 */
function applyRootlessRoots(config: DaemonConfig, sources: ConfigSources, env: NodeJS.ProcessEnv): void {
  const dirs = userDirs(env);
  if (!dirs.runtime) throw invalidArgument('rootless mode needs XDG_RUNTIME_DIR set to a directory of the user\'s own');
  const unset = (f: ConfigField) => sources[f] === 'default';
  if (unset('dataRoot')) config.dataRoot = join(dirs.data, 'engine');
  if (unset('execRoot')) config.execRoot = join(dirs.runtime, 'engine');
  if (unset('pidfile')) config.pidfile = join(dirs.runtime, 'engine.pid');
  if (unset('hosts')) config.hosts = [`unix://${join(dirs.runtime, 'engine.sock')}`];
}

function setFromEnv(config: DaemonConfig, sources: ConfigSources, field: ConfigField, value: unknown): void {
  setField(config, field, value);
  sources[field] = 'env';
}

/** Environment variables apply only where neither a flag nor the file set the option. */
function applyEnv(config: DaemonConfig, sources: ConfigSources, env: NodeJS.ProcessEnv): void {
  const unset = (f: ConfigField) => sources[f] === 'default';
  if (env.ENGINE_DRIVER && unset('storageDriver')) setFromEnv(config, sources, 'storageDriver', env.ENGINE_DRIVER);
  if (env.ENGINE_TLS_VERIFY && unset('tlsverify')) setFromEnv(config, sources, 'tlsverify', true);
  const proxies: Array<[ConfigField, string]> = [
    ['httpProxy', 'HTTP_PROXY'],
    ['httpsProxy', 'HTTPS_PROXY'],
    ['noProxy', 'NO_PROXY'],
  ];
  for (const [field, name] of proxies) {
    const v = env[name] || env[name.toLowerCase()];
    if (v && unset(field)) setFromEnv(config, sources, field, v);
  }
  if (env.ENGINE_TMPDIR) setFromEnv(config, sources, 'tmpDir', env.ENGINE_TMPDIR);
  if (env.ENGINE_RAMDISK) setFromEnv(config, sources, 'noPivotRoot', true);
  if (env.ENGINE_DISABLE_PIGZ) setFromEnv(config, sources, 'disablePigz', true);
  if (env.ENGINE_CERT_PATH) setFromEnv(config, sources, 'certPath', env.ENGINE_CERT_PATH);
  const home = env.HOME || homedir();
  const expand = (p: string) => (p === '~' || p.startsWith('~/') ? home + p.slice(1) : p);
  config.certPath = expand(config.certPath);
  const certFiles: Array<['tlscacert' | 'tlscert' | 'tlskey', string]> = [
    ['tlscacert', 'ca.pem'],
    ['tlscert', 'cert.pem'],
    ['tlskey', 'key.pem'],
  ];
  for (const [field, file] of certFiles) {
    config[field] = sources[field] === 'default' ? `${config.certPath}/${file}` : expand(config[field]);
  }
}

/**
 * Canonical form of a -H address (spec §Socket address formats): unix:// with no path is the
 * default socket; tcp:// with no host is 127.0.0.1 and port 2375 (2376 with TLS); a bare
 * host:port is tcp.
 */
export function normalizeHost(addr: string, tls = false): string {
  const a = addr.trim();
  const sep = a.indexOf('://');
  const proto = sep < 0 ? 'tcp' : a.slice(0, sep);
  const rest = sep < 0 ? a : a.slice(sep + 3);
  switch (proto) {
    case 'unix':
      return `unix://${rest || DEFAULT_HOST.slice('unix://'.length)}`;
    case 'fd':
      return a;
    case 'tcp': {
      const slash = rest.indexOf('/');
      const hostPort = slash < 0 ? rest : rest.slice(0, slash);
      const path = slash < 0 ? '' : rest.slice(slash);
      let host = hostPort;
      let port = '';
      const m = /^(\[[^\]]*\]|[^:]*)(?::(.*))?$/.exec(hostPort);
      if (m) {
        host = m[1];
        port = m[2] ?? '';
      }
      if (!host) host = '127.0.0.1';
      if (!port) port = tls ? '2376' : '2375';
      if (!/^\d+$/.test(port) || Number(port) > 65535) throw invalidArgument(`Invalid bind address format: ${addr}`);
      return `tcp://${host}:${port}${path === '/' ? '' : path}`;
    }
    default:
      throw invalidArgument(`Invalid bind address format: ${addr}`);
  }
}

const LOG_LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'panic']);

/** Checks of the merged configuration (the reference daemon's Validate). Throws InvalidArgument. */
export function validateConfig(c: DaemonConfig): void {
  const bad = (msg: string) => invalidArgument(msg);
  for (const d of c.dns) if (!isIP(d)) throw bad(`${d} is not an ip address`);
  for (const s of c.dnsSearch) {
    if (s !== '.' && (!/^[A-Za-z0-9.-]+$/.test(s) || s.startsWith('.') || s.startsWith('-') || s.length > 255)) {
      throw bad(`${s} is not a valid domain`);
    }
  }
  const labels = new Map<string, string>();
  for (const l of c.labels) {
    const eq = l.indexOf('=');
    if (eq <= 0) throw bad(`invalid label '${l}': value is required`);
    const [k, v] = [l.slice(0, eq), l.slice(eq + 1)];
    const prev = labels.get(k);
    if (prev !== undefined && prev !== v) throw bad(`conflict labels for ${k}=${v} and ${k}=${prev}`);
    labels.set(k, v);
  }
  if (c.maxConcurrentDownloads < 0) throw bad(`invalid max concurrent downloads: ${c.maxConcurrentDownloads}`);
  if (c.maxConcurrentUploads < 0) throw bad(`invalid max concurrent uploads: ${c.maxConcurrentUploads}`);
  if (c.maxDownloadAttempts < 0) throw bad(`invalid max download attempts: ${c.maxDownloadAttempts}`);
  if (c.mtu < 0) throw bad(`invalid default MTU: ${c.mtu}`);
  if (c.networkControlPlaneMtu < 0) throw bad(`invalid network control plane MTU: ${c.networkControlPlaneMtu}`);
  if (c.logLevel && !LOG_LEVELS.has(c.logLevel.toLowerCase())) throw bad(`invalid logging level: ${c.logLevel}`);
  if (c.logFormat && c.logFormat !== 'text' && c.logFormat !== 'json') throw bad(`invalid log format: ${c.logFormat}`);
  if (c.defaultCgroupnsMode && c.defaultCgroupnsMode !== 'host' && c.defaultCgroupnsMode !== 'private') {
    throw bad(`invalid default cgroup namespace (${c.defaultCgroupnsMode}): must be 'host' or 'private'`);
  }
  if (c.defaultIpcMode && c.defaultIpcMode !== 'shareable' && c.defaultIpcMode !== 'private') {
    throw bad(`invalid default ipc mode (${c.defaultIpcMode}): must be 'shareable' or 'private'`);
  }
  for (const [name, r] of Object.entries(c.runtimes)) {
    if (name === STOCK_RUNTIME) throw bad(`runtime name '${STOCK_RUNTIME}' is reserved`);
    if (r.path && r.runtimeType) throw bad(`runtime ${name}: cannot configure both path and runtimeType`);
    if (!r.path && !r.runtimeType) throw bad(`runtime ${name}: either path or runtimeType must be set`);
    if (r.runtimeArgs?.length && !r.path) throw bad(`runtime ${name}: runtimeArgs require path`);
  }
  if (c.defaultRuntime && c.defaultRuntime !== STOCK_RUNTIME && !c.runtimes[c.defaultRuntime]) {
    throw bad(`specified default runtime '${c.defaultRuntime}' does not exist`);
  }
  parseGenericResources(c.nodeGenericResources);
  if (c.clusterStore) parseClusterStore(c.clusterStore, c.clusterStoreOpts);
  else if (Object.keys(c.clusterStoreOpts).length) throw bad('--cluster-store-opt needs --cluster-store');
  validateBuilderGc(c.builder);
  for (const [k, v] of [['bip', c.bip], ['fixed-cidr', c.fixedCidr], ['fixed-cidr-v6', c.fixedCidrV6]] as const) {
    if (v && !isCidr(v)) throw bad(`invalid ${k}: ${v}`);
  }
  for (const [k, v] of [['ip', c.ip], ['default-gateway', c.defaultGateway], ['default-gateway-v6', c.defaultGatewayV6], ['host-gateway-ip', c.hostGatewayIp]] as const) {
    if (v && !isIP(v)) throw bad(`invalid ${k}: ${v} is not an ip address`);
  }
  if (c.shutdownTimeout < -1) throw bad(`invalid shutdown timeout: ${c.shutdownTimeout}`);
  for (const o of c.execOpts) {
    const eq = o.indexOf('=');
    if (eq <= 0) throw bad(`invalid exec-opt (${o}): must be formatted 'opt=value'`);
    const [k, v] = [o.slice(0, eq).trim().toLowerCase(), o.slice(eq + 1).trim()];
    if (k === 'native.cgroupdriver' && v !== 'cgroupfs' && v !== 'systemd') {
      throw bad(`native.cgroupdriver option ${v} not supported`);
    }
  }
}

/**
 * The key builder.gc: sizes that read as sizes, filters written KEY=VALUE (unused-for and
 * until: a Go duration). Throws InvalidArgument.
 */
export function validateBuilderGc(b: BuilderConfig | undefined): void {
  const gc = b?.gc;
  if (!gc) return;
  const bad = (msg: string) => invalidArgument(`invalid builder gc configuration: ${msg}`);
  const size = (s: string | undefined, what: string) => {
    if (s === undefined || s === '') return;
    try {
      fromHumanSize(s);
    } catch {
      throw bad(`${what}: invalid size '${s}'`);
    }
  };
  size(gc.defaultKeepStorage, 'defaultKeepStorage');
  for (const [i, p] of (gc.policy ?? []).entries()) {
    size(p.keepStorage, `policy[${i}].keepStorage`);
    for (const f of p.filter ?? []) {
      const eq = f.indexOf('=');
      if (eq <= 0) throw bad(`policy[${i}].filter: bad format of filter (expected name=value): ${f}`);
      const [k, v] = [f.slice(0, eq), f.slice(eq + 1)];
      if ((k === 'unused-for' || k === 'until') && !isGoDuration(v)) throw bad(`policy[${i}].filter: invalid duration '${v}'`);
    }
  }
}
