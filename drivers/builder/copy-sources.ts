// The sources of a COPY/ADD: expanding wildcards against the build context, resolving each to
// a file or directory inside it, and the digest the build cache keys on.
import { createHash, type Hash } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { lstat, readdir, readlink, stat } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { invalidArgument } from '../../lib/errors.ts';
import { resolveInRoot } from '../sys/rootfs-files.ts';
import { compilePattern, escapes, hasWildcards } from './copy-paths.ts';

export interface ResolvedSource {
  /** The source as written (or the wildcard it matched). */
  original: string;
  /** Its cleaned path relative to srcRoot, as named ('.' for the root): a file keeps this base name. */
  rel: string;
  /** The host path, symlinks followed inside srcRoot. */
  abs: string;
  isDir: boolean;
}

interface SourceOptions {
  instruction: 'COPY' | 'ADD';
  srcRoot: string;
  sources: string[];
}

/** The reference trims one leading '/' and a leading './', and reports paths that way. */
function trimSource(src: string): string {
  let p = src.length > 1 && src.startsWith('/') ? src.slice(1) : src;
  if (p.startsWith('./')) p = p.slice(2);
  return p;
}

async function resolveOne(o: SourceOptions, original: string, p: string): Promise<ResolvedSource> {
  if (escapes(p)) throw invalidArgument(`${o.instruction} failed: forbidden path outside the build context: ${p} ()`);
  const abs = await resolveInRoot(o.srcRoot, p);
  let st: Stats;
  try {
    st = await stat(abs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    throw invalidArgument(
      `${o.instruction} failed: file not found in build context or excluded by .dockerignore: stat ${p}: file does not exist`,
    );
  }
  const rel = posix.normalize(p === '' || p === '/' ? '.' : p).replace(/\/+$/, '') || '.';
  return { original, rel, abs, isDir: st.isDirectory() };
}

/** Paths in srcRoot matching the pattern, in the reference's walk order (sorted per directory). */
async function expand(srcRoot: string, pattern: string): Promise<string[]> {
  const segs = compilePattern(posix.normalize(pattern).replace(/\/+$/, ''));
  if (!segs) return [];
  const out: string[] = [];
  // A segment never matches '/', so only paths as deep as the pattern can match, and a directory
  // is only worth entering when its path matches the pattern's leading segments.
  const visit = async (rel: string[]): Promise<void> => {
    let names: string[];
    try {
      names = (await readdir(join(srcRoot, ...rel))).sort();
    } catch {
      return;
    }
    const re = segs[rel.length]!;
    for (const name of names) {
      if (!re.test(name)) continue;
      const child = [...rel, name];
      if (child.length === segs.length) out.push(child.join('/'));
      else if ((await lstat(join(srcRoot, ...child))).isDirectory()) await visit(child);
    }
  };
  await visit([]);
  return out;
}

/** The files each source names (after wildcard expansion), checked before anything is written. */
export async function resolveSources(o: SourceOptions): Promise<ResolvedSource[]> {
  const out: ResolvedSource[] = [];
  for (const src of o.sources) {
    const p = trimSource(src);
    if (hasWildcards(p)) {
      for (const rel of await expand(o.srcRoot, p)) out.push(await resolveOne(o, src, rel));
    } else {
      out.push(await resolveOne(o, src, p));
    }
  }
  if (out.length === 0) throw invalidArgument(`${o.instruction} failed: no source files were specified`);
  return out;
}

function hashFile(h: Hash, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    createReadStream(path)
      .on('data', (c) => h.update(c))
      .on('end', resolve)
      .on('error', reject);
  });
}

/** One entry's digest: its name, type and permission bits, then its content or link target. */
async function entryHash(name: string, path: string, st: Stats): Promise<string> {
  const h = createHash('sha256');
  const kind = st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : 'file';
  h.update(`${kind}\0${name}\0${(st.mode & 0o7777).toString(8)}\0`);
  if (kind === 'file') await hashFile(h, path);
  else if (kind === 'symlink') h.update(await readlink(path));
  return h.digest('hex');
}

/** The entries a directory copy writes (what copyTree copies), hashed in walk order. */
async function treeHashes(dir: string, prefix: string, out: string[]): Promise<void> {
  for (const name of (await readdir(dir)).sort()) {
    const path = join(dir, name);
    const st = await lstat(path);
    if (!st.isDirectory() && !st.isFile() && !st.isSymbolicLink()) continue;
    const rel = prefix ? `${prefix}/${name}` : name;
    out.push(await entryHash(rel, path, st));
    if (st.isDirectory()) await treeHashes(path, rel, out);
  }
}

const hashList = (prefix: string, list: string[]) =>
  `${prefix}:${createHash('sha256').update(list.join(',')).digest('hex')}`;

async function sourceHash(s: ResolvedSource): Promise<string> {
  if (!s.isDir) return `file:${await entryHash(posix.basename(s.rel), s.abs, await stat(s.abs))}`;
  const list: string[] = [];
  await treeHashes(s.abs, '', list);
  return hashList('dir', list);
}

/** A digest of what would be copied (content, names, modes — not mtimes, not owners). */
export async function sourcesChecksum(sources: ResolvedSource[]): Promise<string> {
  const hashes: string[] = [];
  for (const s of sources) hashes.push(await sourceHash(s));
  return hashes.length === 1 ? hashes[0]! : hashList('multi', hashes);
}
