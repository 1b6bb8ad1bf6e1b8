// Shell-style word expansion for Dockerfile instructions (the reference's shell.Lex): `$VAR`,
// `${VAR}`, `${VAR:-w}`, `${VAR-w}`, `${VAR:+w}`, `${VAR+w}`, `${VAR:?w}`, quotes and the escape
// token. processWord keeps spaces (one value, e.g. ENV); processWords splits into words the way a
// shell would after expansion (e.g. EXPOSE, or the args of COPY).
// Not yet supported: the `#`, `%` and `/` pattern modifiers (they throw "unsupported modifier").

export type EnvLookup = (name: string) => string | undefined;

export class LexError extends Error {}

const EOF = '';
const SPECIAL_PARAMS = new Set(['@', '*', '#', '?', '-', '$', '!', '0']);
const isSpace = (ch: string) => /^\s$/u.test(ch);
const isNameChar = (ch: string) => /^[\p{L}\p{Nd}_]$/u.test(ch);
const isDigit = (ch: string) => /^\p{Nd}$/u.test(ch);

// Collects the word list while the flat result is built: text from a variable is split on
// whitespace, quoted text and escaped characters are kept whole.
class Words {
  words: string[] = [];
  buf = '';
  inWord = false;
  addChar(ch: string): void {
    if (isSpace(ch)) {
      if (this.inWord && this.buf !== '') {
        this.words.push(this.buf);
        this.buf = '';
        this.inWord = false;
      }
    } else this.addRaw(ch);
  }
  addRaw(s: string): void {
    this.buf += s;
    this.inWord = true;
  }
  addString(s: string): void {
    for (const ch of s) this.addChar(ch);
  }
  finish(): string[] {
    if (this.buf !== '') this.words.push(this.buf);
    return this.words;
  }
}

class Scanner {
  private readonly chars: string[];
  private pos = 0;
  constructor(text: string) {
    this.chars = Array.from(text);
  }
  peek(): string {
    return this.chars[this.pos] ?? EOF;
  }
  next(): string {
    return this.chars[this.pos++] ?? EOF;
  }
}

export class ShellLex {
  readonly escapeToken: string;
  constructor(escapeToken: '\\' | '`' = '\\') {
    this.escapeToken = escapeToken;
  }

  processWord(word: string, env: EnvLookup): string {
    return this.run(word, env).result;
  }

  processWords(word: string, env: EnvLookup): string[] {
    return this.run(word, env).words;
  }

  private run(source: string, env: EnvLookup): { result: string; words: string[] } {
    try {
      return new Expander(new Scanner(source), env, this.escapeToken).stopOn(EOF);
    } catch (err) {
      if (err instanceof LexError) throw new LexError(`failed to process ${goQuote(source)}: ${err.message}`);
      throw err;
    }
  }
}

class Expander {
  private readonly s: Scanner;
  private readonly env: EnvLookup;
  private readonly esc: string;
  constructor(s: Scanner, env: EnvLookup, esc: string) {
    this.s = s;
    this.env = env;
    this.esc = esc;
  }

  stopOn(stop: string): { result: string; words: string[] } {
    let result = '';
    const words = new Words();
    while (this.s.peek() !== EOF) {
      const ch = this.s.peek();
      if (stop !== EOF && ch === stop) {
        this.s.next();
        return { result, words: words.finish() };
      }
      if (ch === '$') {
        const v = this.dollar();
        result += v;
        words.addString(v);
      } else if (ch === "'" || ch === '"') {
        const v = ch === "'" ? this.singleQuote() : this.doubleQuote();
        result += v;
        words.addRaw(v);
      } else {
        let c = this.s.next();
        if (c === this.esc) {
          c = this.s.next();
          if (c === EOF) break;
          words.addRaw(c);
        } else words.addChar(c);
        result += c;
      }
    }
    if (stop !== EOF) throw new LexError(`unexpected end of statement while looking for matching ${stop}`);
    return { result, words: words.finish() };
  }

  private singleQuote(): string {
    this.s.next();
    let out = '';
    for (;;) {
      const ch = this.s.next();
      if (ch === EOF) throw new LexError('unexpected end of statement while looking for matching single-quote');
      if (ch === "'") return out;
      out += ch;
    }
  }

  // Inside double quotes only `"`, `$` and the escape token itself can be escaped; any other
  // escape is kept literally, as in a POSIX shell.
  private doubleQuote(): string {
    this.s.next();
    let out = '';
    for (;;) {
      const peek = this.s.peek();
      if (peek === EOF) throw new LexError('unexpected end of statement while looking for matching double-quote');
      if (peek === '"') {
        this.s.next();
        return out;
      }
      if (peek === '$') {
        out += this.dollar();
        continue;
      }
      let ch = this.s.next();
      if (ch === this.esc) {
        const after = this.s.peek();
        if (after === EOF) continue;
        if (after === '"' || after === '$' || after === this.esc) ch = this.s.next();
      }
      out += ch;
    }
  }

  private dollar(): string {
    this.s.next();
    if (this.s.peek() !== '{') {
      const name = this.name();
      return name === '' ? '$' : (this.env(name) ?? '');
    }
    this.s.next();
    const first = this.s.peek();
    if (first === EOF) throw new LexError("syntax error: missing '}'");
    if (first === '{' || first === '}' || first === ':') throw new LexError('syntax error: bad substitution');
    const name = this.name();
    let ch = this.s.next();
    if (ch === '}') return this.env(name) ?? '';
    // Go renders the scanner's EOF as U+FFFD in this message.
    let modifier = ch === EOF ? '\uFFFD' : ch;
    let nullIsUnset = false;
    if (ch === ':') {
      nullIsUnset = true;
      ch = this.s.next();
      modifier += ch === EOF ? '\uFFFD' : ch;
    }
    if (ch !== '-' && ch !== '+' && ch !== '?') {
      throw new LexError(`unsupported modifier (${modifier}) in substitution`);
    }
    let word: string;
    try {
      word = this.stopOn('}').result;
    } catch (err) {
      if (this.s.peek() === EOF) throw new LexError("syntax error: missing '}'");
      throw err;
    }
    const value = this.env(name);
    const unset = value === undefined || (nullIsUnset && value === '');
    if (ch === '-') return unset ? word : (value ?? '');
    if (ch === '+') return unset ? '' : word;
    if (value === undefined) throw new LexError(`${name}: ${word || 'is not allowed to be unset'}`);
    if (nullIsUnset && value === '') throw new LexError(`${name}: ${word || 'is not allowed to be empty'}`);
    return value;
  }

  private name(): string {
    let name = '';
    while (this.s.peek() !== EOF) {
      const ch = this.s.peek();
      if (name === '' && isDigit(ch)) {
        while (isDigit(this.s.peek())) name += this.s.next();
        return name;
      }
      if (name === '' && SPECIAL_PARAMS.has(ch)) return this.s.next();
      if (!isNameChar(ch)) break;
      name += this.s.next();
    }
    return name;
  }
}

// Go's %q for the error text; JSON quoting matches it for printable text.
function goQuote(s: string): string {
  return JSON.stringify(s);
}

export function envLookup(env: Record<string, string> | Map<string, string>): EnvLookup {
  if (env instanceof Map) return (k) => env.get(k);
  return (k) => (Object.hasOwn(env, k) ? env[k] : undefined);
}
