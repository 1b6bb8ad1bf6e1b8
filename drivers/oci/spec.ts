// The OCI runtime spec of one container run, with the reference daemon's defaults.
// build() is on the hot path of every start: the fixed parts are literals, the seccomp profile
// is cached per capability set, and the only I/O is reading the rootfs's passwd/group (sync,
// small), creating missing bind sources and, where SELinux labels are given, relabelling `:z`/`:Z` binds.
import { cdiDevicesOf, type CdiCatalog, type DeviceRequest } from '../../lib/device-requests.ts';
import { applyEdits } from '../cdi/edits.ts';
import type { ContainerEdits } from '../cdi/spec.ts';
import { ociMappings, type IdMap } from '../../lib/idmap.ts';
import { posix } from 'node:path';
import type { Logger } from 'pino';
import { invalidArgument } from '../../lib/errors.ts';
import { goBool } from '../../lib/units.ts';
import { tweakCapabilities } from './caps.ts';
import { baseMounts, DEFAULT_PATH_ENV, DEFAULT_SHM_SIZE, MASKED_PATHS, OCI_VERSION, READONLY_PATHS } from './defaults.ts';
import { DEFAULT_HOST_ETC, writeEtcFiles, type EtcDefaults } from './etc-files.ts';
import type { HostEtcPaths } from './etc-files.ts';
import { sortByDepth, userMounts } from './mounts.ts';
import { deviceSetup, resources } from './resources.ts';
import { convertProfile, defaultSeccomp } from './seccomp.ts';
import { relabel, relabelJobs, specLabels, type SelinuxLabels } from './selinux.ts';
import { listField, numField, objList, strField, strMap } from './types.ts';
import type { EtcFiles, OciMount, OciSeccomp, OciUser, SpecContainerConfig, SpecHostConfig, SpecInput } from './types.ts';
import { resolveUserSync } from './user.ts';

export interface Ulimit {
  Name: string;
  Soft: number;
  Hard: number;
}

export interface SpecBuilderOptions {
  log: Logger;
  /** --userns-remap: containers (but --userns=host ones) run in a user namespace of this map. */
  idMap?: IdMap;
  /** features.cdi: the devices of DeviceRequests and CDI-named Devices, whose edits go into the spec. */
  cdi?: CdiCatalog & { resolve(names: string[]): ContainerEdits };
  /**
   * Rootless mode on cgroup v1: the daemon has no cgroups of its own, so the spec names no cgroup
   * path and no limits (the runtime's rootless manager then ignores what it may not do).
   */
  noCgroups?: boolean;
  defaultShmSize?: number;
  /**
   * Daemon-wide seccomp (--seccomp-profile): 'default' (or 'builtin') is the built-in profile,
   * 'unconfined' none, anything else a profile's JSON text in the reference's format.
   */
  seccomp?: string;
  cgroupDriver?: 'cgroupfs';
  /** --no-new-privileges for every container. */
  noNewPrivileges?: boolean;
  /** --default-ulimit values; a container's own Ulimits override them by name. */
  defaultUlimits?: Ulimit[];
  /** Host files copied or filtered into each container (tests point these elsewhere). */
  hostEtc?: HostEtcPaths;
  /** The daemon's --dns, --dns-search, --dns-opt: used where a container sets none of its own. */
  dns?: EtcDefaults['dns'];
  /** What `host-gateway` in --add-host stands for (--host-gateway-ip, else the default bridge's address). */
  hostGatewayIp?: () => string;
  /** --init: containers that do not say (HostConfig.Init null) run under the init. */
  init?: boolean;
  /** The init binary on the host (--init-path, else tini's static build); '' when there is none. */
  initPath?: string;
  /** Relabels a `:z` / `:Z` bind's source for SELinux (tests fake it); drivers/oci/selinux.ts relabel by default. */
  relabel?: (path: string, mountLabel: string, shared: boolean) => Promise<void>;
}

/**
 * A run's input with its container's SELinux labels, given only where SELinux is active (the
 * daemon's --selinux-enabled on a host that has it): without them the spec carries no labels.
 */
export type LabelledSpecInput = SpecInput & { selinux?: SelinuxLabels };

/** Where the init binary appears inside a container, as with the reference daemon. */
export const INIT_IN_CONTAINER = '/sbin/docker-init';

