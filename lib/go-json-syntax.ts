// The syntax error Go's encoding/json reports for a text that is not JSON, in its words. Go checks
// the whole text before it decodes anything, so a client of the reference daemon that sends a bad
// `filters` parameter reads exactly this (e.g. "invalid character 'x' looking for beginning of
// value"); JSON.parse's own messages differ from engine to engine.

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHex = (c: number) => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
const ESCAPES = new Set([...'"\\/bfnrtu'].map((c) => c.charCodeAt(0)));
const GO_ESCAPES: Record<number, string> = { 7: '\\a', 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r', 0x5c: '\\\\' };

/** Go's quoteChar: the byte as a Go single-quoted literal (strconv.Quote's escapes). */
function quoteChar(c: number): string {
  if (c === 0x27) return `'\\''`;
  if (c === 0x22) return `'"'`;
  const hex = (w: number) => c.toString(16).padStart(w, '0');
  let s: string;
  if (GO_ESCAPES[c]) s = GO_ESCAPES[c];
  else if (c < 0x20 || c === 0x7f) s = `\\x${hex(2)}`;
  else if ((c >= 0x80 && c <= 0xa0) || c === 0xad) s = `\\u${hex(4)}`;
  else s = String.fromCharCode(c);
  return `'${s}'`;
}

class Syntax extends Error {}
const EOF = 'unexpected end of JSON input';

/** Go's json.Valid verdict with its message: undefined when `text` is JSON. */
export function goJsonSyntaxError(text: string): string | undefined {
  const b = Buffer.from(text, 'utf8');
  let i = 0;
  const fail = (context: string): never => {
    throw new Syntax(i >= b.length ? EOF : `invalid character ${quoteChar(b[i]!)} ${context}`);
  };
  const skip = () => {
    while (i < b.length && WS.has(b[i]!)) i++;
  };
  const at = (c: string) => i < b.length && b[i] === c.charCodeAt(0);
  const digits = () => {
    while (i < b.length && isDigit(b[i]!)) i++;
  };

  function literal(word: string): void {
    i++;
    for (let k = 1; k < word.length; k++, i++) if (b[i] !== word.charCodeAt(k)) fail(`in literal ${word} (expecting '${word[k]}')`);
  }
  function string(): void {
    i++;
    for (;;) {
      if (i >= b.length) fail('');
      const c = b[i]!;
      if (c === 0x22) return void i++;
      if (c < 0x20) fail('in string literal');
      i++;
      if (c !== 0x5c) continue;
      if (i >= b.length || !ESCAPES.has(b[i]!)) fail('in string escape code');
      if (b[i++] !== 0x75) continue;
      for (let k = 0; k < 4; k++, i++) if (i >= b.length || !isHex(b[i]!)) fail('in \\u hexadecimal character escape');
    }
  }
  function number(): void {
    if (at('-')) {
      i++;
      if (i >= b.length || !isDigit(b[i]!)) fail('in numeric literal');
    }
    if (at('0')) i++;
    else digits();
    if (at('.')) {
      i++;
      if (i >= b.length || !isDigit(b[i]!)) fail('after decimal point in numeric literal');
      digits();
    }
    if (at('e') || at('E')) {
      i++;
      if (at('+') || at('-')) i++;
      if (i >= b.length || !isDigit(b[i]!)) fail('in exponent of numeric literal');
      digits();
    }
  }
  function value(): void {
    skip();
    if (i >= b.length) fail('');
    const c = String.fromCharCode(b[i]!);
    if (c === '{') return object();
    if (c === '[') return array();
    if (c === '"') return string();
    if (c === '-' || isDigit(b[i]!)) return number();
    if (c === 't' || c === 'f' || c === 'n') return literal(c === 't' ? 'true' : c === 'f' ? 'false' : 'null');
    fail('looking for beginning of value');
  }
  function object(): void {
    i++;
    skip();
    if (at('}')) return void i++;
    for (;;) {
      if (!at('"')) fail('looking for beginning of object key string');
      string();
      skip();
      if (!at(':')) fail('after object key');
      i++;
      value();
      skip();
      if (at('}')) return void i++;
      if (!at(',')) fail('after object key:value pair');
      i++;
      skip();
    }
  }
  function array(): void {
    i++;
    skip();
    if (at(']')) return void i++;
    for (;;) {
      value();
      skip();
      if (at(']')) return void i++;
      if (!at(',')) fail('after array element');
      i++;
    }
  }

  try {
    value();
    skip();
    if (i < b.length) fail('after top-level value');
    return undefined;
  } catch (err) {
    if (err instanceof Syntax) return err.message;
    throw err;
  }
}
