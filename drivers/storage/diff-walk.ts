// Reading layer directories back: walking them in a stable order, sizing them, listing changes
// (docker diff) and producing a tar of a diff with overlay whiteouts turned back into `.wh.` entries.
import { createReadStream } from 'node:fs';
import type { Stats } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { lgetxattr, llistxattr } from '../sys/fs-syscalls.ts';
import { encodeHeader, endOfArchive, padding } from './tar-writer.ts';
import type { TarWriteHeader } from './tar-writer.ts';
import type { ChangeEntry } from './types.ts';
import { OVERLAY_OPAQUE_XATTR, WHITEOUT_OPAQUE, WHITEOUT_PREFIX } from './unpack.ts';
import { byteOrder } from '../../lib/compare.ts';

export interface WalkEntry {
  /** Path relative to the walked root, without a leading slash. */
  rel: string;
  abs: string;
  st: Stats;
}

async function lstatOrNull(p: string): Promise<Stats | null> {
  try {
    return await lstat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw err;
  }
}

/** Pre-order walk, children sorted by name; the root itself is not yielded. */
export async function* walk(root: string, rel = ''): AsyncGenerator<WalkEntry> {
  const dir = rel ? join(root, rel) : root;
  const names = (await readdir(dir)).sort();
  for (const name of names) {
    const r = rel ? `${rel}/${name}` : name;
    const abs = join(root, r);
    const st = await lstat(abs);
    yield { rel: r, abs, st };
    if (st.isDirectory()) yield* walk(root, r);
  }
}

export const isOverlayWhiteout = (st: Stats) => st.isCharacterDevice() && st.rdev === 0;
export const isOpaque = (abs: string) => lgetxattr(abs, OVERLAY_OPAQUE_XATTR)?.toString() === 'y';

/** Bytes used by regular files under `root`, each inode counted once. */
export async function dirSize(root: string, filter?: (rel: string) => boolean): Promise<number> {
  const seen = new Set<number>();
  let size = 0;
  for await (const e of walk(root)) {
    if (!e.st.isFile() || (filter && !filter(e.rel))) continue;
    if (e.st.nlink > 1) {
      if (seen.has(e.st.ino)) continue;
      seen.add(e.st.ino);
    }
    size += e.st.size;
  }
  return size;
}

/**
 * Look a path up in a stack of overlay diff directories (top first), honouring whiteouts and
 * opaque directories: the lower view a container's upper layer sits on. `files`: whiteouts may
 * also be the tar's `.wh.` files (fuse-overlayfs's layers).
 */
export async function lookupLower(lowers: string[], rel: string, files = false): Promise<Stats | null> {
  const comps = rel.split('/');
  for (const layer of lowers) {
    let stop = false;
    for (let i = 0; i < comps.length; i++) {
      const p = join(layer, ...comps.slice(0, i + 1));
      if (files && (await lstatOrNull(join(layer, ...comps.slice(0, i), `${WHITEOUT_PREFIX}${comps[i]}`)))) return null;
      const st = await lstatOrNull(p);
      if (!st) break;
      if (isOverlayWhiteout(st)) return null;
      if (i === comps.length - 1) return st;
      if (!st.isDirectory()) return null;
      if (isOpaque(p) || (files && (await lstatOrNull(join(p, WHITEOUT_OPAQUE))))) stop = true;
    }
    if (stop) return null;
  }
  return null;
}

function sortChanges(changes: Map<string, ChangeEntry['Kind']>): ChangeEntry[] {
  return [...changes.entries()].sort(([a], [b]) => byteOrder(a, b)).map(([Path, Kind]) => ({ Path, Kind }));
}

/**
 * Changes of an overlay upper dir against its lower diff dirs (top first). `files`: whiteouts and
 * opaque directories may also be the tar's `.wh.` files (fuse-overlayfs writes those where the
 * backing file system cannot hold overlay's).
 */
