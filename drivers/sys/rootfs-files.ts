// Files inside a container's file tree (docker cp, export): every path is resolved component by
// component inside the container's view (its root filesystem with the mounts over it, see
// lib/container-path.ts), symlinks included, so nothing outside can be read or written through
// `..` or a link. A bare root path is a tree without mounts.
import { containerOwner, toHost } from '../../lib/idmap.ts';
import { execa } from 'execa';
import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, lchown, lstat, mkdir, readdir, readlink, realpath, rm, stat, symlink, link, utimes, writeFile } from 'node:fs/promises';
import { basename, dirname, posix } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar-stream';
import { type ContainerTree, mapContainerPath, mountsBelow, type PathMount, readOnlyReason } from '../../lib/container-path.ts';
import { invalidArgument, notFound, permissionDenied } from '../../lib/errors.ts';
import { EXECA_DEFAULTS } from './exec.ts';
import { packEntry } from '../storage/pack-entry.ts';
import type { PathStat } from '../../lib/ports/files.ts';

/** A container's file tree, or just a root directory (no mounts, writable). */
export type Tree = string | ContainerTree;

function treeOf(t: Tree): ContainerTree {
  return typeof t === 'string' ? { rootfs: t, mounts: [], readonlyRootfs: false } : t;
}

export interface ResolvedInTree {
  /** Where it is on the host. */
  host: string;
  /** The resolved path inside the container (absolute, no symlinks). */
  path: string;
  readOnly: boolean;
  mount: PathMount | null;
}

export type { PathStat };

const MAX_LINKS = 40;

/**
 * Host path of `path` (absolute inside the container) under `root`, following symlinks as the
 * container would see them. `followLast` false keeps a final symlink itself.
 */
export async function resolveInRoot(root: string, path: string, followLast = true): Promise<string> {
  return (await resolveInTree(root, path, followLast)).host;
}

/**
 * `path` resolved in the container's view: each component is looked up where the mount table puts
 * it, and a symlink (absolute or relative, in a volume or bind too) continues inside the
 * container, never on the host. `followLast` false keeps a final symlink itself.
 */
export async function resolveInTree(t: Tree, path: string, followLast = true): Promise<ResolvedInTree> {
  const tree = treeOf(t);
  const parts = posix.normalize('/' + path).split('/').filter(Boolean);
  const resolved: string[] = [];
  const done = (comps: string[]): ResolvedInTree => {
    const inside = '/' + comps.join('/');
    return { ...mapContainerPath(tree, inside), path: inside };
  };
  let hops = 0;
  while (parts.length) {
    const part = parts.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      resolved.pop();
      continue;
    }
    const host = mapContainerPath(tree, '/' + [...resolved, part].join('/')).host;
    let st;
    try {
      st = await lstat(host);
    } catch {
      resolved.push(part, ...parts.filter((p) => p !== '.'));
      return done(normalizeParts(resolved));
    }
    if (st.isSymbolicLink() && (parts.length > 0 || followLast)) {
      if (++hops > MAX_LINKS) throw invalidArgument(`too many levels of symbolic links: ${path}`);
      const target = await readlink(host);
      if (target.startsWith('/')) resolved.length = 0;
      parts.unshift(...target.split('/').filter(Boolean));
      continue;
    }
    resolved.push(part);
  }
  return done(resolved);
}

/**
 * The tree the runtime builds: each mount's destination resolved (symlinks in the image and the
 * mounts before it followed, as the runtime does when it mounts), its host source as the kernel
 * binds it (host symlinks followed), and a mount point missing in the rootfs made there (a
 * directory, or an empty file for a file), as the runtime and the reference's archive calls do.
 */
export async function containerTree(rootfs: string, mounts: readonly PathMount[], readonlyRootfs: boolean): Promise<ContainerTree> {
  const placed: PathMount[] = [];
  const tree: ContainerTree = { rootfs, mounts: placed, readonlyRootfs };
  for (const m of mounts) {
    const dest = await resolveInTree(tree, m.destination, true);
    const source = await realpath(m.source).catch(() => m.source);
    if (dest.mount === null && dest.path !== '/') await makeMountPoint(dest.host, source);
    placed.push({ ...m, destination: dest.path, source });
  }
  return tree;
}

