// Path helpers for COPY/ADD: resolving a path inside a root the way a chroot would (symlinks
// followed but clamped at the root, `..` never above it), creating missing directories that way,
// and Go filepath.Match wildcards.
import { lchown, lstat, mkdir, chmod, readlink } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { invalidArgument } from '../../lib/errors.ts';

export interface Ids {
  uid: number;
  gid: number;
}

const MAX_HOPS = 255;

const parts = (p: string) => p.split('/').filter((c) => c !== '' && c !== '.');

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/**
 * Walk `p` (taken as absolute inside `root`) component by component, following every symlink
 * inside root and creating a missing component.
 * Returns the components of the resolved path, relative to root.
 */
async function walk(root: string, p: string, create: Ids): Promise<string[]> {
  // As the reference's FollowSymlinkInScope, the path itself is cleaned lexically first; only
  // symlink targets have their `..` taken after the link.
  let todo = parts(posix.normalize('/' + p));
  const cur: string[] = [];
  let hops = 0;
  while (todo.length > 0) {
    const c = todo.shift()!;
    if (c === '..') {
      cur.pop();
      continue;
    }
    const host = join(root, ...cur, c);
    let st;
    try {
      st = await lstat(host);
    } catch (err) {
      if (!isMissing(err)) throw err;
      await mkdir(host);
      await lchown(host, create.uid, create.gid);
      // Not the umask's idea of 0755.
      await chmod(host, 0o755);
      cur.push(c);
      continue;
    }
    if (st.isSymbolicLink()) {
      if (++hops > MAX_HOPS) throw invalidArgument(`too many levels of symbolic links resolving ${p}`);
      const target = await readlink(host);
      if (target.startsWith('/')) cur.length = 0;
      todo = [...parts(target), ...todo];
      continue;
    }
    if (!st.isDirectory()) {
      throw invalidArgument(`failed to copy files: mkdir ${'/' + [...cur, c].join('/')}: not a directory`);
    }
    cur.push(c);
  }
  return cur;
}

/**
 * The host path of directory `p` inside `root` (symlinks followed without leaving root, as
 * drivers/sys/rootfs-files.ts resolveInRoot does), creating missing directories (mode 0755,
 * owned by `ids`) on the way.
 */
export async function mkdirInRoot(root: string, p: string, ids: Ids): Promise<string> {
  return join(root, ...(await walk(root, p, ids)));
}

/** Whether a lexically cleaned relative path leaves its base. */
export function escapes(rel: string): boolean {
  const n = posix.normalize(rel);
  return n === '..' || n.startsWith('../');
}

/** As the reference's containsWildcards: `*`, `?` or `[` not escaped by a backslash. */
export function hasWildcards(p: string): boolean {
  for (let i = 0; i < p.length; i++) {
    const ch = p[i];
    if (ch === '\\') i++;
    else if (ch === '*' || ch === '?' || ch === '[') return true;
  }
  return false;
}

const code = (ch: string) => `\\u{${ch.codePointAt(0)!.toString(16)}}`;

/**
 * One path segment of a Go filepath.Match pattern as an anchored RegExp; null for a malformed
 * pattern (which, as in the reference, matches nothing).
 */
export function segmentRegExp(seg: string): RegExp | null {
  const chars = [...seg];
  let re = '';
  let i = 0;
  const escaped = (): string | null => {
    if (chars[i] === '\\') i++;
    return i < chars.length ? chars[i++]! : null;
  };
  while (i < chars.length) {
    const ch = chars[i]!;
    if (ch === '*') {
      re += '[^/]*';
      i++;
    } else if (ch === '?') {
      re += '[^/]';
      i++;
    } else if (ch === '[') {
      i++;
      let cls = '';
      if (chars[i] === '^') {
        cls = '^';
        i++;
      }
      let n = 0;
      for (;;) {
        if (i >= chars.length) return null;
        if (chars[i] === ']' && n > 0) {
          i++;
          break;
        }
        // As Go's getEsc: an unescaped '-' or ']' cannot start or end a range.
        if (chars[i] === '-' || chars[i] === ']') return null;
        const lo = escaped();
        if (lo === null) return null;
        if (chars[i] === '-') {
          i++;
          if (chars[i] === '-' || chars[i] === ']') return null;
          const hi = escaped();
          if (hi === null) return null;
          cls += `${code(lo)}-${code(hi)}`;
        } else {
          cls += code(lo);
        }
        n++;
      }
      re += `[${cls}]`;
    } else {
      const lit = escaped();
      if (lit === null) return null; // a trailing backslash
      re += code(lit);
    }
  }
  try {
    return new RegExp(`^${re}$`, 'u');
  } catch {
    return null;
  }
}

/** The pattern's segments as matchers, or null when it is malformed. */
export function compilePattern(pattern: string): RegExp[] | null {
  const out: RegExp[] = [];
  for (const seg of pattern.split('/')) {
    const re = segmentRegExp(seg);
    if (!re) return null;
    out.push(re);
  }
  return out;
}