export async function overlayChanges(upper: string, lowers: string[], files = false): Promise<ChangeEntry[]> {
  const changes = new Map<string, ChangeEntry['Kind']>();
  const markParent = (rel: string) => {
    const i = rel.lastIndexOf('/');
    if (i > 0) changes.set(`/${rel.slice(0, i)}`, changes.get(`/${rel.slice(0, i)}`) ?? 0);
  };
  for await (const e of walk(upper)) {
    const slash = e.rel.lastIndexOf('/');
    const base = e.rel.slice(slash + 1);
    if (files && base.startsWith(WHITEOUT_PREFIX)) {
      if (base === WHITEOUT_OPAQUE) continue; // its directory says it (below)
      const gone = `${e.rel.slice(0, slash + 1)}${base.slice(WHITEOUT_PREFIX.length)}`;
      if (await lookupLower(lowers, gone, files)) {
        changes.set(`/${gone}`, 2);
        markParent(gone);
      }
      continue;
    }
    if (isOverlayWhiteout(e.st)) {
      if (await lookupLower(lowers, e.rel, files)) {
        changes.set(`/${e.rel}`, 2);
        markParent(e.rel);
      }
      continue;
    }
    const below = await lookupLower(lowers, e.rel, files);
    if (!below) {
      changes.set(`/${e.rel}`, 1);
      markParent(e.rel);
      continue;
    }
    if (e.st.isDirectory()) {
      if ((isOpaque(e.abs) || (files && (await lstatOrNull(join(e.abs, WHITEOUT_OPAQUE))))) && below.isDirectory()) {
        // Everything the lower layers had here is gone unless the upper dir has it again.
        for (const lowerDir of lowers) {
          const names = await readdir(join(lowerDir, e.rel)).catch(() => [] as string[]);
          for (const n of names) {
            const r = `${e.rel}/${n}`;
            if (!(await lstatOrNull(join(upper, r))) && (await lookupLower(lowers, r, files))) changes.set(`/${r}`, 2);
          }
        }
      }
      // A directory copied up only because a child changed is reported through its children.
      if (sameMeta(e.st, below)) continue;
    }
    changes.set(`/${e.rel}`, 0);
    markParent(e.rel);
  }
  return sortChanges(changes);
}

function sameMeta(a: Stats, b: Stats): boolean {
  return a.mode === b.mode && a.uid === b.uid && a.gid === b.gid;
}

/** Changes of a full copy (vfs) against its parent's full copy (null: empty parent). */
export async function naiveChanges(dir: string, parentDir: string | null): Promise<ChangeEntry[]> {
  const changes = new Map<string, ChangeEntry['Kind']>();
  for await (const e of walk(dir)) {
    const old = parentDir ? await lstatOrNull(join(parentDir, e.rel)) : null;
    if (!old) changes.set(`/${e.rel}`, 1);
    else if (changed(old, e.st)) changes.set(`/${e.rel}`, 0);
  }
  if (parentDir) {
    const gone: string[] = [];
    for await (const e of walk(parentDir)) {
      if (gone.some((g) => e.rel.startsWith(`${g}/`))) continue;
      if (!(await lstatOrNull(join(dir, e.rel)))) {
        gone.push(e.rel);
        changes.set(`/${e.rel}`, 2);
      }
    }
  }
  return sortChanges(changes);
}

function changed(a: Stats, b: Stats): boolean {
  if ((a.mode & 0o170000) !== (b.mode & 0o170000)) return true;
  if (a.mode !== b.mode || a.uid !== b.uid || a.gid !== b.gid || a.rdev !== b.rdev) return true;
  if (a.isDirectory()) return a.mtimeMs !== b.mtimeMs;
  return a.mtimeMs !== b.mtimeMs || a.size !== b.size;
}

function tarType(st: Stats): TarWriteHeader['type'] | null {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'dir';
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isCharacterDevice()) return 'char';
  if (st.isBlockDevice()) return 'block';
  if (st.isFIFO()) return 'fifo';
  return null; // sockets are not archived
}

function xattrsOf(abs: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const name of llistxattr(abs)) {
    if (name.startsWith('trusted.overlay.')) continue;
    const v = lgetxattr(abs, name);
    if (v) out.set(name, v);
  }
  return out;
}

