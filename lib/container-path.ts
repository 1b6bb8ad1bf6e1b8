// Where a path of a container's file tree lives on the host, as the container's process sees it:
// the mount table walked longest destination first (a volume's data directory, a bind's host
// path, the daemon's /etc/hostname, /etc/hosts and /etc/resolv.conf), else the root filesystem.
// Pure: the walk that follows symlinks inside the container is drivers/sys/rootfs-files.ts.
import { posix } from 'node:path';
import { cleanPath, parseBind } from './mount-spec.ts';
import type { IdMap } from './idmap.ts';

export interface PathMount {
  /** Absolute and clean, inside the container. */
  destination: string;
  /** Host path of what is mounted there: a directory or a single file. */
  source: string;
  readOnly: boolean;
  /** volume/bind: the container's mount points (what a read-only PUT names); etc: a file the daemon writes. */
  kind: 'volume' | 'bind' | 'etc';
}

export interface ContainerTree {
  /** Host path of the mounted root filesystem. */
  rootfs: string;
  /** Any order; of two with one destination the later one is on top (mounted last). */
  mounts: readonly PathMount[];
  readonlyRootfs: boolean;
  /** --userns-remap: files are owned by the host ids of the container's ids. */
  idMap?: IdMap;
}

export interface MappedPath {
  host: string;
  /** What a write there meets: the mount's flag, or the rootfs's. */
  readOnly: boolean;
  /** The mount the path is in, null for the rootfs. */
  mount: PathMount | null;
}

/** Absolute and clean: `a/../b/` → `/b`. */
export function containerPath(path: string): string {
  return cleanPath(posix.join('/', path));
}

function within(path: string, dest: string): boolean {
  return path === dest || path.startsWith(dest === '/' ? '/' : `${dest}/`);
}

/** The mount `path` (clean, absolute) is in: the longest destination that is it or a parent of it. */
export function mountOf(mounts: readonly PathMount[], path: string): PathMount | null {
  let best: PathMount | null = null;
  for (const m of mounts) {
    if (within(path, m.destination) && (!best || m.destination.length >= best.destination.length)) best = m;
  }
  return best;
}

/**
 * Host path of `path`, a container path whose components are no symlinks (the caller resolves
 * them), with whether it may be written.
 */
export function mapContainerPath(tree: ContainerTree, path: string): MappedPath {
  const p = containerPath(path);
  const m = mountOf(tree.mounts, p);
  if (!m) return { host: p === '/' ? posix.join(tree.rootfs) : posix.join(tree.rootfs, p), readOnly: tree.readonlyRootfs, mount: null };
  const rel = p.slice(m.destination.length);
  return { host: rel ? posix.join(m.source, rel) : m.source, readOnly: m.readOnly, mount: m };
}

/** The mounts strictly below `path` (clean, absolute): what an archive of the directory must descend into. */
export function mountsBelow(mounts: readonly PathMount[], path: string): PathMount[] {
  return mounts.filter((m) => m.destination !== path && within(m.destination, path));
}

/** The refusal of a write at a mapped path, in the reference's words; null when it may be written. */
export function readOnlyReason(mapped: MappedPath): string | null {
  if (!mapped.readOnly) return null;
  return mapped.mount && mapped.mount.kind !== 'etc' ? 'mounted volume is marked read-only' : 'container rootfs is marked read-only';
}

export interface MountTableInput {
  hostConfig: { Binds?: unknown; Mounts?: unknown; ReadonlyRootfs?: unknown };
  /** The container's volume mount points (named, anonymous, VolumesFrom's) with their host sources. */
  volumes: ReadonlyArray<{ type: 'volume' | 'bind'; source: string; destination: string; readOnly: boolean }>;
  /** The daemon-written files ('' or absent: not mounted). */
  etc: { hostname?: string; hosts?: string; resolvConf?: string };
}

/**
 * The mounts a container's process has over its root filesystem (tmpfs excepted: nothing of them
 * is on the host), in the order the runtime mounts them: parents before children.
 */
export function mountTable(input: MountTableInput): PathMount[] {
  const h = input.hostConfig;
  const user: PathMount[] = [];
  for (const raw of Array.isArray(h.Binds) ? h.Binds : []) {
    if (typeof raw !== 'string') continue;
    let b;
    try {
      b = parseBind(raw);
    } catch {
      continue;
    }
    if (!b.volume) user.push({ destination: b.destination, source: b.source, readOnly: b.readOnly, kind: 'bind' });
  }
  for (const m of Array.isArray(h.Mounts) ? (h.Mounts as unknown[]) : []) {
    if (!m || typeof m !== 'object') continue;
    const o = m as Record<string, unknown>;
    if (o.Type !== 'bind' || typeof o.Target !== 'string' || typeof o.Source !== 'string' || !o.Target.startsWith('/')) continue;
    user.push({ destination: cleanPath(o.Target), source: cleanPath(o.Source), readOnly: o.ReadOnly === true, kind: 'bind' });
  }
  for (const v of input.volumes) user.push({ destination: cleanPath(v.destination), source: v.source, readOnly: v.readOnly, kind: v.type });
  const taken = new Set(user.map((m) => m.destination));
  const etc: PathMount[] = [];
  for (const [destination, source] of [['/etc/resolv.conf', input.etc.resolvConf], ['/etc/hostname', input.etc.hostname], ['/etc/hosts', input.etc.hosts]] as const) {
    if (source && !taken.has(destination)) etc.push({ destination, source, readOnly: h.ReadonlyRootfs === true, kind: 'etc' });
  }
  const depth = (p: string) => p.split('/').length;
  return [...etc, ...user]
    .map((m, i) => ({ m, i }))
    .sort((a, b) => depth(a.m.destination) - depth(b.m.destination) || a.i - b.i)
    .map((x) => x.m);
}
