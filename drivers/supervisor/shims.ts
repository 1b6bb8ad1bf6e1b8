// Shims the supervisor lost track of. When a task create is cut off (the daemon killed in the
// middle of it), the supervisor drops its connection to the shim and forgets the task, but the
// shim process, and the `runc init` it started, keep running. They are found by their command
// line: `containerd-shim-runc-v2 -namespace <ns> -id <id> -address <our private socket>`, which
// only shims of this daemon's supervisor carry.
import { readdir, readFile, readlink, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { MNT_DETACH, umount } from '../sys/syscalls.ts';

export interface ShimProcess {
  pid: number;
  /** The container id it was started for. */
  id: string;
  /** When it started, in clock ticks since boot (/proc/<pid>/stat field 22). */
  startTicks: number;
}

/** The start time of a process in clock ticks since boot; -1 when it is gone. */
export async function startTicks(pid: number | string): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (in parentheses, which may hold spaces): state is field 3, starttime 22.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return -1;
  }
}

/**
 * A shim's argv, or null for any other process. `comm` first: reading another process's cmdline
 * takes its memory-map lock and can stall a thread-pool thread behind a process in exec or under
 * memory pressure; `comm` ("containerd-shim", truncated to 15 bytes) does not.
 */
async function shimArgv(pid: string): Promise<string[] | null> {
  try {
    if (!(await readFile(`/proc/${pid}/comm`, 'utf8')).startsWith('containerd-shim')) return null;
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
  } catch {
    return null; // gone meanwhile
  }
}

/** The shims of the supervisor listening on `address`, in namespace `ns`. */
export async function listShims(address: string, ns: string): Promise<ShimProcess[]> {
  const pids = (await readdir('/proc')).filter((p) => /^\d+$/.test(p));
  const out: ShimProcess[] = [];
  await Promise.all(
    pids.map(async (p) => {
      const argv = await shimArgv(p);
      if (!argv || !argv[0]?.includes('containerd-shim')) return;
      const arg = (name: string) => {
        const i = argv.indexOf(name);
        return i >= 0 ? argv[i + 1] : undefined;
      };
      const id = arg('-id');
      if (id && arg('-address') === address && arg('-namespace') === ns) out.push({ pid: Number(p), id, startTicks: await startTicks(p) });
    }),
  );
  return out;
}

/** SIGKILL the processes the shim started (a half-created container's init), then the shim. */
export async function killShim(pid: number): Promise<void> {
  const children: number[] = [];
  for (const p of (await readdir('/proc')).filter((x) => /^\d+$/.test(x))) {
    try {
      const stat = await readFile(`/proc/${p}/stat`, 'utf8');
      // Field 4 (ppid) follows the command in parentheses, which may itself hold spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) children.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  for (const c of children) signal(c);
  signal(pid);
}

function signal(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * The unix socket paths process `pid` listens on (its fds' socket inodes, named in /proc/net/unix):
 * a shim's is its ttrpc address, the one every task it serves records.
 */
export async function listeningSockets(pid: number): Promise<string[]> {
  const inodes = new Set<string>();
  try {
    for (const fd of await readdir(`/proc/${pid}/fd`)) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m) inodes.add(m[1]!);
    }
  } catch {
    return [];
  }
  const table = await readFile('/proc/net/unix', 'utf8').catch(() => '');
  const out: string[] = [];
  for (const line of table.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    // Num RefCount Protocol Flags Type St Inode Path; St 01 is listening (unconnected)
    if (f.length >= 8 && inodes.has(f[6]!) && f[7]!.startsWith('/')) out.push(f[7]!);
  }
  return out;
}

/**
 * The shim addresses the supervisor's tasks record (`<state>/io.containerd.runtime.v2.task/<ns>/<id>/address`),
 * by task id: tasks of one group (the io.containerd.runc.v2.group annotation) share one.
 */
export async function taskShimAddresses(stateDir: string, ns: string): Promise<Map<string, string>> {
  const dir = join(stateDir, 'io.containerd.runtime.v2.task', ns);
  const out = new Map<string, string>();
  for (const id of await readdir(dir).catch(() => [] as string[])) {
    const a = await readFile(join(dir, id, 'address'), 'utf8').catch(() => '');
    if (a) out.set(id, a.trim().replace(/^unix:\/\//, ''));
  }
  return out;
}

/**
 * Removes what a task create cut off by a supervisor crash can leave of container `id` with no task
 * and no shim: its bundle directory (`<state>/io.containerd.runtime.v2.task/<ns>/<id>`), which makes
 * the next create fail with "failed to start shim: mkdir …: file exists". A rootfs mounted in it
 * (never by this daemon: its specs name their root by path) is let go first, never walked into.
 */
export async function removeStaleBundle(stateDir: string, ns: string, id: string): Promise<boolean> {
  const bundle = join(stateDir, 'io.containerd.runtime.v2.task', ns, id);
  const st = await stat(bundle).catch(() => null);
  if (!st) return false;
  const rootfs = join(bundle, 'rootfs');
  const r = await stat(rootfs).catch(() => null);
  if (r && r.dev !== st.dev) await umount(rootfs, MNT_DETACH).catch(() => {});
  const again = await stat(rootfs).catch(() => null);
  if (again && again.dev !== st.dev) return false;
  await rm(bundle, { recursive: true, force: true });
  return true;
}