async function makeMountPoint(host: string, source: string): Promise<void> {
  if (await lstat(host).then(() => true, () => false)) return;
  const src = await stat(source).catch(() => null);
  if (!src) return;
  try {
    if (src.isDirectory()) {
      await mkdir(host, { recursive: true, mode: 0o755 });
    } else {
      await mkdir(dirname(host), { recursive: true, mode: 0o755 });
      await writeFile(host, '', { flag: 'wx', mode: 0o755 });
    }
  } catch {
    // Left as it is: the lookups see it missing, as before.
  }
}

function normalizeParts(parts: string[]): string[] {
  const out: string[] = [];
  for (const p of parts) {
    if (p === '..') out.pop();
    else if (p !== '.' && p) out.push(p);
  }
  return out;
}

/** Go os.FileMode bits for a stat result. */
function goMode(st: import('node:fs').Stats): number {
  let m = st.mode & 0o777;
  if (st.mode & 0o4000) m |= 1 << 23;
  if (st.mode & 0o2000) m |= 1 << 22;
  if (st.mode & 0o1000) m |= 1 << 20;
  if (st.isDirectory()) m |= 2 ** 31;
  else if (st.isSymbolicLink()) m |= 1 << 27;
  else if (st.isFIFO()) m |= 1 << 25;
  else if (st.isSocket()) m |= 1 << 24;
  else if (st.isCharacterDevice()) m |= (1 << 26) | (1 << 21);
  else if (st.isBlockDevice()) m |= 1 << 26;
  return m >>> 0;
}

export async function statInRoot(root: Tree, path: string): Promise<PathStat> {
  const { host } = await resolveInTree(root, path, false);
  let st;
  try {
    st = await lstat(host);
  } catch {
    throw notFound(`Could not find the file ${path} in container`);
  }
  let linkTarget = '';
  if (st.isSymbolicLink()) linkTarget = (await resolveInTree(root, path, true)).path;
  return { name: basename(path) || '/', size: st.size, mode: goMode(st), mtime: st.mtime.toISOString(), linkTarget };
}

/**
 * A tar of `path` (the entry names start with its base name), streamed by GNU tar; a directory
 * with mounts below it is walked here instead, each mount's content in its place.
 */
export async function archiveFromRoot(root: Tree, path: string, signal: AbortSignal): Promise<{ stat: PathStat; stream: Readable }> {
  const tree = treeOf(root);
  const stat = await statInRoot(tree, path);
  const resolved = await resolveInTree(tree, path, false);
  const host = resolved.host;
  const base = basename(posix.normalize(path)) || '.';
  const isDir = (stat.mode & 2 ** 31) !== 0;
  // Remapped owners are turned back into the container's ids by the walker (tar cannot map ranges).
  if (tree.idMap || (isDir && mountsBelow(tree.mounts, resolved.path).length > 0)) {
    return { stat, stream: packTree(tree, resolved.path, resolved.path === '/' || base === '/' ? '.' : base, signal) };
  }
  const dir = dirname(host);
  const name = basename(host);
  const args = ['-c', '-f', '-', '--numeric-owner', '-C', dir];
  if (name !== base && base !== '.' && base !== '/') args.push(`--transform=s,^${escapeSed(name)},${escapeSed(base)},`);
  args.push(name);
  const atRoot = resolved.path === '/';
  // A stream as long as the tree is large: no deadline; the request's signal ends tar (SIGTERM).
  // Failures show as a short stream, as before: the result is not awaited (reject: false).
  const child = execa('tar', atRoot ? ['-c', '-f', '-', '--numeric-owner', '-C', host, '.'] : args, {
    ...EXECA_DEFAULTS,
    stdin: 'ignore',
    stderr: 'ignore',
    buffer: false,
    cancelSignal: signal,
    reject: false,
  });
  // With buffer: false execa resumes a stdout nobody reads yet after a tick; the caller reads it later.
  child.stdout.pause();
  return { stat, stream: child.stdout };
}

