// The json-file log driver: one JSON object per line,
//   {"log":"hi\n","stream":"stdout","time":"2026-01-02T03:04:05.123456789Z"}
// Chunks are split at newlines; a trailing piece without newline waits for the rest (or for
// close). Lines longer than 16 KiB are written as several partial entries (no "\n" in their
// "log") followed by the final piece, as the reference does.
//
// Entries are batched: log() only encodes and queues; one writer drains the queue with a
// single write per batch. close() flushes everything and resolves when the data has been
// written to the file (no fsync). Rotation and `compress` (gzipped rotated files, `path.N.gz`)
// follow the reference (./rotate.ts). Labels/env/tag attributes are not recorded. When the file system is (nearly)
// full, output is dropped a whole batch at a time and the file keeps only complete entries.
import { closeSync, fstatSync, openSync } from 'node:fs';
import { close as closeCb, ftruncate, open as openCb, write as writeCb } from 'node:fs';
import { statfs as statfsAsync } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import { fileLogOptions } from './options.ts';
import type { FileLogOptions } from './options.ts';
import { Rotator } from './rotate.ts';

const writeAsync = (fd: number, b: Buffer, off: number, len: number) =>
  new Promise<number>((res, rej) => writeCb(fd, b, off, len, null, (err, n) => (err ? rej(err) : res(n))));
const ftruncateAsync = promisify(ftruncate);
const openAsync = promisify(openCb);
const closeAsync = promisify(closeCb);

export interface LogSink {
  /** Resolves-later when the writer is behind: the caller should wait before the next chunk. */
  log(stream: 'stdout' | 'stderr', chunk: Buffer): void | Promise<void>;
  close(): Promise<void>;
}

/** Longest "log" payload of one entry, in bytes; longer lines become partial entries. */
export const MAX_LINE = 16 * 1024;
/** Start a write as soon as this much is queued instead of waiting for the next tick. */
const HIGH_WATER = 1 << 20;
/** Past this much queued, log() asks its caller to wait (the container's output pauses). */
const BACKPRESSURE = 4 << 20;

// ---- timestamps -----------------------------------------------------------------------------

let lastMs = -1;
let lastPrefix = '';
let lastSub = -1;

/** Now as RFC 3339 with 9 fractional digits, UTC, never going backwards within a millisecond. */
export function nowRfc3339Nano(): string {
  const ms = Date.now();
  let sub = Number(process.hrtime.bigint() % 1000000n);
  if (ms !== lastMs) {
    lastMs = ms;
    lastPrefix = new Date(ms).toISOString().slice(0, 23);
  } else if (sub <= lastSub) {
    sub = Math.min(lastSub + 1, 999999);
  }
  lastSub = sub;
  return `${lastPrefix}${String(sub).padStart(6, '0')}Z`;
}

// ---- the file -------------------------------------------------------------------------------

interface Segment {
  parts: string[];
  /** Rotate the file after writing this segment. */
  rotate: boolean;
  /** Time of the segment's last entry (recorded in a compressed file's header). */
  lastTime?: string;
}

class JsonFileWriter implements LogSink {
  private readonly path: string;
  private readonly opts: FileLogOptions;
  private readonly log_: Logger;
  private fd: number;
  private size: number;
  private segments: Segment[] = [{ parts: [], rotate: false }];
  private queued = 0;
  private writing: Promise<void> | null = null;
  private scheduled = false;
  private closed = false;
  /** Bytes dropped since writes started failing; 0 while they work. */
  private failing = 0;
  /** Bytes writable before the reserve, as last seen at `at` (ms), less what was written since. */
  private room = { at: 0, bytes: 0 };
  private readonly pending: { stdout: Buffer | null; stderr: Buffer | null } = { stdout: null, stderr: null };
  private readonly rotator: Rotator;
  private lastTime = '';

  constructor(path: string, opts: FileLogOptions, log: Logger) {
    this.path = path;
    this.opts = opts;
    this.log_ = log;
    this.rotator = new Rotator(path, opts.maxFiles, opts.compress, log);
    this.fd = openSync(path, 'a', 0o640);
    this.size = fstatSync(this.fd).size;
  }

  /** Waiters for the queue to shrink below BACKPRESSURE / 2. */
  private readonly waiters: Array<() => void> = [];

