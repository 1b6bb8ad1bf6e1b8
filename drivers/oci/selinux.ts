// SELinux labels of containers, as the reference daemon chooses them with go-selinux: host
// detection, the MCS category pairs that keep containers apart, the process and mount labels a
// container's `--security-opt label=...` asks for, and the relabelling of `:z` / `:Z` binds.
// Everything here is inert where SELinux is off (the daemon's --selinux-enabled unset, or a host
// without selinuxfs): the caller asks selinuxActive() first and passes no labels otherwise.
import { existsSync, readFileSync } from 'node:fs';
import { randomInt } from 'node:crypto';
import { join } from 'node:path';
import { execa } from 'execa';
import { invalidArgument } from '../../lib/errors.ts';
import { parseBind } from '../../lib/mount-spec.ts';
import type { ResolvedMount } from './types.ts';

/** Where the kernel's selinuxfs is mounted on a host that runs SELinux. */
export const SELINUX_FS = '/sys/fs/selinux';

/** dockerd's start-time warning when --selinux-enabled is set on a host without SELinux. */
export const SELINUX_UNAVAILABLE_WARNING = 'Docker could not enable SELinux on the host system';

/** container-selinux's lxc_contexts defaults (process, file), which go-selinux reads on such hosts. */
export const CONTAINER_PROCESS_LABEL = 'system_u:system_r:container_t:s0';
export const CONTAINER_FILE_LABEL = 'system_u:object_r:container_file_t:s0';

/** MCS categories c0..c1023, go-selinux's CategoryRange. */
export const CATEGORY_RANGE = 1024;

/**
 * go-selinux's mount label for containers run without labels (label=disable, --privileged): the
 * file label at the two top categories, reserved once so that no container is given that pair.
 */
export const PRIV_MOUNT_LABEL = `system_u:object_r:container_file_t:s0:c${CATEGORY_RANGE - 2},c${CATEGORY_RANGE - 1}`;

/**
 * Whether the host runs SELinux, as go-selinux's GetEnabled: selinuxfs mounted (its `enforce`
 * file there, in enforcing or permissive mode) and the daemon not left in the kernel's context.
 */
export function selinuxEnabled(fsRoot = SELINUX_FS, currentLabel = readCurrentLabel): boolean {
  return existsSync(join(fsRoot, 'enforce')) && currentLabel() !== 'kernel';
}

function readCurrentLabel(): string {
  try {
    return readFileSync('/proc/self/attr/current', 'utf8').replace(/\0/g, '').trim();
  } catch {
    return '';
  }
}

/** Whether containers get labels: --selinux-enabled and a host that has SELinux (dockerd disables it otherwise). */
export function selinuxActive(daemonFlag: boolean, host: () => boolean = selinuxEnabled): boolean {
  return daemonFlag && host();
}

/** The warning the daemon logs at start, if any. */
export function selinuxStartWarning(daemonFlag: boolean, host: () => boolean = selinuxEnabled): string | undefined {
  return daemonFlag && !host() ? SELINUX_UNAVAILABLE_WARNING : undefined;
}

// ---- contexts ----------------------------------------------------------------------------

export interface SelinuxContext {
  user: string;
  role: string;
  type: string;
  /** MLS/MCS level, itself colon-separated ("s0:c1,c2"); '' when the context has none. */
  level: string;
}

/** "user:role:type[:level]" split as go-selinux's NewContext (the level keeps its own colons). */
export function parseContext(label: string): SelinuxContext {
  const parts = label.split(':');
  if (parts.length < 3) throw invalidArgument(`invalid SELinux context: ${JSON.stringify(label)}`);
  return { user: parts[0]!, role: parts[1]!, type: parts[2]!, level: parts.slice(3).join(':') };
}

export function formatContext(c: SelinuxContext): string {
  return `${c.user}:${c.role}:${c.type}${c.level ? `:${c.level}` : ''}`;
}

// ---- MCS categories ----------------------------------------------------------------------

/**
 * The MCS levels in use on this host: each container gets a pair of categories no other holds
 * (go-selinux's uniqMcs), kept while the container exists and released when it is removed. A
 * restarted daemon reserves its containers' levels again before allocating new ones.
 */
export class McsAllocator {
  private readonly used = new Set<string>();
  private readonly random: (max: number) => number;
  private readonly range: number;

  constructor(random: (max: number) => number = randomInt, range = CATEGORY_RANGE) {
    this.random = random;
    this.range = range;
    this.reserveLabel(PRIV_MOUNT_LABEL);
  }

  /** A fresh "s0:cA,cB" (A < B), reserved. */
  allocate(): string {
    // Random draws, as go-selinux: a free pair is found at once while few are taken.
    for (let tries = 0; tries < 1_000_000; tries++) {
      const a = this.random(this.range);
      const b = this.random(this.range);
      if (a === b) continue;
      const level = `s0:c${Math.min(a, b)},c${Math.max(a, b)}`;
      if (this.reserve(level)) return level;
    }
    throw new Error('no free SELinux MCS category pair');
  }