/** Linux dev_t halves (glibc's major/minor). */
function devParts(rdev: number): { devmajor: number; devminor: number } {
  const hi = Math.floor(rdev / 2 ** 32);
  const lo = rdev >>> 0;
  return { devmajor: ((lo >>> 8) & 0xfff) | ((hi & 0xfffff000) >>> 0), devminor: (lo & 0xff) | ((lo >>> 12) & 0xfff00) };
}

/**
 * A tar of the container directory `inside` as the process sees it: walked in the container's
 * view, so each mount below it (a volume, a bind, the daemon's /etc files) shows its own content,
 * mount points the image lacks included. Entry names start with `name`; symlinks are stored, not
 * followed; files seen twice (hard links) are stored as links.
 */
function packTree(tree: ContainerTree, inside: string, name: string, signal: AbortSignal): Readable {
  const pack = tar.pack();
  const seen = new Map<string, string>();
  const onAbort = () => pack.destroy(new Error('canceled'));
  signal.addEventListener('abort', onAbort, { once: true });
  const add = async (at: string, entryName: string): Promise<void> => {
    signal.throwIfAborted();
    const { host } = mapContainerPath(tree, at);
    const st = await lstat(host).catch(() => null);
    if (!st) return; // gone meanwhile, or a mount point not made yet whose source is missing
    const own = tree.idMap ? containerOwner(tree.idMap, st.uid, st.gid) : st;
    const header: Partial<tar.Header> & { name: string } = { name: entryName, mode: st.mode & 0o7777, uid: own.uid, gid: own.gid, mtime: st.mtime };
    if (st.isDirectory()) {
      await packEntry(pack, { ...header, name: entryName.endsWith('/') ? entryName : `${entryName}/`, type: 'directory' });
      const names = new Set(await readdir(host).catch(() => [] as string[]));
      for (const m of tree.mounts) if (m.destination !== '/' && posix.dirname(m.destination) === at) names.add(posix.basename(m.destination));
      for (const child of [...names].sort()) await add(posix.join(at, child), `${entryName.replace(/\/$/, '')}/${child}`);
    } else if (st.isFile()) {
      const key = `${st.dev}:${st.ino}`;
      const first = st.nlink > 1 ? seen.get(key) : undefined;
      if (first !== undefined) {
        await packEntry(pack, { ...header, type: 'link', linkname: first });
        return;
      }
      if (st.nlink > 1) seen.set(key, entryName);
      const body = st.size > 0 ? createReadStream(host, { start: 0, end: st.size - 1 }) : null;
      await packEntry(pack, { ...header, type: 'file', size: st.size }, body);
    } else if (st.isSymbolicLink()) {
      await packEntry(pack, { ...header, type: 'symlink', linkname: await readlink(host) });
    } else if (st.isCharacterDevice() || st.isBlockDevice()) {
      await packEntry(pack, { ...header, type: st.isCharacterDevice() ? 'character-device' : 'block-device', ...devParts(st.rdev) });
    } else if (st.isFIFO()) {
      await packEntry(pack, { ...header, type: 'fifo' });
    } // sockets are left out, as GNU tar does
  };
  add(inside, name)
    .then(() => pack.finalize())
    .catch((err: unknown) => pack.destroy(err instanceof Error ? err : new Error(String(err))))
    .finally(() => signal.removeEventListener('abort', onAbort));
  return Readable.from(pack as AsyncIterable<unknown> as AsyncIterable<Buffer>, { objectMode: false });
}



function escapeSed(s: string): string {
  return s.replace(/[\\,.*[\]^$]/g, '\\$&');
}

/** The reference's refusal of a write at a resolved path (a read-only mount or rootfs), 403. */
function refuseReadOnly(at: ResolvedInTree | ReturnType<typeof mapContainerPath>): void {
  const reason = readOnlyReason(at);
  if (reason) throw permissionDenied(reason);
}