  log(stream: 'stdout' | 'stderr', chunk: Buffer): void | Promise<void> {
    if (this.closed || chunk.length === 0) return;
    this.accept(stream, chunk);
    if (this.queued < BACKPRESSURE) return;
    return new Promise<void>((r) => this.waiters.push(r));
  }

  private wake(): void {
    if (this.queued >= BACKPRESSURE / 2 && !this.closed) return;
    for (const w of this.waiters.splice(0)) w();
  }

  private accept(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    const time = nowRfc3339Nano();
    const suffix = `","stream":"${stream}","time":"${time}"}\n`;
    let buf = chunk;
    const held = this.pending[stream];
    if (held) {
      buf = Buffer.concat([held, chunk]);
      this.pending[stream] = null;
    }
    const lastNl = buf.lastIndexOf(10);
    if (lastNl >= 0) {
      // Decode all complete lines at once; split in string space (JSON-escaping per line).
      const text = buf.toString('utf8', 0, lastNl);
      let start = 0;
      for (;;) {
        const nl = text.indexOf('\n', start);
        const line = nl < 0 ? text.slice(start) : text.slice(start, nl);
        this.line(line, suffix, time, stream);
        if (nl < 0) break;
        start = nl + 1;
      }
    }
    let rest = buf.subarray(lastNl + 1);
    while (rest.length > MAX_LINE) {
      this.push(`{"log":${JSON.stringify(rest.toString('utf8', 0, MAX_LINE))},"stream":"${stream}","time":"${time}"}\n`, time);
      rest = rest.subarray(MAX_LINE);
    }
    // The caller may reuse its buffer: keep our own copy of the held piece.
    if (rest.length > 0) this.pending[stream] = Buffer.from(rest);
    this.kick();
  }

  /** One complete line (without its "\n"). */
  private line(line: string, suffix: string, time: string, stream: string): void {
    // UTF-16 length * 3 bounds the UTF-8 length: only long lines need the exact byte count.
    if (line.length * 3 > MAX_LINE && Buffer.byteLength(line) > MAX_LINE) {
      let bytes = Buffer.from(line);
      while (bytes.length > MAX_LINE) {
        this.push(`{"log":${JSON.stringify(bytes.toString('utf8', 0, MAX_LINE))},"stream":"${stream}","time":"${time}"}\n`, time);
        bytes = bytes.subarray(MAX_LINE);
      }
      line = bytes.toString('utf8');
    }
    const q = JSON.stringify(line);
    this.push(`{"log":${q.slice(0, -1)}\\n${suffix}`, time);
  }

  private push(entry: string, time: string): void {
    let seg = this.segments[this.segments.length - 1]!;
    if (this.opts.maxSize > 0) {
      // Like the reference: rotate before an entry once the file has reached max-size.
      if (this.size >= this.opts.maxSize) {
        seg.rotate = true;
        seg.lastTime = this.lastTime;
        seg = { parts: [], rotate: false };
        this.segments.push(seg);
        this.size = 0;
      }
      this.size += Buffer.byteLength(entry);
    }
    seg.parts.push(entry);
    this.lastTime = time;
    this.queued += entry.length;
  }