export interface SpecBuilder {
  build(input: LabelledSpecInput): Promise<object>;
  /** The cgroup limits of a HostConfig as an update of a running task takes them (no device rules). */
  updateResources(hostConfig: SpecHostConfig): object;
  /** `nameserver`: the embedded DNS of the container's user-defined network, instead of the host's servers. */
  writeEtcFiles(dir: string, config: SpecContainerConfig, hostConfig: SpecHostConfig, opts?: { nameserver?: string }): Promise<EtcFiles>;
}

const RLIMITS = new Set(['as', 'core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue', 'nice', 'nofile', 'nproc', 'rss', 'rtprio', 'rttime', 'sigpending', 'stack']);

interface SecurityOpts {
  noNewPrivileges?: boolean;
  /** '' = default profile, 'unconfined', or a profile's JSON text. */
  seccomp: string;
  /** The SELinux label options (`label=X` as X, a bare `disable`), as drivers/oci/selinux.ts initLabels takes them. */
  labels: string[];
}

export function parseSecurityOpts(list: readonly string[]): SecurityOpts {
  const res: SecurityOpts = { seccomp: '', labels: [] };
  for (const opt of list) {
    if (opt === 'no-new-privileges') {
      res.noNewPrivileges = true;
      continue;
    }
    if (opt === 'disable') {
      res.labels.push('disable');
      continue;
    }
    const eq = opt.indexOf('=');
    const colon = opt.indexOf(':');
    const at = eq >= 0 ? eq : colon;
    if (at < 0) throw invalidArgument(`invalid --security-opt 1: "${opt}"`);
    const key = opt.slice(0, at);
    const value = opt.slice(at + 1);
    switch (key) {
      case 'label':
        res.labels.push(value);
        break;
      case 'apparmor':
        break; // no AppArmor profiles on this engine
      case 'seccomp':
        res.seccomp = value === 'builtin' ? '' : value;
        break;
      case 'no-new-privileges':
        const b = goBool(value);
        if (b === undefined) throw invalidArgument(`invalid --security-opt 2: "${opt}"`);
        res.noNewPrivileges = b;
        break;
      case 'systempaths':
        break; // the client turns this into HostConfig.MaskedPaths/ReadonlyPaths
      default:
        throw invalidArgument(`invalid --security-opt 2: "${opt}"`);
    }
  }
  return res;
}

/**
 * The container's SELinux labels on the spec, as moby's WithSelinux: the process label (none for
 * an unconfined one: --privileged, label=disable) and the mount label runc gives its mounts.
 */
function putLabels(proc: Record<string, unknown>, linux: Record<string, unknown>, labels: SelinuxLabels, unconfined: boolean): void {
  const l = specLabels(labels, unconfined);
  if (l.processLabel) proc.selinuxLabel = l.processLabel;
  if (l.mountLabel) linux.mountLabel = l.mountLabel;
}

/** defaults, then each override list in turn: KEY=v replaces in place or appends; bare KEY removes. */
export function mergeEnv(base: string[], ...overrides: (readonly string[] | null | undefined)[]): string[] {
  const env = base.slice();
  const index = new Map<string, number>();
  const keyOf = (e: string) => {
    const i = e.indexOf('=');
    return i < 0 ? e : e.slice(0, i);
  };
  env.forEach((e, i) => index.set(keyOf(e), i));
  for (const list of overrides) {
    for (const e of list ?? []) {
      const k = keyOf(e);
      const at = index.get(k);
      if (!e.includes('=')) {
        if (at !== undefined) {
          env.splice(at, 1);
          index.clear();
          env.forEach((x, i) => index.set(keyOf(x), i));
        }
        continue;
      }
      if (at !== undefined) env[at] = e;
      else {
        index.set(k, env.length);
        env.push(e);
      }
    }
  }
  return env;
}

function rlimits(h: Record<string, unknown>, defaults: Ulimit[] | undefined) {
  const byName = new Map<string, { Soft: number; Hard: number }>();
  for (const u of defaults ?? []) byName.set(u.Name, u);
  for (const u of objList(h, 'Ulimits')) byName.set(strField(u, 'Name'), { Soft: numField(u, 'Soft'), Hard: numField(u, 'Hard') });
  const out: { type: string; hard: number; soft: number }[] = [];
  for (const [name, u] of byName) {
    if (!RLIMITS.has(name)) throw invalidArgument(`invalid ulimit type: ${name}`);
    if (u.Soft > u.Hard && u.Hard !== -1) throw invalidArgument(`ulimit soft limit must be less than or equal to hard limit: ${u.Soft} > ${u.Hard}`);
    out.push({ type: `RLIMIT_${name.toUpperCase()}`, hard: u.Hard, soft: u.Soft });
  }
  return out;
}

