// Fills the API's SystemInfoPort from the config, the machine and the drivers. Machine facts are
// read once; the supervisor's version is asked at creation and cached (requests never wait long on it).
import { randomUUID } from 'node:crypto';
import { execaSync } from 'execa';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SystemInfoPort } from '../api/ports.ts';
import type { DaemonConfig } from '../config/load.ts';
import { machineFacts } from '../drivers/sys/info.ts';
import { parseGenericResources } from '../lib/generic-resources.ts';
import { ENGINE_VERSION } from './version.ts';
import { LOG_DRIVERS } from '../drivers/logging/index.ts';
import { selinuxActive } from '../drivers/oci/selinux.ts';

interface Deps {
  config: DaemonConfig;
  layers: { driverName: string; driverStatus(): Array<[string, string]> };
  supervisor: { version(): Promise<{ version: string; revision: string }> };
  runtimes: { names(): string[]; readonly default: string };
  /** The data root in use (--userns-remap's <data-root>/<uid>.<gid>); the configured one when absent. */
  dataRoot?: string;
  /** features.cdi: its spec dirs and the spec files it refused. */
  cdi?: { dirs(): string[]; errors(): Array<{ path: string; message: string }> };
}

export function engineId(dataRoot: string): string {
  const p = join(dataRoot, 'engine-id');
  try {
    const v = readFileSync(p, 'utf8').trim();
    if (v) return v;
  } catch {
    // first start
  }
  const id = randomUUID();
  writeFileSync(p, id);
  return id;
}

function runcVersion(): { version: string; commit: string } {
  try {
    // Synchronous (asked once, at creation), so no AbortSignal; the deadline bounds a hung runc.
    const out = execaSync('runc', ['--version'], { stdin: 'ignore', stderr: 'ignore', timeout: 5000 }).stdout;
    return { version: /runc version (\S+)/.exec(out)?.[1] ?? '', commit: /commit: (\S+)/.exec(out)?.[1] ?? '' };
  } catch {
    return { version: '', commit: '' };
  }
}

const UNKNOWN_VERSION = { version: '', revision: '' };
const SUPERVISOR_VERSION_WAIT_MS = 1000;

export function createSystemInfo(deps: Deps): SystemInfoPort {
  const facts = machineFacts();
  const id = engineId(deps.config.dataRoot);
  const runc = runcVersion();
  // The supervisor's version, asked once (again after a failure). Asked at once, so that /info and
  // /version do not wait on a supervisor that hangs later; while it is unknown they wait at most
  // SUPERVISOR_VERSION_WAIT_MS and answer with empty fields.
  let sup: Promise<{ version: string; revision: string }> | null = null;
  const learn = () => {
    sup ??= deps.supervisor.version().catch(() => {
      sup = null;
      return UNKNOWN_VERSION;
    });
    return sup;
  };
  void learn();
  const supVersion = () => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<typeof UNKNOWN_VERSION>((resolve) => {
      timer = setTimeout(() => resolve(UNKNOWN_VERSION), SUPERVISOR_VERSION_WAIT_MS);
    });
    return Promise.race([learn(), late]).finally(() => clearTimeout(timer));
  };
  const cfg = deps.config;
  const genericResources = parseGenericResources(cfg.nodeGenericResources ?? []);
  // Host facts that do not change while the daemon runs: read once.
  const noCgroups = rootlessNoCgroups(cfg);
  const security = securityOptions({
    seccompProfile: cfg.seccompProfile,
    selinux: selinuxActive(!!cfg.selinuxEnabled),
    userns: !!cfg.usernsRemap,
    apparmor: apparmorEnabled(),
    cgroupV2: cgroupV2(),
    cgroupnsMode: cfg.defaultCgroupnsMode,
    rootless: !!cfg.rootless,
  });
  return {
    async info() {
      const s = await supVersion();
      const runtimes: Record<string, unknown> = {};
      for (const n of deps.runtimes.names()) {
        runtimes[n] = n === 'stdrt' ? { path: 'runc', status: { 'org.opencontainers.runtime-spec.features': '' } } : { path: cfg.runtimes?.[n]?.path ?? n };
      }
      return {
        ID: id,
        Driver: deps.layers.driverName,
        // A driver with no status lines (vfs) says null, as the reference's does.
        DriverStatus: deps.layers.driverStatus().length ? deps.layers.driverStatus() : null,
        Plugins: {
          Volume: ['local'],
          Network: ['bridge', 'host', 'null'],
          Authorization: null,
          Log: LOG_DRIVERS,
        },
        MemoryLimit: true,
        SwapLimit: facts.swapLimit,
        KernelMemory: false,
        KernelMemoryTCP: false,
        CpuCfsPeriod: true,
        CpuCfsQuota: true,
        CPUShares: true,
        CPUSet: true,
        PidsLimit: true,
        IPv4Forwarding: readProc('/proc/sys/net/ipv4/ip_forward') === '1',
        BridgeNfIptables: readProc('/proc/sys/net/bridge/bridge-nf-call-iptables') === '1',
        BridgeNfIp6tables: readProc('/proc/sys/net/bridge/bridge-nf-call-ip6tables') === '1',
        Debug: !!cfg.debug,
        NFd: fdCount(),
        OomKillDisable: true,
        NGoroutines: 0,
        SystemTime: new Date().toISOString(),
        LoggingDriver: cfg.logDriver || 'json-file',
        // Rootless mode on cgroup v1 has no cgroups of its own: the reference says none.
        CgroupDriver: noCgroups ? 'none' : facts.cgroupDriver,
        CgroupVersion: facts.cgroupVersion,
        NEventsListener: 0,
        KernelVersion: facts.kernelVersion,
        OperatingSystem: facts.operatingSystem,
        OSVersion: facts.osVersion,
        OSType: 'linux',
        Architecture: facts.architecture,
        IndexServerAddress: 'https://index.docker.io/v1/',
        RegistryConfig: registryConfig(cfg),
        NCPU: facts.ncpu,
        MemTotal: facts.memTotal,
        GenericResources: genericResources.length ? genericResources : null,
        DockerRootDir: deps.dataRoot ?? cfg.dataRoot,
        HttpProxy: cfg.httpProxy || (process.env.HTTP_PROXY ?? process.env.http_proxy ?? ''),
        HttpsProxy: cfg.httpsProxy || (process.env.HTTPS_PROXY ?? process.env.https_proxy ?? ''),
        NoProxy: process.env.NO_PROXY ?? process.env.no_proxy ?? '',
        Name: facts.name,
        Labels: cfg.labels ?? [],
        ExperimentalBuild: !!cfg.experimental,
        ServerVersion: ENGINE_VERSION,
        Runtimes: runtimes,
        DefaultRuntime: deps.runtimes.default,
        Swarm: { NodeID: '', NodeAddr: '', LocalNodeState: 'inactive', ControlAvailable: false, Error: '', RemoteManagers: null },
        LiveRestoreEnabled: !!cfg.liveRestore,
        Isolation: '',
        InitBinary: 'engine-init',
        ContainerdCommit: { ID: s.revision, Expected: s.revision },
        RuncCommit: { ID: runc.commit, Expected: runc.commit },
        InitCommit: { ID: '', Expected: '' },
        SecurityOptions: security,
        CDISpecDirs: deps.cdi?.dirs() ?? [],
        // A spec file refused is said, never a failed start (the reference's words).
        Warnings: (deps.cdi?.errors() ?? []).map((e) => `CDI: Error associated with spec file ${e.path}: ${e.message}`),
      };
    },
    async components() {
      const s = await supVersion();
      return [
        { Name: 'supervisor', Version: s.version, Details: { GitCommit: s.revision } },
        { Name: 'stdrt', Version: runc.version, Details: { GitCommit: runc.commit } },
      ];
    },
  };
}

