// Dockerfile text → one Node per instruction, as the reference's parser.Parse: parser directives,
// comments, line continuations with the escape token, and per-instruction argument shapes.
// No variable expansion happens here (that is lex.ts, driven by the builder).
import { DockerfileError } from './errors.ts';
import { extractFlags, parseJSONArray, parseWords } from './words.ts';

export type EscapeToken = '\\' | '`';

export interface Node {
  cmd: string; // lower-case instruction name
  name: string; // the instruction name as written (errors quote it)
  original: string; // the line as written, continuations joined
  flags: string[];
  // ENV/LABEL: [key, value, sep]* where sep is '=' or '' (legacy `ENV key value`);
  // ONBUILD: [innerName, ...innerArgs]; HEALTHCHECK: [type, ...cmd]; others: the words.
  args: string[];
  json: boolean; // exec form
  child?: Node; // ONBUILD's inner instruction
  startLine: number;
  endLine: number;
}

export interface ParseResult {
  directives: { escape: EscapeToken; syntax?: string };
  instructions: Node[];
  warnings: string[];
}

const WHITESPACE = /[\t\v\f\r ]+/;
const DIRECTIVE = /^([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$/;
const VALID_DIRECTIVES = new Set(['syntax', 'escape', 'check']);

// Directives are only recognised in the unbroken run of comment lines at the top of the file.
class Directives {
  escape: EscapeToken = '\\';
  syntax: string | undefined;
  private done = false;
  private readonly seen = new Set<string>();
  private continuation = continuationRegex('\\');

  get continuationRe(): RegExp {
    return this.continuation;
  }

  // Returns true when the line was a directive (it is then not kept as a comment).
  consider(line: string): boolean {
    if (this.done) return false;
    const m = line.startsWith('#') ? DIRECTIVE.exec(line.slice(1).trimStart()) : null;
    const key = m?.[1].toLowerCase();
    if (!m || !key || !VALID_DIRECTIVES.has(key)) {
      this.done = true;
      return false;
    }
    if (this.seen.has(key)) throw new Error(`only one ${key} parser directive can be used`);
    this.seen.add(key);
    if (key === 'escape') {
      const v = m[2];
      if (v !== '`' && v !== '\\') throw new Error(`invalid escape token '${v}' does not match \` or \\`);
      this.escape = v;
      this.continuation = continuationRegex(v);
    } else if (key === 'syntax') this.syntax = m[2];
    return true;
  }
}

// A line ending in the escape token (not itself escaped), plus trailing blanks, continues.
function continuationRegex(esc: string): RegExp {
  const e = `\\${esc}`;
  return new RegExp(`([^${e}])${e}[ \\t]*$|^${e}[ \\t]*$`);
}

const isComment = (line: string) => line.trimStart().startsWith('#');

export function parseDockerfile(text: string): ParseResult {
  const d = new Directives();
  const lines = splitLines(text.startsWith('\uFEFF') ? text.slice(1) : text);
  const instructions: Node[] = [];
  const warnings: string[] = [];
  let current = 0;
  let i = 0;

  const processLine = (raw: string, stripLeft: boolean): string => {
    let line = raw.replace(/[\r\n]+$/, '');
    if (stripLeft) line = line.trimStart();
    try {
      d.consider(line);
    } catch (err) {
      throw new DockerfileError((err as Error).message, current);
    }
    return isComment(line) ? '' : line;
  };
  const trimContinuation = (line: string): [string, boolean] => {
    const re = d.continuationRe;
    return re.test(line) ? [line.replace(re, '$1'), false] : [line, true];
  };

  while (i < lines.length) {
    let [line, ended] = trimContinuation(processLine(lines[i++], true));
    current++;
    const start = current;
    if (ended && line === '') continue;
    let joined = line;
    let emptyContinuation = false;
    while (!ended && i < lines.length) {
      const raw = lines[i++];
      const processed = processLine(raw, false);
      current++;
      if (isComment(raw)) continue;
      if (processed.trimStart() === '') {
        emptyContinuation = true;
        continue;
      }
      [line, ended] = trimContinuation(processed);
      joined += line;
    }
    if (emptyContinuation) warnings.push(`Empty continuation line found in: ${joined}`);
    let node: Node;
    try {
      node = nodeFromLine(joined, d.escape);
    } catch (err) {
      if (err instanceof DockerfileError) throw err;
      throw new DockerfileError((err as Error).message, start, current);
    }
    node.startLine = start;
    node.endLine = current;
    instructions.push(node);
  }
  if (instructions.length === 0) throw new DockerfileError('file with no instructions', current);
  return { directives: { escape: d.escape, syntax: d.syntax }, instructions, warnings };
}

// Lines keep their terminator so a final line without one is still a line; an empty tail is not.
function splitLines(text: string): string[] {
  const out = text.split(/(?<=\n)/);
  return out.length === 1 && out[0] === '' ? [] : out;
}

function nodeFromLine(line: string, escape: EscapeToken): Node {
  const trimmed = line.trim();
  const m = WHITESPACE.exec(trimmed);
  const name = m ? trimmed.slice(0, m.index) : trimmed;
  let flags: string[] = [];
  let rest = '';
  if (m) {
    const extracted = extractFlags(trimmed.slice(m.index + m[0].length), escape);
    flags = extracted.flags;
    rest = extracted.rest.trim();
  }
  const cmd = name.toLowerCase();
  const node: Node = { cmd, name, original: line, flags, args: [], json: false, startLine: 0, endLine: 0 };
  switch (cmd) {
    case 'run':
    case 'cmd':
    case 'entrypoint':
    case 'shell':
      Object.assign(node, maybeJSON(rest));
      break;
    case 'add':
    case 'copy':
    case 'volume':
      Object.assign(node, maybeJSONToList(rest));
      break;
    case 'env':
    case 'label':
      node.args = nameVal(rest, cmd === 'env' ? 'ENV' : 'LABEL', escape);
      break;
    case 'arg':
      node.args = parseWords(rest, escape);
      break;
    case 'expose':
    case 'from':
      node.args = splitWhitespace(rest);
      break;
    case 'maintainer':
    case 'stopsignal':
    case 'user':
    case 'workdir':
      node.args = rest === '' ? [] : [rest];
      break;
    case 'healthcheck':
      Object.assign(node, healthConfig(rest));
      break;
    case 'onbuild':
      if (rest !== '') {
        node.child = nodeFromLine(rest, escape);
        node.args = [node.child.name, ...node.child.args];
      }
      break;
    // Unknown instructions parse to no arguments; instructions.ts refuses them.
  }
  return node;
}

const splitWhitespace = (rest: string) => (rest === '' ? [] : rest.split(WHITESPACE));

function maybeJSON(rest: string): { args: string[]; json: boolean } {
  if (rest === '') return { args: [], json: false };
  const arr = parseJSONArray(rest);
  return arr ? { args: arr, json: true } : { args: [rest], json: false };
}

function maybeJSONToList(rest: string): { args: string[]; json: boolean } {
  const arr = parseJSONArray(rest);
  return arr ? { args: arr, json: true } : { args: splitWhitespace(rest), json: false };
}

function healthConfig(rest: string): { args: string[]; json: boolean } {
  const m = /\s/.exec(rest);
  const sep = m ? m.index : rest.length;
  if (sep === 0) return { args: [], json: false };
  const cmd = maybeJSON(rest.slice(sep).trimStart());
  return { args: [rest.slice(0, sep), ...cmd.args], json: cmd.json };
}

// `KEY=VALUE ...` or the legacy `KEY VALUE` (everything after the first blank is the value).
function nameVal(rest: string, key: string, escape: string): string[] {
  const words = parseWords(rest, escape);
  if (words.length === 0) return [];
  if (!words[0].includes('=')) {
    const m = WHITESPACE.exec(rest);
    if (!m) throw new Error(`${key} must have two arguments`);
    return [rest.slice(0, m.index), rest.slice(m.index + m[0].length), ''];
  }
  const out: string[] = [];
  for (const word of words) {
    const eq = word.indexOf('=');
    if (eq < 0) {
      throw new Error(`Syntax error - can't find = in ${JSON.stringify(word)}. Must be of the form: name=value`);
    }
    out.push(word.slice(0, eq), word.slice(eq + 1), '=');
  }
  return out;
}
