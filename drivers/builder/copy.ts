// The file work of the classic builder's COPY and ADD: copying the resolved sources from the
// build context (or another stage's rootfs) into the rootfs being built, every path inside that
// rootfs resolved as a chroot would. Parsing, the cache and committing are the caller's.
import { hostOwner, type IdMap } from '../../lib/idmap.ts';
import type { Stats } from 'node:fs';
import { chmod, constants, copyFile, lchown, lstat, lutimes, mkdir, readdir, readlink, rm, stat, symlink, utimes } from 'node:fs/promises';
import { join, posix, relative } from 'node:path';
import { EngineError, internal, invalidArgument } from '../../lib/errors.ts';
import { archiveKind, extractArchive } from './copy-archive.ts';
import { parseChmod, parseChown } from './copy-owner.ts';
import { resolveInRoot } from '../sys/rootfs-files.ts';
import { mkdirInRoot, type Ids } from './copy-paths.ts';
import type { ResolvedSource } from './copy-sources.ts';

export type { ResolvedSource } from './copy-sources.ts';
export { resolveSources, sourcesChecksum } from './copy-sources.ts';
export { mkdirInRoot } from './copy-paths.ts';
export { resolveInRoot } from '../sys/rootfs-files.ts';

export interface CopyOptions {
  instruction: 'COPY' | 'ADD';
  /** The build context directory (or another stage's rootfs for COPY --from). */
  srcRoot: string;
  /** As written, variables already expanded; may hold wildcards. */
  sources: string[];
  /** As written, expanded. */
  dest: string;
  /** The image's WORKDIR ('' means '/'). */
  workdir: string;
  /** The rootfs being built. */
  destRoot: string;
  /** "user", "user:group", "uid" or "uid:gid"; names resolved in destRoot's /etc/passwd and /etc/group. */
  chown?: string;
  /** --userns-remap: the owner is written as the host ids of its container ids. */
  idMap?: IdMap;
  /** Octal permission bits, e.g. "755". */
  chmod?: string;
  /** ADD: a local tar archive is extracted at dest instead of copied. */
  unpack: boolean;
  signal?: AbortSignal;
}

interface Ctx {
  ids: Ids;
  mode: number | null;
  signal?: AbortSignal;
}

/** The destination as an absolute path in the rootfs: a relative one is under WORKDIR. */
function destPath(dest: string, workdir: string): string {
  return dest.startsWith('/') ? dest : posix.join('/', workdir || '/', dest);
}

/** A dest written as a directory: ending in '/', or naming '.' or '..'. */
const namesDir = (dest: string) => /(^|\/)\.{0,2}$/.test(dest);

async function clear(target: string, keepDir: boolean): Promise<boolean> {
  const existing = await lstat(target).catch(() => null);
  if (!existing) return false;
  if (keepDir && existing.isDirectory()) return true;
  // As the reference's untar: whatever is in the way is replaced, a directory included.
  await rm(target, { recursive: true, force: true });
  return false;
}

async function copyFileTo(src: string, st: Stats, target: string, c: Ctx): Promise<void> {
  await clear(target, false);
  await copyFile(src, target, constants.COPYFILE_EXCL);
  await lchown(target, c.ids.uid, c.ids.gid);
  // After chown, which clears setuid bits.
  await chmod(target, c.mode ?? st.mode & 0o7777);
  await utimes(target, st.atime, st.mtime);
}

/** A directory's entries into destDir (a host path already resolved in the rootfs). */
async function copyTree(srcDir: string, destDir: string, c: Ctx): Promise<void> {
  for (const name of (await readdir(srcDir)).sort()) {
    c.signal?.throwIfAborted();
    const src = join(srcDir, name);
    const target = join(destDir, name);
    const st = await lstat(src);
    if (st.isFile()) {
      await copyFileTo(src, st, target, c);
    } else if (st.isSymbolicLink()) {
      await clear(target, false);
      await symlink(await readlink(src), target);
      await lchown(target, c.ids.uid, c.ids.gid);
      await lutimes(target, st.atime, st.mtime);
    } else if (st.isDirectory()) {
      if (!(await clear(target, true))) await mkdir(target);
      await copyTree(src, target, c);
      await lchown(target, c.ids.uid, c.ids.gid);
      await chmod(target, c.mode ?? st.mode & 0o7777);
      await utimes(target, st.atime, st.mtime);
    }
    // Sockets, fifos and devices are left out: Node cannot create them.
  }
}

async function copyOne(o: CopyOptions, s: ResolvedSource, dest: string, intoDir: boolean, c: Ctx): Promise<void> {
  if (s.isDir) {
    const existed = (await lstat(await resolveInRoot(o.destRoot, dest)).catch(() => null))?.isDirectory() ?? false;
    const dir = await mkdirInRoot(o.destRoot, dest, c.ids);
    // A directory that was already there keeps its own owner and mode.
    if (!existed && c.mode !== null) await chmod(dir, c.mode);
    await copyTree(s.abs, dir, c);
    return;
  }
  if (o.unpack) {
    const kind = await archiveKind(s.abs);
    if (kind) {
      await extractArchive(s.abs, kind, { destRoot: o.destRoot, destDir: dest, ids: c.ids, chmod: c.mode, signal: c.signal });
      return;
    }
  }
  const st = await stat(s.abs);
  const resolved = await resolveInRoot(o.destRoot, dest);
  let target: string;
  if (intoDir || (await lstat(resolved).catch(() => null))?.isDirectory()) {
    // The name as given, not a symlink's target's.
    target = join(await mkdirInRoot(o.destRoot, dest, c.ids), posix.basename(s.rel));
  } else {
    const inRoot = '/' + relative(o.destRoot, resolved);
    target = join(await mkdirInRoot(o.destRoot, posix.dirname(inRoot), c.ids), posix.basename(inRoot));
  }
  await copyFileTo(s.abs, st, target, c);
}

/** Copy the resolved sources into destRoot. */
export async function copyInto(o: CopyOptions, sources: ResolvedSource[]): Promise<void> {
  if (sources.length > 1 && !o.dest.endsWith('/')) {
    throw invalidArgument(`When using ${o.instruction} with more than one source file, the destination must be a directory and end with a /`);
  }
  const ids = o.chown ? await parseChown(o.chown, o.destRoot) : { uid: 0, gid: 0 };
  const c: Ctx = {
    ids: o.idMap ? hostOwner(o.idMap, ids.uid, ids.gid) : ids,
    mode: o.chmod ? parseChmod(o.chmod) : null,
    signal: o.signal,
  };
  const dest = destPath(o.dest, o.workdir);
  const intoDir = namesDir(o.dest) || sources.length > 1;
  for (const s of sources) {
    c.signal?.throwIfAborted();
    try {
      await copyOne(o, s, dest, intoDir, c);
    } catch (err) {
      if (err instanceof EngineError || (err as Error).name === 'AbortError') throw err;
      throw internal(`failed to copy files: ${(err as Error).message}`, err);
    }
  }
}