export interface SecurityFacts {
  /** --seccomp-profile as given: '' or 'builtin' for the built-in profile, 'unconfined', or a file's path. */
  seccompProfile?: string;
  /** SELinux labels containers: --selinux-enabled on a host that has it. */
  selinux: boolean;
  /** --userns-remap set. */
  userns: boolean;
  apparmor: boolean;
  cgroupV2: boolean;
  /** --default-cgroupns-mode; 'private' when unset. */
  cgroupnsMode?: string;
  rootless: boolean;
}

/**
 * `docker info`'s SecurityOptions, in the order of the reference's fillSecurityOptions: apparmor,
 * seccomp (with the daemon's profile), selinux, userns, rootless, cgroupns (private cgroup
 * namespaces by default, which cgroup v2 alone gives).
 */
export function securityOptions(f: SecurityFacts): string[] {
  const out: string[] = [];
  if (f.apparmor) out.push('name=apparmor');
  out.push(`name=seccomp,profile=${f.seccompProfile || 'builtin'}`);
  if (f.selinux) out.push('name=selinux');
  if (f.userns) out.push('name=userns');
  if (f.rootless) out.push('name=rootless');
  if (f.cgroupV2 && (f.cgroupnsMode || 'private') === 'private') out.push('name=cgroupns');
  return out;
}

/** AppArmor enabled in the kernel, as runc's apparmor.IsEnabled reads it. */
export function apparmorEnabled(file = '/sys/module/apparmor/parameters/enabled'): boolean {
  return readProc(file).startsWith('Y');
}

/**
 * Rootless mode on cgroup v1: the daemon has no cgroups to give containers (no cgroup path or
 * limits in the spec, a kill of the init only, limits discarded at create, CgroupDriver none).
 */
export function rootlessNoCgroups(c: Pick<DaemonConfig, 'rootless'>): boolean {
  return !!c.rootless && !cgroupV2();
}

/** A cgroup v2 (unified) host: its root has cgroup.controllers. */
export function cgroupV2(root = '/sys/fs/cgroup'): boolean {
  return existsSync(join(root, 'cgroup.controllers'));
}

function readProc(p: string): string {
  try {
    return readFileSync(p, 'utf8').trim();
  } catch {
    return '';
  }
}

function fdCount(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return 0;
  }
}

const CIDR = /^[0-9a-f.:]+\/\d{1,3}$/i;

/** `docker info`'s registry section as the reference builds it: CIDR entries apart from host names. */
function registryConfig(cfg: DaemonConfig): Record<string, unknown> {
  const insecure = cfg.insecureRegistries ?? [];
  const nondist = cfg.allowNondistributableArtifacts ?? [];
  const mirrors = cfg.registryMirrors ?? [];
  const indexConfigs: Record<string, unknown> = {
    'docker.io': { Name: 'docker.io', Mirrors: mirrors, Secure: true, Official: true },
  };
  for (const h of insecure.filter((e) => !CIDR.test(e))) indexConfigs[h] = { Name: h, Mirrors: [], Secure: false, Official: false };
  return {
    AllowNondistributableArtifactsCIDRs: nondist.filter((e) => CIDR.test(e)),
    AllowNondistributableArtifactsHostnames: nondist.filter((e) => !CIDR.test(e)),
    InsecureRegistryCIDRs: [...new Set(['127.0.0.0/8', ...insecure.filter((e) => CIDR.test(e))])],
    IndexConfigs: indexConfigs,
    Mirrors: mirrors,
  };
}