const major = (rdev: number) => Number(((BigInt(rdev) >> 8n) & 0xfffn) | ((BigInt(rdev) >> 32n) & ~0xfffn));
const minor = (rdev: number) => Number((BigInt(rdev) & 0xffn) | ((BigInt(rdev) >> 12n) & ~0xffn));

export interface TarSource {
  root: string;
  /** Entries to archive, in order; overlay whiteouts and opaque dirs are converted. */
  entries: AsyncIterable<WalkEntry>;
  /** Paths deleted relative to the parent (naive diffs), archived as `.wh.` entries. */
  deleted?: string[];
  /** --userns-remap: the container's ids of a host file's owner. */
  owner?: OwnerMap;
}

/** The owner a tar entry gets for a file's host owner. */
export type OwnerMap = (uid: number, gid: number) => { uid: number; gid: number };

/** A tar of `src.entries`, with overlay whiteouts as `.wh.<name>` and opaque dirs as `.wh..wh..opq`. */
export async function* diffTar(src: TarSource): AsyncGenerator<Buffer> {
  const links = new Map<number, string>();
  const whiteoutHeader = (rel: string, mtime: number): Buffer => {
    const i = rel.lastIndexOf('/');
    const name = i === -1 ? `${WHITEOUT_PREFIX}${rel}` : `${rel.slice(0, i)}/${WHITEOUT_PREFIX}${rel.slice(i + 1)}`;
    return encodeHeader({ name, type: 'file', mode: 0, uid: 0, gid: 0, size: 0, mtime });
  };
  for await (const e of src.entries) {
    const mtime = Math.floor(e.st.mtimeMs / 1000);
    if (isOverlayWhiteout(e.st)) {
      yield whiteoutHeader(e.rel, mtime);
      continue;
    }
    const type = tarType(e.st);
    if (!type) continue;
    const own = src.owner ? src.owner(e.st.uid, e.st.gid) : e.st;
    const base = { mode: e.st.mode & 0o7777, uid: own.uid, gid: own.gid, mtime, xattrs: xattrsOf(e.abs) };
    if (type === 'file' && e.st.nlink > 1) {
      const first = links.get(e.st.ino);
      if (first !== undefined) {
        yield encodeHeader({ ...base, name: e.rel, type: 'link', size: 0, linkname: first });
        continue;
      }
      links.set(e.st.ino, e.rel);
    }
    if (type === 'dir') {
      yield encodeHeader({ ...base, name: `${e.rel}/`, type, size: 0 });
      if (isOpaque(e.abs)) yield encodeHeader({ name: `${e.rel}/${WHITEOUT_OPAQUE}`, type: 'file', mode: 0, uid: 0, gid: 0, size: 0, mtime });
    } else if (type === 'symlink') {
      yield encodeHeader({ ...base, name: e.rel, type, size: 0, linkname: await readlink(e.abs) });
    } else if (type === 'char' || type === 'block') {
      yield encodeHeader({ ...base, name: e.rel, type, size: 0, devmajor: major(e.st.rdev), devminor: minor(e.st.rdev) });
    } else if (type === 'fifo') {
      yield encodeHeader({ ...base, name: e.rel, type, size: 0 });
    } else {
      yield encodeHeader({ ...base, name: e.rel, type, size: e.st.size });
      let written = 0;
      if (e.st.size > 0) for await (const c of createReadStream(e.abs, { start: 0, end: e.st.size - 1 })) {
        const chunk = (c as Buffer).subarray(0, e.st.size - written);
        written += chunk.length;
        yield chunk;
        if (written >= e.st.size) break;
      }
      // A file that shrank while being read is padded so the archive stays well-formed.
      if (written < e.st.size) yield Buffer.alloc(e.st.size - written);
      yield padding(e.st.size);
    }
  }
  for (const rel of src.deleted ?? []) yield whiteoutHeader(rel, 0);
  yield endOfArchive();
}
