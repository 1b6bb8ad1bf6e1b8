// Unpack a layer tar into a directory, safely: every path is resolved inside the root the way a
// chroot would (symlinks followed but clamped at the root, `..` never above it), so no entry can
// write outside. Whiteouts become overlay whiteouts (char 0/0 device, opaque xattr) or deletions.
import { hostOwner, type IdMap } from '../../lib/idmap.ts';
import { constants as fsc } from 'node:fs';
import { chmod, link, lchown, lstat, lutimes, mkdir, open, readdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { join } from 'node:path';
import { invalidArgument } from '../../lib/errors.ts';
import { lsetxattr, mknod, S_IFBLK, S_IFCHR, S_IFIFO } from '../sys/fs-syscalls.ts';
import { SyscallError } from '../sys/syscalls.ts';
import { ChunkWriter } from './chunk-writer.ts';
import type { TarEntry } from './tar-reader.ts';

export const WHITEOUT_PREFIX = '.wh.';
export const WHITEOUT_META_PREFIX = '.wh..wh.';
export const WHITEOUT_OPAQUE = '.wh..wh..opq';
export const OVERLAY_OPAQUE_XATTR = 'trusted.overlay.opaque';

/**
 * How whiteouts land in a layer directory: overlay's (a 0/0 character device, an opaque xattr),
 * deletions (full-copy drivers), or the tar's own `.wh.` files (fuse-overlayfs reads them, and they
 * survive a backing file system that is itself an overlay).
 */
export type WhiteoutMode = 'overlay' | 'delete' | 'files';

export interface UnpackOptions {
  root: string;
  whiteouts: WhiteoutMode;
  signal?: AbortSignal;
  /** --userns-remap: entries are owned by the host ids their container ids are. */
  idMap?: IdMap;
}

export interface UnpackResult {
  /** Bytes of regular file data written. */
  size: number;
}

const ENOTSUP = 95;

/** lstat, or null when nothing is there. */
export async function lstatOrNull(p: string): Promise<Stats | null> {
  try {
    return await lstat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Clean a tar entry name into path components under the root; rejects names that climb above it. */
export function cleanName(name: string): string[] {
  const out: string[] = [];
  for (const c of name.split('/')) {
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (out.length === 0) throw invalidArgument(`invalid tar entry ${JSON.stringify(name)}: path escapes the layer directory`);
      out.pop();
      continue;
    }
    out.push(c);
  }
  return out;
}

class Unpacker {
  private readonly root: string;
  private readonly mode: WhiteoutMode;
  /** Resolved absolute directory for a cleaned relative dir path; cleared whenever the tree is reshaped. */
  private dirCache = new Map<string, string>();
  /** Relative paths this layer created (vfs: an opaque marker must not delete them). */
  private readonly created = new Set<string>();
  private readonly dirTimes: Array<[string, number, number]> = [];
  size = 0;

  private readonly idMap: IdMap | undefined;

  constructor(root: string, mode: WhiteoutMode, idMap?: IdMap) {
    this.root = root;
    this.mode = mode;
    this.idMap = idMap;
  }

  /** The host owner of an entry the tar gives `uid`/`gid` (itself without a remap). */
  private owner(uid: number, gid: number): { uid: number; gid: number } {
    return this.idMap ? hostOwner(this.idMap, uid, gid) : { uid, gid };
  }

  /** Resolve directory components inside the root like a chroot would, creating missing ones. */
  private async resolveDir(comps: string[], create: boolean): Promise<string> {
    const key = comps.join('/');
    const hit = this.dirCache.get(key);
    if (hit !== undefined) return hit;
    const queue = [...comps];
    let cur: string[] = [];
    let hops = 0;
    while (queue.length > 0) {
      const c = queue.shift()!;
      if (c === '' || c === '.') continue;
      if (c === '..') {
        cur.pop();
        continue;
      }
      const p = join(this.root, ...cur, c);
      const st = await lstatOrNull(p);
      if (st === null) {
        if (!create) throw invalidArgument(`invalid tar entry: ${key} does not exist in the layer`);
        await mkdir(p, 0o755);
        if (this.idMap) await lchown(p, ...ownerArgs(this.owner(0, 0)));
        this.created.add([...cur, c].join('/'));
        cur.push(c);
        continue;
      }
      if (st.isSymbolicLink()) {
        if (++hops > 255) throw invalidArgument(`invalid tar entry: too many symlinks resolving ${key}`);
        const target = await readlink(p);
        if (target.startsWith('/')) cur = [];
        queue.unshift(...target.split('/'));
        continue;
      }
      if (!st.isDirectory()) throw invalidArgument(`invalid tar entry: ${[...cur, c].join('/')} is not a directory`);
      cur.push(c);
    }
    const abs = join(this.root, ...cur);
    this.dirCache.set(key, abs);
    return abs;
  }

  private async remove(abs: string): Promise<void> {
    await rm(abs, { recursive: true, force: true });
    this.dirCache.clear();
  }

  async entry(e: TarEntry): Promise<void> {
    const h = e.header;
    const comps = cleanName(h.name);
    if (comps.length === 0) return; // the layer root itself
    const base = comps[comps.length - 1]!;
    const parentComps = comps.slice(0, -1);
    const rel = comps.join('/');

    if (base.startsWith(WHITEOUT_PREFIX)) {
      if (base === WHITEOUT_OPAQUE) return this.opaque(parentComps);
      if (base.startsWith(WHITEOUT_META_PREFIX)) return; // aufs bookkeeping (.wh..wh.plnk etc.)
      return this.whiteout(parentComps, base.slice(WHITEOUT_PREFIX.length), h.uid, h.gid);
    }

    const dir = await this.resolveDir(parentComps, true);
    const target = join(dir, base);
    const existing = await lstatOrNull(target);
    if (existing && !(existing.isDirectory() && h.type === 'dir')) await this.remove(target);
    this.created.add(rel);

    const mode = h.mode & 0o7777;
    switch (h.type) {
      case 'dir':
        if (!existing || !existing.isDirectory()) await mkdir(target, 0o700);
        break;
      case 'file': {
        const fh = await open(target, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
        const out = new ChunkWriter(fh, null);
        try {
          for await (const c of e.body) {
            const wait = out.write(c);
            this.size += c.length;
            if (wait) await wait;
          }
          await out.flush();
        } finally {
          await out.settle();
          await fh.close();
        }
        break;
      }
      case 'link': {
        const lc = cleanName(h.linkname);
        if (lc.length === 0) throw invalidArgument(`invalid hardlink ${JSON.stringify(h.name)}: empty target`);
        const ldir = await this.resolveDir(lc.slice(0, -1), false);
        const src = join(ldir, lc[lc.length - 1]!);
        const st = await lstatOrNull(src);
        if (!st || st.isDirectory()) throw invalidArgument(`invalid hardlink ${JSON.stringify(h.name)} -> ${JSON.stringify(h.linkname)}`);
        await link(src, target);
        // The inode already carries its metadata; the link entry's own copy must not override it.
        return;
      }
      case 'symlink':
        await symlink(h.linkname, target);
        this.dirCache.clear();
        break;
      case 'char':
        mknod(target, S_IFCHR | mode, h.devmajor, h.devminor);
        break;
      case 'block':
        mknod(target, S_IFBLK | mode, h.devmajor, h.devminor);
        break;
      case 'fifo':
        mknod(target, S_IFIFO | mode, 0, 0);
        break;
      default:
        return; // unsupported kinds (sockets, volume labels) are skipped, as the reference daemon does
    }

    await lchown(target, ...ownerArgs(this.owner(h.uid, h.gid)));
    for (const [name, value] of h.xattrs) {
      // Overlay's own attributes are the driver's business, never the image's.
      if (name.startsWith('trusted.overlay.')) continue;
      try {
        lsetxattr(target, name, value);
      } catch (err) {
        if (!(err instanceof SyscallError && err.errno === ENOTSUP)) throw err;
      }
    }
    // After lchown: chown clears setuid/setgid.
    if (h.type !== 'symlink') await chmod(target, mode);
    const atime = h.atime ?? h.mtime;
    if (h.type === 'dir') this.dirTimes.push([target, atime, h.mtime]);
    else await lutimes(target, atime, h.mtime);
  }

  private async opaque(dirComps: string[]): Promise<void> {
    const dir = await this.resolveDir(dirComps, true);
    if (this.mode === 'overlay') {
      lsetxattr(dir, OVERLAY_OPAQUE_XATTR, Buffer.from('y'));
      return;
    }
    if (this.mode === 'files') {
      await writeFile(join(dir, WHITEOUT_OPAQUE), '');
      return;
    }
    const prefix = dirComps.length ? `${dirComps.join('/')}/` : '';
    for (const name of await readdir(dir)) {
      if (!this.created.has(prefix + name)) await this.remove(join(dir, name));
    }
  }

  private async whiteout(dirComps: string[], name: string, uid: number, gid: number): Promise<void> {
    if (name === '' || name === '.' || name === '..') throw invalidArgument(`invalid whiteout entry for ${JSON.stringify(name)}`);
    const dir = await this.resolveDir(dirComps, true);
    const target = join(dir, name);
    if (await lstatOrNull(target)) await this.remove(target);
    if (this.mode === 'overlay') {
      mknod(target, S_IFCHR, 0, 0);
      await lchown(target, ...ownerArgs(this.owner(uid, gid)));
    } else if (this.mode === 'files') {
      await writeFile(join(dir, `${WHITEOUT_PREFIX}${name}`), '');
    }
  }

  async finish(): Promise<void> {
    for (const [p, atime, mtime] of this.dirTimes.reverse()) await lutimes(p, atime, mtime);
  }
}

function ownerArgs(o: { uid: number; gid: number }): [number, number] {
  return [o.uid, o.gid];
}

export async function unpack(entries: AsyncIterable<TarEntry>, opts: UnpackOptions): Promise<UnpackResult> {
  const u = new Unpacker(opts.root, opts.whiteouts, opts.idMap);
  for await (const e of entries) {
    opts.signal?.throwIfAborted();
    await u.entry(e);
  }
  await u.finish();
  return { size: u.size };
}
