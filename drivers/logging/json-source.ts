// The json-file format's side of the reader (./reader.ts), as ./local-reader.ts is the local
// format's: complete lines from a position on, decoded into entries (./json-line.ts), and where
// to start reading so that only the last N lines are read (blocks read backwards from the end,
// across rotated files, without parsing what is skipped).
import type { LogEntry } from './reader.ts';
import { BackslashIndex, decodeLine } from './json-line.ts';
import type { LogFileHandle as FileHandle } from './rotate.ts';

const READ_SIZE = 256 * 1024;
/** A source starts with this much and grows to READ_SIZE once a read fills it (most logs are short). */
const FIRST_READ_SIZE = 16 * 1024;
const TAIL_BLOCK = 64 * 1024;

/**
 * Where to start reading each file so that only the last `n` complete lines are read.
 * Files are newest-last; returns one offset per file (size = skip the file).
 */
export async function tailOffsets(files: FileHandle[], n: number): Promise<number[]> {
  const offsets = new Array<number>(files.length);
  const block = Buffer.allocUnsafe(TAIL_BLOCK);
  let need = n;
  for (let f = files.length - 1; f >= 0; f--) {
    const size = (await files[f]!.stat()).size;
    if (need <= 0) {
      offsets[f] = size;
      continue;
    }
    // The first newline from the end closes the last complete line (an unterminated tail is
    // not an entry yet); each further newline closes the line before it.
    let end = size;
    let start = 0;
    let found = false;
    let seenLast = false;
    while (end > 0 && !found) {
      const from = Math.max(0, end - TAIL_BLOCK);
      const { bytesRead } = await files[f]!.read(block, 0, end - from, from);
      for (let k = bytesRead - 1; k >= 0; k--) {
        if (block[k] !== 0x0a) continue;
        if (!seenLast) {
          seenLast = true;
          continue;
        }
        if (--need === 0) {
          start = from + k + 1;
          found = true;
          break;
        }
      }
      end = from;
    }
    if (!found && seenLast) need--; // the file's first line
    offsets[f] = start;
  }
  return offsets;
}

/** Reads complete lines from a file handle, remembering where the next read starts. */
export class LineSource {
  fh: FileHandle;
  pos: number;
  private buf = Buffer.allocUnsafe(FIRST_READ_SIZE);
  private filled = false;
  private carry = 0;
  private readonly bs = new BackslashIndex();

  constructor(fh: FileHandle, pos: number) {
    this.fh = fh;
    this.pos = pos;
  }

  /** The entries of the complete lines available now, one read's worth (empty at EOF). */
  async next(): Promise<LogEntry[] | null> {
    if (this.carry === this.buf.length || (this.filled && this.buf.length < READ_SIZE)) {
      const bigger = Buffer.allocUnsafe(Math.max(READ_SIZE, this.buf.length * 2));
      this.buf.copy(bigger, 0, 0, this.carry);
      this.buf = bigger;
    }
    const want = this.buf.length - this.carry;
    const { bytesRead } = await this.fh.read(this.buf, this.carry, want, this.pos + this.carry);
    if (bytesRead === 0) return null;
    this.filled = bytesRead === want;
    this.bs.reset();
    const total = this.carry + bytesRead;
    const lastNl = this.buf.lastIndexOf(0x0a, total - 1);
    const out: LogEntry[] = [];
    if (lastNl < 0) {
      this.carry = total;
      return out;
    }
    let s = 0;
    while (s <= lastNl) {
      const nl = this.buf.indexOf(0x0a, s);
      if (nl > s) {
        const e = decodeLine(this.buf, s, nl, this.bs);
        if (e) out.push(e);
      }
      s = nl + 1;
    }
    this.pos += lastNl + 1;
    this.carry = total - (lastNl + 1);
    if (this.carry > 0) this.buf.copy(this.buf, 0, lastNl + 1, total);
    return out;
  }

  /** Start over at `pos` (after truncation). */
  reset(pos: number): void {
    this.pos = pos;
    this.carry = 0;
    this.bs.reset();
  }
}
