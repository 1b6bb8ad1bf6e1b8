// Decodes one json-file log line into an entry: a byte-level fast path for the layout our writer
// produces ({"log":"...","stream":"...","time":"..."}), JSON.parse for anything else. The reader
// (./reader.ts) finds the lines; this turns each into its stream, bytes and time.
import type { LogEntry } from './reader.ts';

const PREFIX = Buffer.from('{"log":"');
const STREAM_KEY = Buffer.from(',"stream":"');
const TIME_KEY = Buffer.from('","time":"');

let scratch = Buffer.allocUnsafe(64 * 1024);

function hex4(buf: Buffer, i: number): number {
  let v = 0;
  for (let k = 0; k < 4; k++) {
    const c = buf[i + k]!;
    const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
    if (d < 0) return -1;
    v = (v << 4) | d;
  }
  return v;
}

function putUtf8(out: Buffer, o: number, cp: number): number {
  if (cp < 0x80) out[o++] = cp;
  else if (cp < 0x800) {
    out[o++] = 0xc0 | (cp >> 6);
    out[o++] = 0x80 | (cp & 0x3f);
  } else if (cp < 0x10000) {
    out[o++] = 0xe0 | (cp >> 12);
    out[o++] = 0x80 | ((cp >> 6) & 0x3f);
    out[o++] = 0x80 | (cp & 0x3f);
  } else {
    out[o++] = 0xf0 | (cp >> 18);
    out[o++] = 0x80 | ((cp >> 12) & 0x3f);
    out[o++] = 0x80 | ((cp >> 6) & 0x3f);
    out[o++] = 0x80 | (cp & 0x3f);
  }
  return o;
}

/** Short literal comparison; a JS loop beats a native call at these lengths. */
function matchAt(buf: Buffer, at: number, lit: Buffer): boolean {
  const n = lit.length;
  if (at + n > buf.length) return false;
  for (let k = 0; k < n; k++) if (buf[at + k] !== lit[k]) return false;
  return true;
}

/** The reference writes times with trailing zeros trimmed; entries always carry 9 digits. */
function normalizeTime(t: string): string {
  if (t.length === 30 && t.charCodeAt(29) === 0x5a) return t;
  const ms = Date.parse(t);
  if (Number.isNaN(ms)) return t;
  const m = /\.(\d+)/.exec(t);
  const frac = (m ? m[1]! : '').padEnd(9, '0').slice(0, 9);
  return `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}.${frac}Z`;
}

function slowDecode(text: string): LogEntry | null {
  try {
    const o = JSON.parse(text) as { log?: unknown; stream?: unknown; time?: unknown; attrs?: unknown };
    if (typeof o.log !== 'string' || typeof o.time !== 'string') return null;
    const e: LogEntry = { stream: o.stream === 'stderr' ? 'stderr' : 'stdout', line: Buffer.from(o.log), time: normalizeTime(o.time) };
    if (o.attrs && typeof o.attrs === 'object') e.attrs = o.attrs as Record<string, string>;
    return e;
  } catch {
    return null;
  }
}

/**
 * Position of the next backslash at or after `from` in the buffer being decoded. Lines are
 * decoded in order, so the answer of one search serves until it is passed (keeps lines without
 * any backslash from searching ahead again and again). Reset whenever the buffer is refilled.
 */
export class BackslashIndex {
  private buf: Buffer | null = null;
  private at = -1;
  reset(): void {
    this.buf = null;
    this.at = -1;
  }
  next(buf: Buffer, from: number): number {
    if (buf !== this.buf || this.at === -1 || (this.at >= 0 && this.at < from)) {
      this.buf = buf;
      const x = buf.indexOf(0x5c, from);
      this.at = x < 0 ? -2 : x; // -2: none until the end of the buffer
    }
    return this.at < 0 ? -1 : this.at;
  }
}

const sharedIndex = new BackslashIndex();

