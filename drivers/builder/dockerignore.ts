// `.dockerignore` for a build context: parsing the file into patterns and matching context paths
// against them, as the reference's ignore-file reader and pattern matcher do. Patterns use Go's
// filepath.Match syntax plus `**` for any number of directories; a pattern matching a parent
// directory matches everything below it; later patterns win, a leading `!` re-includes.
import { invalidArgument } from '../../lib/errors.ts';

/** Go's path.Clean on a slash-separated path. */
export function cleanPath(p: string): string {
  const rooted = p.startsWith('/');
  const out: string[] = [];
  for (const c of p.split('/')) {
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (!rooted) out.push('..');
      continue;
    }
    out.push(c);
  }
  const s = out.join('/');
  if (rooted) return `/${s}`;
  return s === '' ? '.' : s;
}

/** The patterns of a `.dockerignore` file, exceptions kept with their leading `!`. */
export function parseDockerignore(text: string): string[] {
  const out: string[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  for (const line of lines) {
    // As the reference: a comment only when `#` is the very first character, before trimming.
    if (line.startsWith('#')) continue;
    let p = line.trim();
    if (p === '') continue;
    const invert = p.startsWith('!');
    if (invert) p = p.slice(1).trim();
    if (p !== '') {
      p = cleanPath(p);
      if (p.length > 1 && p.startsWith('/')) p = p.slice(1);
    }
    out.push(invert ? `!${p}` : p);
  }
  return out;
}

// A literal character in a regex, in a class or out of it (code point escapes are valid in both).
const lit = (ch: string) => (/^[A-Za-z0-9_]$/.test(ch) ? ch : `\\u{${ch.codePointAt(0)!.toString(16)}}`);

/** A Go filepath.Match class starting at pattern[i] === '['; the JS class source and the index after `]`. */
function classAt(p: string[], start: number, pattern: string): [string, number] {
  let i = start + 1;
  let negated = false;
  if (p[i] === '^') {
    negated = true;
    i++;
  }
  const bad = () => invalidArgument(`syntax error in pattern ${JSON.stringify(pattern)}`);
  // One class character: not an unescaped `-` or `]`, a `\` escapes the next.
  const char = (): string => {
    let c = p[i];
    if (c === undefined || c === '-' || c === ']') throw bad();
    if (c === '\\') {
      c = p[++i];
      if (c === undefined) throw bad();
    }
    i++;
    return c;
  };
  let body = '';
  let ranges = 0;
  for (;;) {
    if (p[i] === ']' && ranges > 0) break;
    const lo = char();
    let hi = lo;
    if (p[i] === '-') {
      i++;
      hi = char();
    }
    // Go matches nothing with a reversed range; a JS regex would not compile.
    if (lo.codePointAt(0)! <= hi.codePointAt(0)!) body += lo === hi ? lit(lo) : `${lit(lo)}-${lit(hi)}`;
    ranges++;
  }
  return [negated ? `[^${body}]` : `[${body}]`, i + 1];
}

/** The regex source (unanchored) for a cleaned pattern, translated as the reference does. */
function translate(pattern: string): string {
  const p = [...pattern];
  let out = '';
  for (let i = 0; i < p.length;) {
    const ch = p[i]!;
    if (ch === '*') {
      if (p[i + 1] !== '*') {
        out += '[^/]*';
        i++;
        continue;
      }
      i += 2;
      if (p[i] === '/') i++; // `**/` is `**`
      // `**` at the end matches everything, elsewhere any number of whole directories (even none).
      out += i >= p.length ? '.*' : '(?:.*/)?';
    } else if (ch === '?') {
      out += '[^/]';
      i++;
    } else if (ch === '\\') {
      if (i + 1 >= p.length) throw invalidArgument(`syntax error in pattern ${JSON.stringify(pattern)}`);
      out += lit(p[i + 1]!);
      i += 2;
    } else if (ch === '[') {
      const [cls, next] = classAt(p, i, pattern);
      out += cls;
      i = next;
    } else {
      out += lit(ch);
      i++;
    }
  }
  return out;
}

interface Pattern {
  text: string;
  exclusion: boolean;
  re: RegExp;
}

export class IgnoreMatcher {
  private readonly patterns: Pattern[] = [];

  constructor(patterns: string[]) {
    for (const raw of patterns) {
      let p = raw.trim();
      if (p === '') continue;
      const exclusion = p.startsWith('!');
      if (exclusion) {
        p = p.slice(1);
        if (p === '') throw invalidArgument('illegal exclusion pattern: "!"');
      }
      p = cleanPath(p);
      this.patterns.push({ text: p, exclusion, re: new RegExp(`^${translate(p)}$`, 'su') });
    }
  }

  get empty(): boolean {
    return this.patterns.length === 0;
  }

  /** Whether `relPath` (slash-separated, relative to the context root) is excluded. */
  matches(relPath: string): boolean {
    const file = cleanPath(relPath);
    const parts = file.split('/');
    let matched = false;
    for (const pat of this.patterns) {
      // An exclusion can only undo a match, an inclusion only make one.
      if (pat.exclusion !== matched) continue;
      let hit = pat.re.test(file);
      for (let i = 1; !hit && i < parts.length; i++) hit = pat.re.test(parts.slice(0, i).join('/'));
      if (hit) matched = !pat.exclusion;
    }
    return matched;
  }

  /**
   * Whether some `!` pattern could re-include a path below the excluded directory `dirRel`: only
   * when none can may the whole directory be dropped unvisited. Errs towards yes (`**`, odd escapes).
   */
  canReincludeUnder(dirRel: string): boolean {
    const dir = cleanPath(dirRel).split('/');
    for (const pat of this.patterns) {
      if (!pat.exclusion) continue;
      if (pat.text.includes('**') || pat.text.includes('\\')) return true;
      const comps = pat.text.split('/');
      let i = 0;
      try {
        for (; i < comps.length && i < dir.length; i++) {
          if (!new RegExp(`^${translate(comps[i]!)}$`, 'su').test(dir[i]!)) break;
        }
      } catch {
        return true; // a class split by `/`: not worth reasoning about
      }
      // Matched every directory component and has more (or matches an ancestor outright).
      if (i === dir.length || i === comps.length) return true;
    }
    return false;
  }
}
