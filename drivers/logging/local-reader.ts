// Decoding of the `local` driver's files (./local.ts) for the log reader (./reader.ts): framed
// records read forwards in batches, and tail offsets found by walking the trailing lengths
// backwards, as the reference's getTailReader does.
import { LogEntry as LogEntryProto } from './gen/entry.ts';
import type { LogEntry } from './reader.ts';
import type { LogFileHandle } from './rotate.ts';

const READ_SIZE = 256 * 1024;
const FIRST_READ_SIZE = 16 * 1024;
/** The reference refuses records past 1 MB: a larger length means the file is not framed as expected. */
const MAX_RECORD = 1e6;

/** Whether `path` is in the `local` format: the local driver's …/local-logs/container.log or a remote driver's cache …/container-cached.log. */
export function isLocalLogPath(path: string): boolean {
  return path.endsWith('/local-logs/container.log') || path.endsWith('/container-cached.log');
}

/** RFC 3339 with 9 fractional digits of Unix nanoseconds. */
export function rfc3339OfNanos(ns: bigint): string {
  const sec = ns / 1000000000n;
  let frac = ns % 1000000000n;
  let s = sec;
  if (frac < 0n) {
    frac += 1000000000n;
    s -= 1n;
  }
  return `${new Date(Number(s) * 1000).toISOString().slice(0, 19)}.${String(frac).padStart(9, '0')}Z`;
}

/** One decoded record as an entry; the reader adds the "\n" back unless more of the line follows. */
export function entryOfRecord(body: Uint8Array): LogEntry | null {
  let p: LogEntryProto;
  try {
    p = LogEntryProto.decode(body);
  } catch {
    return null;
  }
  const more = p.partial && !p.partial_log_metadata?.last;
  const line = Buffer.allocUnsafe(p.line.length + (more ? 0 : 1));
  line.set(p.line, 0);
  if (!more) line[p.line.length] = 0x0a;
  const e: LogEntry = { stream: p.source === 'stderr' ? 'stderr' : 'stdout', line, time: rfc3339OfNanos(p.time_nano) };
  if (p.attrs.length > 0) e.attrs = Object.fromEntries(p.attrs.map((a) => [a.key, a.value]));
  return e;
}

/** Reads whole records from a file handle, remembering where the next read starts. */
export class RecordSource {
  fh: LogFileHandle;
  pos: number;
  private buf = Buffer.allocUnsafe(FIRST_READ_SIZE);
  private carry = 0;
  /** Set when the data cannot be framed: nothing more is read from this file. */
  private broken = false;

  constructor(fh: LogFileHandle, pos: number) {
    this.fh = fh;
    this.pos = pos;
  }

  async next(): Promise<LogEntry[] | null> {
    if (this.broken) return null;
    // Grow to hold at least the record in progress.
    let need = this.buf.length;
    if (this.carry >= 4) need = Math.max(need, this.buf.readUInt32BE(0) + 8);
    if (this.carry === this.buf.length) need = Math.max(need, READ_SIZE, this.buf.length * 2);
    if (need > this.buf.length) {
      const bigger = Buffer.allocUnsafe(need);
      this.buf.copy(bigger, 0, 0, this.carry);
      this.buf = bigger;
    }
    const { bytesRead } = await this.fh.read(this.buf, this.carry, this.buf.length - this.carry, this.pos + this.carry);
    if (bytesRead === 0) return null;
    const total = this.carry + bytesRead;
    const out: LogEntry[] = [];
    let s = 0;
    while (s + 4 <= total) {
      const len = this.buf.readUInt32BE(s);
      if (len > MAX_RECORD) {
        this.broken = true;
        break;
      }
      if (s + len + 8 > total) break;
      if (this.buf.readUInt32BE(s + 4 + len) !== len) {
        this.broken = true;
        break;
      }
      const e = entryOfRecord(this.buf.subarray(s + 4, s + 4 + len));
      if (e) out.push(e);
      s += len + 8;
    }
    this.pos += s;
    this.carry = total - s;
    if (this.carry > 0 && s > 0) this.buf.copy(this.buf, 0, s, total);
    return out;
  }

  reset(pos: number): void {
    this.pos = pos;
    this.carry = 0;
    this.broken = false;
  }
}

/**
 * Where to start reading each file (newest last) so that only the last `n` records are read,
 * by walking the trailing lengths from the end. A length that does not match its leading copy
 * ends the walk in that file (its records from there on are read).
 */
export async function localTailOffsets(files: LogFileHandle[], n: number): Promise<number[]> {
  const offsets = new Array<number>(files.length);
  const b = Buffer.allocUnsafe(4);
  let need = n;
  for (let f = files.length - 1; f >= 0; f--) {
    const fh = files[f]!;
    let off = (await fh.stat()).size;
    if (need <= 0) {
      offsets[f] = off;
      continue;
    }
    while (off >= 8 && need > 0) {
      if ((await fh.read(b, 0, 4, off - 4)).bytesRead !== 4) break;
      const len = b.readUInt32BE(0);
      const start = off - 8 - len;
      if (start < 0) break;
      if ((await fh.read(b, 0, 4, start)).bytesRead !== 4 || b.readUInt32BE(0) !== len) break;
      off = start;
      need--;
    }
    offsets[f] = off;
  }
  return offsets;
}
