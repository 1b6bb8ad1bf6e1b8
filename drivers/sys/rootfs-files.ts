// Files inside a container's root filesystem (docker cp, export): every path is resolved
// component by component inside the root, symlinks included, so nothing outside can be read or
// written through `..` or a link.
import { execa } from 'execa';
import { createWriteStream } from 'node:fs';
import { chmod, lchown, lstat, mkdir, readlink, rm, symlink, link, utimes } from 'node:fs/promises';
import { basename, dirname, join, posix } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar-stream';
import { invalidArgument, notFound } from '../../lib/errors.ts';
import { EXECA_DEFAULTS } from './exec.ts';

export interface PathStat {
  name: string;
  size: number;
  mode: number;
  mtime: string;
  linkTarget: string;
}

const MAX_LINKS = 40;

/**
 * Host path of `path` (absolute inside the container) under `root`, following symlinks as the
 * container would see them. `followLast` false keeps a final symlink itself.
 */
export async function resolveInRoot(root: string, path: string, followLast = true): Promise<string> {
  const parts = posix.normalize('/' + path).split('/').filter(Boolean);
  const resolved: string[] = [];
  let hops = 0;
  while (parts.length) {
    const part = parts.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      resolved.pop();
      continue;
    }
    const host = join(root, ...resolved, part);
    let st;
    try {
      st = await lstat(host);
    } catch {
      resolved.push(part, ...parts.filter((p) => p !== '.'));
      return join(root, ...normalizeParts(resolved));
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
  return join(root, ...resolved);
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

export async function statInRoot(root: string, path: string): Promise<PathStat> {
  const host = await resolveInRoot(root, path, false);
  let st;
  try {
    st = await lstat(host);
  } catch {
    throw notFound(`Could not find the file ${path} in container`);
  }
  let linkTarget = '';
  if (st.isSymbolicLink()) {
    const t = await resolveInRoot(root, path, true);
    linkTarget = '/' + t.slice(root.length).replace(/^\/+/, '');
  }
  return { name: basename(path) || '/', size: st.size, mode: goMode(st), mtime: st.mtime.toISOString(), linkTarget };
}

/** A tar of `path` (the entry names start with its base name), streamed by GNU tar. */
export async function archiveFromRoot(root: string, path: string, signal: AbortSignal): Promise<{ stat: PathStat; stream: Readable }> {
  const stat = await statInRoot(root, path);
  const host = await resolveInRoot(root, path, false);
  const dir = dirname(host);
  const name = basename(host);
  const base = basename(posix.normalize(path)) || '.';
  const args = ['-c', '-f', '-', '--numeric-owner', '-C', dir];
  if (name !== base && base !== '.' && base !== '/') args.push(`--transform=s,^${escapeSed(name)},${escapeSed(base)},`);
  args.push(host === root ? '.' : name);
  // A stream as long as the tree is large: no deadline; the request's signal ends tar (SIGTERM).
  // Failures show as a short stream, as before: the result is not awaited (reject: false).
  const child = execa('tar', host === root ? ['-c', '-f', '-', '--numeric-owner', '-C', root, '.'] : args, {
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

function escapeSed(s: string): string {
  return s.replace(/[\\,.*[\]^$]/g, '\\$&');
}

/** Extract a tar into directory `path` of the root; every entry stays inside the root. */
export async function extractToRoot(
  root: string,
  path: string,
  body: Readable,
  opts: { noOverwriteDirNonDir: boolean; copyUIDGID: boolean },
  signal: AbortSignal,
): Promise<void> {
  const destHost = await resolveInRoot(root, path, true);
  let st;
  try {
    st = await lstat(destHost);
  } catch {
    throw notFound(`Could not find the file ${path} in container`);
  }
  if (!st.isDirectory()) throw invalidArgument('extraction point is not a directory');
  const destInside = '/' + destHost.slice(root.length).replace(/^\/+/, '');
  const ex = tar.extract();
  const work = (async () => {
    for await (const entry of ex) {
      const h = entry.header;
      const rel = posix.normalize('/' + h.name);
      const insidePath = posix.join(destInside, rel);
      const parentHost = await resolveInRoot(root, posix.dirname(insidePath), true);
      const target = join(parentHost, posix.basename(insidePath));
      if (rel === '/') {
        entry.resume();
        continue;
      }
      await mkdir(parentHost, { recursive: true });
      const existing = await lstat(target).catch(() => null);
      if (existing && opts.noOverwriteDirNonDir) {
        if (existing.isDirectory() && h.type !== 'directory') throw invalidArgument(`cannot overwrite directory "${insidePath}" with non-directory`);
        if (!existing.isDirectory() && h.type === 'directory') throw invalidArgument(`cannot overwrite non-directory "${insidePath}" with directory`);
      }
      if (existing && !(existing.isDirectory() && h.type === 'directory')) await rm(target, { recursive: true, force: true });
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
          const src = await resolveInRoot(root, posix.join(destInside, posix.normalize('/' + (h.linkname ?? ''))), false);
          await link(src, target);
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
      await lchown(target, uid, gid).catch(() => {});
    }
  })();
  await Promise.all([pipeline(body, ex, { signal }), work]);
}