  /** Takes `level`; false when it is already held. */
  reserve(level: string): boolean {
    if (!level || this.used.has(level)) return false;
    this.used.add(level);
    return true;
  }

  release(level: string): void {
    this.used.delete(level);
  }

  /** reserve()/release() of a whole label's level ('' is nothing), as go-selinux's Reserve/ReleaseLabel. */
  reserveLabel(label: string): void {
    if (label) this.reserve(parseContext(label).level);
  }

  releaseLabel(label: string): void {
    if (label) this.release(parseContext(label).level);
  }

  has(level: string): boolean {
    return this.used.has(level);
  }
}

// ---- label choice ------------------------------------------------------------------------

export interface SelinuxLabels {
  /** The container process's label; '' runs it unconfined by the daemon (label=disable, --privileged). */
  processLabel: string;
  /** The label of the container's mounts (tmpfs contexts, `:Z` binds). */
  mountLabel: string;
}

const LABEL_KEYS = new Set(['user', 'role', 'type', 'level', 'filetype']);

/**
 * The label options of a SecurityOpt list as the reference's parseSecurityOpt collects them:
 * `label=X` (or the deprecated `label:X`) gives X, a bare `disable` gives itself.
 */
export function labelOptions(securityOpt: readonly string[]): string[] {
  const out: string[] = [];
  for (const opt of securityOpt) {
    if (opt === 'disable') out.push('disable');
    else if (opt.startsWith('label=') || opt.startsWith('label:')) out.push(opt.slice('label='.length));
  }
  return out;
}

/** One label option applied to the process and mount contexts (go-selinux InitLabels' rules). */
function applyLabelOption(opt: string, pcon: SelinuxContext, mcon: SelinuxContext): void {
  const colon = opt.indexOf(':');
  if (colon < 0) throw invalidArgument(`Bad label option ${JSON.stringify(opt)}, valid options 'disable' or \n'user, role, level, type, filetype' followed by ':' and a value`);
  const key = opt.slice(0, colon);
  const value = opt.slice(colon + 1);
  if (!LABEL_KEYS.has(key)) throw invalidArgument(`Bad label option ${JSON.stringify(key)}, valid options 'disable, user, role, level, type, filetype'`);
  if (key === 'filetype') {
    mcon.type = value;
    return;
  }
  pcon[key as 'user' | 'role' | 'type' | 'level'] = value;
  // The mount label follows the process's identity and level, never its type or role.
  if (key === 'level' || key === 'user') mcon[key] = value;
}

/**
 * A new container's labels from its label options (go-selinux InitLabels): a fresh MCS pair on
 * the default container labels, changed field by field by `user:`, `role:`, `type:`, `level:`,
 * `filetype:`; `disable` gives no process label and the shared privileged mount label. Call only
 * where SELinux is active; the allocator then holds the process label's level until
 * releaseLabels().
 */
export function initLabels(options: readonly string[], mcs: McsAllocator): SelinuxLabels {
  const level = mcs.allocate();
  const pcon = { ...parseContext(CONTAINER_PROCESS_LABEL), level };
  const mcon = { ...parseContext(CONTAINER_FILE_LABEL), level };
  try {
    for (const opt of options) {
      if (opt === 'disable') {
        mcs.release(level);
        return { processLabel: '', mountLabel: PRIV_MOUNT_LABEL };
      }
      applyLabelOption(opt, pcon, mcon);
    }
  } catch (err) {
    mcs.release(level);
    throw err;
  }
  // A level of the user's own replaces the allocated pair (reserved so that no other container gets it).
  if (pcon.level !== level) {
    mcs.release(level);
    mcs.reserve(pcon.level);
  }
  return { processLabel: formatContext(pcon), mountLabel: formatContext(mcon) };
}

/** At container removal: its level free again (the privileged mount label's stays held). */
export function releaseLabels(labels: SelinuxLabels, mcs: McsAllocator): void {
  mcs.releaseLabel(labels.processLabel);
}

/** The labels a spec carries: none for a --privileged container's process (moby's GetProcessLabel). */
export function specLabels(labels: SelinuxLabels, privileged: boolean): SelinuxLabels {
  return privileged ? { processLabel: '', mountLabel: labels.mountLabel } : labels;
}

export interface LabelHostConfig {
  SecurityOpt?: readonly string[] | null;
  Privileged?: boolean;
  PidMode?: string;
  IpcMode?: string;
}

/** "label=X" for each option, the form they take in HostConfig.SecurityOpt. */
const asSecurityOpt = (opts: string[]) => opts.map((o) => `label=${o}`);