  private kick(): void {
    if (this.writing) return;
    if (this.queued >= HIGH_WATER) {
      this.writing = this.drain();
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.writing && this.hasQueued()) this.writing = this.drain();
    });
  }

  private hasQueued(): boolean {
    return this.segments.length > 1 || this.segments[0]!.parts.length > 0;
  }

  private async drain(): Promise<void> {
    try {
      while (this.hasQueued()) {
        const seg = this.segments.shift()!;
        if (this.segments.length === 0) this.segments.push({ parts: [], rotate: false });
        this.queued -= seg.parts.reduce((n, p) => n + p.length, 0);
        if (seg.parts.length > 0) await this.write(Buffer.from(seg.parts.join('')));
        if (seg.rotate) await this.rotate(seg.lastTime ?? '');
        this.wake();
      }
    } finally {
      this.writing = null;
      this.wake();
    }
    if (this.hasQueued()) this.kick();
  }

  /**
   * One batch of whole entries. A file system out of space (or any failed write) drops what did
   * not fit, never half an entry: a short write is cut back to its last complete line, so the
   * file stays readable and later entries start on a line of their own. One warning per run of
   * failures, not one per batch.
   */
  private async write(buf: Buffer): Promise<void> {
    let n = 0;
    let err: unknown = null;
    try {
      // Once failing, wait for a MiB more than the batch: no warning and recovery every batch.
      if (!(await this.hasRoom(buf.length, this.failing ? 1 << 20 : 0))) throw keepFree();
      while (n < buf.length) {
        const w = await writeAsync(this.fd, buf, n, buf.length - n);
        if (w <= 0) break;
        n += w;
      }
    } catch (e) {
      err = e;
    }
    if (n === buf.length) {
      if (this.failing) this.log_.info({ path: this.path, dropped: this.failing }, 'writing container log works again');
      this.failing = 0;
      return;
    }
    const keep = n > 0 ? buf.lastIndexOf(10, n - 1) + 1 : 0;
    if (keep < n) {
      try {
        await ftruncateAsync(this.fd, fstatSync(this.fd).size - (n - keep));
      } catch {
        // nothing more to do: the reader skips a line it cannot parse
      }
    }
    if (this.failing === 0) this.log_.warn({ err, path: this.path }, 'writing container log failed; output is dropped until writes succeed');
    this.failing += buf.length - keep;
  }

  /**
   * Whether `bytes` (plus `margin`) fit before the reserve. The file system is asked at most every
   * ROOM_CHECK_MS while the last answer leaves room, not at every batch: a busy log writes many.
   */
  private async hasRoom(bytes: number, margin: number): Promise<boolean> {
    const now = Date.now();
    if (margin > 0 || now - this.room.at > ROOM_CHECK_MS || this.room.bytes < bytes) this.room = { at: now, bytes: await roomLeft(this.path) };
    if (this.room.bytes < bytes + margin) return false;
    this.room.bytes -= bytes;
    return true;
  }

  private async rotate(lastTime: string): Promise<void> {
    try {
      await closeAsync(this.fd);
      if (this.opts.maxFiles < 2) {
        this.fd = await openAsync(this.path, 'w', 0o640);
        return;
      }
      await this.rotator.rotate(lastTime);
      this.fd = await openAsync(this.path, 'a', 0o640);
    } catch (err) {
      this.log_.warn({ err, path: this.path }, 'rotating container log failed');
      this.fd = await openAsync(this.path, 'a', 0o640);
    }
  }

  async close(): Promise<void> {
    if (this.closed) {
      while (this.writing) await this.writing;
      return;
    }
    for (const stream of ['stdout', 'stderr'] as const) {
      const held = this.pending[stream];
      if (held) {
        this.pending[stream] = null;
        // A last piece without newline: written as is (no "\n" added).
        const time = nowRfc3339Nano();
        this.push(`{"log":${JSON.stringify(held.toString('utf8'))},"stream":"${stream}","time":"${time}"}\n`, time);
      }
    }
    this.closed = true;
    while (this.writing) await this.writing;
    if (this.hasQueued()) {
      this.writing = this.drain();
      await this.writing;
    }
    // close(2) of a regular file returns at once: not worth a threadpool round trip.
    closeSafe(this.fd);
    await this.rotator.settle();
  }
}

/**
 * Container logs leave the last few MiB of their file system free (4 %, at least 1 MiB, at most
 * 32 MiB): on a data root that logs have filled, the daemon can still record a container's exit
 * and its removal, which gives the space back.
 */
export async function roomLeft(path: string): Promise<number> {
  try {
    const s = await statfsAsync(path);
    const reserve = Math.min(32 << 20, Math.max(1 << 20, s.blocks * s.bsize * 0.04));
    return s.bavail * s.bsize - reserve;
  } catch {
    return Infinity;
  }
}

/** How long one look at the free space is trusted (less what was written since). */
export const ROOM_CHECK_MS = 250;

export function keepFree(): NodeJS.ErrnoException {
  return Object.assign(new Error('ENOSPC: no space left on device, write (the last MiBs are kept for the daemon)'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
}

function closeSafe(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}

/** A json-file logger for `path`; options are the container's LogConfig.Config. */
export function openJsonFile(path: string, config: Record<string, string>, log: Logger): LogSink {
  return new JsonFileWriter(path, fileLogOptions(config), log);
}