function decodeEscapes(buf: Buffer, i: number, e: number, bsIndex: BackslashIndex): { out: Buffer; len: number; end: number } | null {
  if (scratch.length < e - i) scratch = Buffer.allocUnsafe(2 * (e - i));
  const out = scratch;
  let o = 0;
  for (;;) {
    const q = buf.indexOf(0x22, i);
    if (q < 0 || q >= e) return null;
    const bs = bsIndex.next(buf, i);
    if (bs < 0 || bs > q) {
      o += buf.copy(out, o, i, q);
      return { out, len: o, end: q };
    }
    o += buf.copy(out, o, i, bs);
    const c = buf[bs + 1];
    i = bs + 2;
    switch (c) {
      case 0x6e: out[o++] = 0x0a; break; // \n
      case 0x74: out[o++] = 0x09; break; // \t
      case 0x72: out[o++] = 0x0d; break; // \r
      case 0x22: out[o++] = 0x22; break;
      case 0x5c: out[o++] = 0x5c; break;
      case 0x2f: out[o++] = 0x2f; break;
      case 0x62: out[o++] = 0x08; break;
      case 0x66: out[o++] = 0x0c; break;
      case 0x75: {
        let cp = hex4(buf, i);
        if (cp < 0) return null;
        i += 4;
        if (cp >= 0xd800 && cp < 0xdc00 && buf[i] === 0x5c && buf[i + 1] === 0x75) {
          const lo = hex4(buf, i + 2);
          if (lo >= 0xdc00 && lo < 0xe000) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            i += 6;
          }
        }
        if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd; // lone surrogate
        o = putUtf8(out, o, cp);
        break;
      }
      default:
        return null;
    }
  }
}

/** One line buf[s, e) (without its newline) → entry; null for garbage. */
export function decodeLine(buf: Buffer, s: number, e: number, bsIndex: BackslashIndex = sharedIndex): LogEntry | null {
  if (bsIndex === sharedIndex) sharedIndex.reset();
  if (!matchAt(buf, s, PREFIX)) return slowDecode(buf.toString('utf8', s, e));
  const i = s + PREFIX.length;
  let line: Buffer;
  let q: number;
  // Common case: the payload's only escape is its final "\n".
  const q0 = buf.indexOf(0x22, i);
  const bs0 = q0 < 0 ? -1 : bsIndex.next(buf, i);
  if (q0 >= 0 && q0 < e && bs0 === q0 - 2 && buf[q0 - 1] === 0x6e && bs0 >= i) {
    line = Buffer.allocUnsafe(bs0 - i + 1);
    buf.copy(line, 0, i, bs0);
    line[bs0 - i] = 0x0a;
    q = q0;
  } else if (q0 >= 0 && q0 < e && (bs0 < 0 || bs0 > q0)) {
    line = Buffer.allocUnsafe(q0 - i);
    buf.copy(line, 0, i, q0);
    q = q0;
  } else {
    const d = decodeEscapes(buf, i, e, bsIndex);
    if (!d) return slowDecode(buf.toString('utf8', s, e));
    line = Buffer.allocUnsafe(d.len);
    d.out.copy(line, 0, 0, d.len);
    q = d.end;
  }
  let p = q + 1;
  if (!matchAt(buf, p, STREAM_KEY)) return slowDecode(buf.toString('utf8', s, e));
  p += STREAM_KEY.length;
  let stream: 'stdout' | 'stderr';
  if (buf[p + 3] === 0x6f && buf[p + 6] === 0x22) stream = 'stdout';
  else if (buf[p + 3] === 0x65 && buf[p + 6] === 0x22) stream = 'stderr';
  else return slowDecode(buf.toString('utf8', s, e));
  p += 6;
  if (!matchAt(buf, p, TIME_KEY)) return slowDecode(buf.toString('utf8', s, e));
  p += TIME_KEY.length;
  const tEnd = buf.indexOf(0x22, p);
  if (tEnd < 0 || tEnd >= e || buf[tEnd + 1] !== 0x7d) return slowDecode(buf.toString('utf8', s, e));
  return { stream, line, time: normalizeTime(buf.toString('latin1', p, tEnd)) };
}