export function createSpecBuilder(opts: SpecBuilderOptions): SpecBuilder {
  const defaultShm = opts.defaultShmSize && opts.defaultShmSize > 0 ? opts.defaultShmSize : DEFAULT_SHM_SIZE;
  const hostEtc = opts.hostEtc ?? DEFAULT_HOST_ETC;

  function build(input: LabelledSpecInput): object {
    const { config: c, hostConfig: h } = input;
    const privileged = h.Privileged === true;
    const networkMode = h.NetworkMode || 'bridge';
    const hostNet = networkMode === 'host';
    const ipcMode = strField(h, 'IpcMode');
    const utsHost = strField(h, 'UTSMode') === 'host';
    const sec = parseSecurityOpts(listField(h, 'SecurityOpt'));

    // process
    const env = mergeEnv([DEFAULT_PATH_ENV, `HOSTNAME=${c.Hostname}`, ...(c.Tty ? ['TERM=xterm'] : [])], input.imageEnv, c.Env);
    const u = resolveUserSync(input.rootfs, c.User ?? '', listField(h, 'GroupAdd'));
    const user: OciUser = { uid: u.uid, gid: u.gid };
    if (u.additionalGids.length) user.additionalGids = u.additionalGids;
    const caps = tweakCapabilities(h.CapAdd, h.CapDrop, privileged);
    // Like execve, a non-root user starts with no effective/permitted capabilities.
    const capabilities = u.uid === 0 ? { bounding: caps, effective: caps, permitted: caps } : { bounding: caps };
    const init = typeof h.Init === 'boolean' ? h.Init : !!opts.init;
    if (init && !opts.initPath) throw invalidArgument('--init: no init binary found on the host (install tini or set --init-path)');
    const proc: Record<string, unknown> = {
      terminal: !!c.Tty,
      user,
      args: init ? [INIT_IN_CONTAINER, '--', input.path, ...input.args] : [input.path, ...input.args],
      env,
      cwd: c.WorkingDir || '/',
      capabilities,
      oomScoreAdj: numField(h, 'OomScoreAdj'),
    };
    if (c.Tty && Array.isArray(h.ConsoleSize) && h.ConsoleSize[0] > 0 && h.ConsoleSize[1] > 0) {
      proc.consoleSize = { height: h.ConsoleSize[0], width: h.ConsoleSize[1] };
    }
    if (sec.noNewPrivileges ?? opts.noNewPrivileges) proc.noNewPrivileges = true;
    const rl = rlimits(h, opts.defaultUlimits);
    if (rl.length) proc.rlimits = rl;

    // mounts
    const user_ = userMounts(h, { volumeMounts: input.volumeMounts });
    const userDest = new Set(user_.mounts.map((m) => m.destination));
    const defaults = baseMounts(privileged);
    if (ipcMode === 'host') defaults.push({ destination: '/dev/shm', type: 'bind', source: '/dev/shm', options: ['rbind', 'rprivate'] });
    else if (ipcMode !== 'none') {
      const shm = numField(h, 'ShmSize') > 0 ? numField(h, 'ShmSize') : defaultShm;
      defaults.push({ destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', `size=${shm}`] });
    }
    const mountsDev = userDest.has('/dev');
    const kept = defaults.filter((m) => !userDest.has(m.destination) && !(mountsDev && m.destination.startsWith('/dev/')));
    const etcOpts = h.ReadonlyRootfs ? ['rbind', 'ro', 'rprivate'] : ['rbind', 'rprivate'];
    const etc: OciMount[] = [];
    for (const [dest, src] of [['/etc/resolv.conf', input.files.resolvConf], ['/etc/hostname', input.files.hostname], ['/etc/hosts', input.files.hosts]] as const) {
      if (src && !userDest.has(dest)) etc.push({ destination: dest, type: 'bind', source: src, options: etcOpts.slice() });
    }
    if (init && !userDest.has(INIT_IN_CONTAINER)) etc.push({ destination: INIT_IN_CONTAINER, type: 'bind', source: opts.initPath!, options: ['bind', 'ro'] });
    const mounts = [...kept, ...sortByDepth([...etc, ...user_.mounts])];
    if (h.ReadonlyRootfs) {
      for (const m of kept) {
        if (['/proc', '/dev/pts', '/dev/shm', '/dev/mqueue', '/dev'].includes(m.destination)) continue;
        if (!m.options.includes('ro')) m.options.push('ro');
      }
    }

    // linux
    const namespaces: { type: string; path?: string }[] = [{ type: 'mount' }];
    if (!hostNet) namespaces.push(input.netnsPath ? { type: 'network', path: input.netnsPath } : { type: 'network' });
    if (!utsHost) namespaces.push({ type: 'uts' });
    if (strField(h, 'PidMode') !== 'host') namespaces.push({ type: 'pid' });
    if (ipcMode !== 'host') namespaces.push({ type: 'ipc' });
    if (strField(h, 'CgroupnsMode') === 'private') namespaces.push({ type: 'cgroup' });
    const userns = opts.idMap && strField(h, 'UsernsMode') !== 'host' ? opts.idMap : undefined;
    if (userns) namespaces.push({ type: 'user' });

    const sysctl = strMap(h, 'Sysctls');
    if (hostNet) {
      for (const k of Object.keys(sysctl)) {
        if (k.startsWith('net.')) throw invalidArgument(`sysctl "${k}" not allowed in host network namespace`);
      }
    }

    const dev = deviceSetup(h, privileged);
    const cgroupParent = strField(h, 'CgroupParent');
    const linux: Record<string, unknown> = opts.noCgroups
      ? { namespaces, devices: dev.devices }
      : { resources: resources(h, dev.rules), cgroupsPath: cgroupParent ? posix.join(cgroupParent, input.id) : input.cgroupsPath, namespaces, devices: dev.devices };
    if (userns) {
      linux.uidMappings = ociMappings(userns.uids);
      linux.gidMappings = ociMappings(userns.gids);
    }
    if (Object.keys(sysctl).length) linux.sysctl = sysctl;
    if (user_.rootfsPropagation) linux.rootfsPropagation = user_.rootfsPropagation;
    if (!privileged) {
      linux.maskedPaths = Array.isArray(h.MaskedPaths) ? listField(h, 'MaskedPaths') : MASKED_PATHS.slice();
      linux.readonlyPaths = Array.isArray(h.ReadonlyPaths) ? listField(h, 'ReadonlyPaths') : READONLY_PATHS.slice();
      let seccomp: OciSeccomp | undefined;
      if (sec.seccomp === 'unconfined') seccomp = undefined;
      else if (sec.seccomp !== '') seccomp = convertProfile(sec.seccomp, caps);
      else if (opts.seccomp && opts.seccomp !== 'default' && opts.seccomp !== 'builtin' && opts.seccomp !== 'unconfined') seccomp = convertProfile(opts.seccomp, caps);
      else if (opts.seccomp !== 'unconfined') seccomp = defaultSeccomp(caps);
      if (seccomp) linux.seccomp = seccomp;
    }

    const spec: Record<string, unknown> = {
      ociVersion: OCI_VERSION,
      process: proc,
      root: { path: input.rootfs, readonly: !!h.ReadonlyRootfs },
    };
    if (!hostNet && !utsHost && c.Hostname) spec.hostname = c.Hostname;
    if (!hostNet && !utsHost && c.Domainname) spec.domainname = c.Domainname;
    spec.mounts = mounts;
    spec.linux = linux;
    if (input.selinux) putLabels(proc, linux, input.selinux, privileged || sec.labels.includes('disable'));
    // CDI devices last: their edits apply to the finished spec, as the reference's injection does.
    const cdiNames = cdiDevicesOf(objList(h, 'DeviceRequests') as DeviceRequest[], objList(h, 'Devices'), opts.cdi);
    if (cdiNames.length) applyEdits(spec, opts.cdi!.resolve(cdiNames));
    return spec;
  }

  const relabelSource = opts.relabel ?? relabel;

  /** The `:z` / `:Z` binds' sources labelled for the container, before it runs (nothing without labels). */
  async function relabelBinds(input: LabelledSpecInput): Promise<void> {
    const mountLabel = input.selinux?.mountLabel;
    if (!mountLabel) return;
    for (const job of relabelJobs(listField(input.hostConfig, 'Binds'), input.volumeMounts)) await relabelSource(job.source, mountLabel, job.shared);
  }

  return {
    build: async (input) => {
      const spec = build(input);
      await relabelBinds(input);
      return spec;
    },
    updateResources: (h) => {
      const { devices: _devices, ...rest } = resources(h as Record<string, unknown>, []);
      return rest;
    },
    writeEtcFiles: (dir, config, hostConfig, o) => writeEtcFiles(dir, config, hostConfig, hostEtc, { ...o, dns: opts.dns, hostGatewayIp: opts.hostGatewayIp?.() }),
  };
}