/**
 * Extract a tar into directory `path` of the container's tree; every entry stays inside it. A
 * read-only mount or rootfs refuses (the extraction point before anything is read, an entry that
 * leads into one when it comes).
 */
export async function extractToRoot(
  root: Tree,
  path: string,
  body: Readable,
  opts: { noOverwriteDirNonDir: boolean; copyUIDGID: boolean },
  signal: AbortSignal,
): Promise<void> {
  const tree = treeOf(root);
  const dest = await resolveInTree(tree, path, true);
  let st;
  try {
    st = await lstat(dest.host);
  } catch {
    throw notFound(`Could not find the file ${path} in container`);
  }
  if (!st.isDirectory()) throw invalidArgument('extraction point is not a directory');
  refuseReadOnly(dest);
  const destInside = dest.path;
  const ex = tar.extract();
  const work = (async () => {
    for await (const entry of ex) {
      const h = entry.header;
      const rel = posix.normalize('/' + h.name);
      const insidePath = posix.join(destInside, rel);
      if (rel === '/') {
        entry.resume();
        continue;
      }
      const parent = await resolveInTree(tree, posix.dirname(insidePath), true);
      const mapped = mapContainerPath(tree, posix.join(parent.path, posix.basename(insidePath)));
      refuseReadOnly(mapped);
      const target = mapped.host;
      // A mount point itself (a volume's root, a bound file) is never unlinked: a file is written in place.
      const mountRoot = mapped.mount !== null && mapped.host === mapped.mount.source;
      await mkdir(parent.host, { recursive: true });
      const existing = await lstat(target).catch(() => null);
      if (existing && opts.noOverwriteDirNonDir) {
        if (existing.isDirectory() && h.type !== 'directory') throw invalidArgument(`cannot overwrite directory "${insidePath}" with non-directory`);
        if (!existing.isDirectory() && h.type === 'directory') throw invalidArgument(`cannot overwrite non-directory "${insidePath}" with directory`);
      }
      const sameKind = existing && (existing.isDirectory() ? h.type === 'directory' : h.type === 'file' || h.type === 'contiguous-file');
      if (existing && mountRoot && !sameKind) throw invalidArgument(`cannot replace mount point "${insidePath}": device or resource busy`);
      if (existing && !mountRoot && !(existing.isDirectory() && h.type === 'directory')) await rm(target, { recursive: true, force: true });
      switch (h.type) {
        case 'directory':
          await mkdir(target, { recursive: true });
          entry.resume();
          break;
        case 'file':
        case 'contiguous-file':
          await pipeline(entry, createWriteStream(target, { mode: (h.mode ?? 0o644) & 0o7777 }));
          break;
        case 'symlink':
          await symlink(h.linkname ?? '', target);
          entry.resume();
          break;
        case 'link': {
          const src = await resolveInTree(tree, posix.join(destInside, posix.normalize('/' + (h.linkname ?? ''))), false);
          await link(src.host, target);
          entry.resume();
          break;
        }
        default:
          entry.resume();
          continue;
      }
      if (h.type !== 'symlink') {
        await chmod(target, (h.mode ?? 0o644) & 0o7777).catch(() => {});
        if (h.mtime) await utimes(target, h.mtime, h.mtime).catch(() => {});
      }
      const uid = opts.copyUIDGID ? (h.uid ?? 0) : 0;
      const gid = opts.copyUIDGID ? (h.gid ?? 0) : 0;
      // The ids are the container's: on the host, the ones they are (an id without one stays as given).
      const own = tree.idMap ? { uid: toHost(tree.idMap.uids, uid) ?? uid, gid: toHost(tree.idMap.gids, gid) ?? gid } : { uid, gid };
      await lchown(target, own.uid, own.gid).catch(() => {});
    }
  })();
  await Promise.all([pipeline(body, ex, { signal }), work]);
}