/** go-selinux DupSecOpt: a running label as options that recreate it (none for an empty or partial label). */
export function dupSecOpt(label: string): string[] {
  if (!label) return [];
  const c = parseContext(label);
  if (!c.user || !c.role || !c.type) return [];
  return [`user:${c.user}`, `role:${c.role}`, `type:${c.type}`, ...(c.level ? [`level:${c.level}`] : [])];
}

/**
 * The label options the reference adds to HostConfig.SecurityOpt at create (daemon/create.go
 * generateSecurityOpt), whether or not SELinux is on: none when the caller gave a `label`
 * option; `label=disable` for --privileged, --pid=host or --ipc=host; else the label of the
 * container whose IPC or PID namespace it joins (both must agree). `processLabelOf` finds that
 * container's process label.
 */
export function generatedLabelOpts(h: LabelHostConfig, processLabelOf: (ref: string) => string): string[] {
  const opts = h.SecurityOpt ?? [];
  if (opts.some((o) => o.split('=')[0] === 'label')) return [];
  const ipc = h.IpcMode ?? '';
  const pid = h.PidMode ?? '';
  if (h.Privileged || ipc === 'host' || pid === 'host') return ['label=disable'];
  const ipcLabel = ipc.startsWith('container:') ? dupSecOpt(processLabelOf(ipc.slice('container:'.length))) : undefined;
  const pidLabel = pid.startsWith('container:') ? dupSecOpt(processLabelOf(pid.slice('container:'.length))) : undefined;
  if (ipcLabel && pidLabel) {
    // Joining both: only two labels that agree are kept (either one empty: none).
    if (!ipcLabel.length || !pidLabel.length) return [];
    if (ipcLabel.join('\n') !== pidLabel.join('\n')) throw invalidArgument("--ipc and --pid containers SELinux labels aren't the same");
  }
  return asSecurityOpt(pidLabel ?? ipcLabel ?? []);
}

// ---- relabelling binds -------------------------------------------------------------------

/** Host paths go-selinux refuses to relabel: relabelling them would break the host. */
const NEVER_RELABEL = new Set([
  '/', '/bin', '/boot', '/dev', '/etc', '/etc/passwd', '/etc/pki', '/etc/shadow', '/home', '/lib', '/lib64', '/media', '/opt',
  '/proc', '/root', '/run', '/sbin', '/srv', '/sys', '/tmp', '/usr', '/var', '/var/lib', '/var/log',
]);

/** Sets `label` on `path` and everything under it. */
export type SetLabel = (path: string, label: string) => Promise<void>;

export interface RelabelJob {
  source: string;
  /** `:z`: shared with other containers; `:Z`: this container's own. */
  shared: boolean;
}

/** The binds of a HostConfig that ask for relabelling, with their host sources (volumes' from `volumeMounts`). */
export function relabelJobs(binds: readonly string[], volumeMounts: readonly ResolvedMount[] = []): RelabelJob[] {
  const jobs: RelabelJob[] = [];
  for (const raw of binds) {
    const b = parseBind(raw);
    const modes = b.mode ? b.mode.split(',') : [];
    if (!modes.includes('z') && !modes.includes('Z')) continue;
    const source = b.volume ? volumeMounts.find((m) => m.destination === b.destination)?.source : b.source;
    if (source) jobs.push({ source, shared: modes.includes('z') });
  }
  return jobs;
}

/** The label a relabelled bind gets: the mount label, at level s0 (no categories) when shared. */
export function bindLabel(mountLabel: string, shared: boolean): string {
  return shared ? formatContext({ ...parseContext(mountLabel), level: 's0' }) : mountLabel;
}

/**
 * go-selinux's Relabel: `path` (and its tree) labelled for the container; refused for system
 * directories and the daemon user's home. A file system without labels (ENOTSUP) is left as it is.
 */
export async function relabel(path: string, mountLabel: string, shared: boolean, setLabel: SetLabel = chconLabel): Promise<void> {
  if (!mountLabel) return;
  const p = path !== '/' ? path.replace(/\/+$/, '') : path;
  if (NEVER_RELABEL.has(p) || (process.env.HOME && p === process.env.HOME)) throw invalidArgument(`SELinux relabeling of ${p} is not allowed`);
  try {
    await setLabel(p, bindLabel(mountLabel, shared));
  } catch (err) {
    if (/not supported/i.test(err instanceof Error ? err.message : String(err))) return;
    throw new Error(`error setting label on mount source '${p}': ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * Node has no setxattr: chcon (coreutils) sets security.selinux, recursively and on symlinks
 * themselves (-h), as go-selinux's Chcon walks the tree with lsetxattr.
 */
export const chconLabel: SetLabel = async (path, label) => {
  await execa('chcon', ['-R', '-h', '--', label, path], { stdin: 'ignore' });
};
