// What the file log drivers (json-file, local) share: records are queued by log() and written by
// one writer a batch at a time (one write per batch, started on the next tick or as soon as a MiB
// is queued); past 4 MiB queued, log() asks its caller to wait. Rotation is decided as records are
// queued (before a record, once the file reached max-size, as the reference) and carried out
// between batches (./rotate.ts: renames, gzip of rotated files). When the file system is (nearly)
// full a batch is dropped whole and the file keeps only complete records. A driver supplies the
// encoding: accept() turns a chunk of output into records through push(), flushHeld() writes the
// pieces still waiting for their newline at close.
import { closeSync, fstatSync, openSync } from 'node:fs';
import { close as closeCb, ftruncate, open as openCb, write as writeCb } from 'node:fs';
import { statfs as statfsAsync } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import type { FileLogOptions } from './file-options.ts';
import { releaseBuffer } from '../../lib/release-buffer.ts';
import { Rotator } from './rotate.ts';

const writeAsync = (fd: number, b: Buffer, off: number, len: number) =>
  new Promise<number>((res, rej) => writeCb(fd, b, off, len, null, (err, n) => (err ? rej(err) : res(n))));
const ftruncateAsync = promisify(ftruncate);
const openAsync = promisify(openCb);
const closeAsync = promisify(closeCb);

/** A writer's log: where its warnings go (a pino logger, or the messages a log thread posts back). */
export type FileLog = Pick<Logger, 'info' | 'warn'>;

/** Pieces of output waiting for their newline, per stream. */
export interface Held {
  stdout: Buffer | null;
  stderr: Buffer | null;
}

export interface LogSink {
  /** Resolves-later when the writer is behind: the caller should wait before the next chunk. */
  log(stream: 'stdout' | 'stderr', chunk: Buffer): void | Promise<void>;
  close(): Promise<void>;
  /** Ask the caller to wait once this many bytes are queued (a ring in front: ./ring.ts). */
  limitQueue?(bytes: number): void;
  /**
   * True when log() keeps no reference to the chunk it is given once it returns (it copies what
   * it keeps): the chunk's memory can then be freed at once (drivers/stdio: `copies`).
   */
  readonly copiesChunks?: boolean;
}

/** Start a write as soon as this much is queued instead of waiting for the next tick. */
const HIGH_WATER = 1 << 20;
/**
 * Past this much queued, log() asks its caller to wait (the container's output pauses). A MiB: four
 * busy logs held ~12 MiB more at 4 with no gain in rate (docs/performance.md, the log path).
 */
const BACKPRESSURE = 1 << 20;
/** How long one look at the free space is trusted (less what was written since). */
const ROOM_CHECK_MS = 250;

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

function keepFree(): NodeJS.ErrnoException {
  return Object.assign(new Error('ENOSPC: no space left on device, write (the last MiBs are kept for the daemon)'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
}

/** A record as queued: a string (json-file's lines, turned into bytes once per batch) or bytes. */
type Part = string | Buffer;

interface Segment<P extends Part> {
  parts: P[];
  /** Rotate the file after writing this segment. */
  rotate: boolean;
  /** Time of the segment's last record (recorded in a compressed file's header). */
  lastTime?: string;
}

const bytesOf = (p: Part) => (typeof p === 'string' ? Buffer.byteLength(p) : p.length);

export abstract class BatchedLogFile<P extends Part> implements LogSink {
  /** Records are encoded from the chunk and a piece waiting for its newline is copied (accept). */
  readonly copiesChunks = true;
  protected readonly path: string;
  protected readonly opts: FileLogOptions;
  protected readonly log_: FileLog;
  /** Pieces of output waiting for their newline, per stream. */
  protected readonly pending: Held = { stdout: null, stderr: null };
  private fd: number;
  private size: number;
  private segments: Segment<P>[] = [{ parts: [], rotate: false }];
  private queued = 0;
  private writing: Promise<void> | null = null;
  private scheduled = false;
  private closed = false;
  /** Bytes dropped since writes started failing; 0 while they work. */
  private failing = 0;
  /** Bytes writable before the reserve, as last seen at `at` (ms), less what was written since. */
  private room = { at: 0, bytes: 0 };
  private lastTime = '';
  /** Waiters for the queue to shrink below BACKPRESSURE / 2. */
  private readonly waiters: Array<() => void> = [];
  private readonly rotator: Rotator;
  private backpressure = BACKPRESSURE;

  /** `held`: what an earlier writer of this log left waiting for its newline (./log-thread.ts). */
  constructor(path: string, opts: FileLogOptions, log: FileLog, held?: Held) {
    this.path = path;
    this.opts = opts;
    this.log_ = log;
    if (held) Object.assign(this.pending, held);
    this.rotator = new Rotator(path, opts.maxFiles, opts.compress, log);
    this.fd = openSync(path, 'a', 0o640);
    this.size = fstatSync(this.fd).size;
  }

  /** Queues the records of one chunk (through push) and keeps what waits for its newline in `pending`. */
  protected abstract accept(stream: 'stdout' | 'stderr', chunk: Buffer): void;
  /** At close: the pieces still in `pending`, as records. */
  protected abstract flushHeld(): void;

  log(stream: 'stdout' | 'stderr', chunk: Buffer): void | Promise<void> {
    if (this.closed || chunk.length === 0) return;
    this.accept(stream, chunk);
    this.kick();
    if (this.queued < this.backpressure) return;
    return new Promise<void>((r) => this.waiters.push(r));
  }

  limitQueue(bytes: number): void {
    this.backpressure = Math.max(1, bytes);
  }

  private wake(): void {
    if (this.queued >= this.backpressure / 2 && !this.closed) return;
    for (const w of this.waiters.splice(0)) w();
  }

  /** Queues one record written at `time`. */
  protected push(part: P, time: string): void {
    let seg = this.segments[this.segments.length - 1]!;
    if (this.opts.maxSize > 0) {
      // Like the reference: rotate before a record once the file has reached max-size.
      if (this.size >= this.opts.maxSize) {
        seg.rotate = true;
        seg.lastTime = this.lastTime;
        seg = { parts: [], rotate: false };
        this.segments.push(seg);
        this.size = 0;
      }
      this.size += bytesOf(part);
    }
    seg.parts.push(part);
    this.lastTime = time;
    this.queued += part.length;
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
        if (seg.parts.length > 0) await this.write(seg.parts);
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
   * One batch of whole records. A file system out of space (or any failed write) drops what did
   * not fit, never part of a record: a short write is cut back to its last complete record, so the
   * file stays readable. One warning per run of failures, not one per batch.
   */
  private async write(parts: P[]): Promise<void> {
    const buf = parts.every((p) => typeof p === 'string')
      ? Buffer.from((parts as string[]).join(''))
      : parts.length === 1
        ? (parts[0] as Buffer)
        : Buffer.concat(parts.map((p): Buffer => (typeof p === 'string' ? Buffer.from(p) : (p as Buffer))));
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
      releaseBuffer(buf);
      return;
    }
    let keep = 0;
    for (const p of parts) {
      const b = bytesOf(p);
      if (keep + b > n) break;
      keep += b;
    }
    if (keep < n) {
      try {
        await ftruncateAsync(this.fd, fstatSync(this.fd).size - (n - keep));
      } catch {
        // nothing more to do: the reader skips a record it cannot read
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

  /** max-file 1: the file is truncated in place; else rotated. Either way writing goes on in an empty file, as the reference. */
  private async rotate(lastTime: string): Promise<void> {
    try {
      await closeAsync(this.fd);
      if (this.opts.maxFiles >= 2) await this.rotator.rotate(lastTime);
    } catch (err) {
      this.log_.warn({ err, path: this.path }, 'rotating container log failed');
    }
    this.fd = await openAsync(this.path, 'w', 0o640);
  }

  async close(): Promise<void> {
    if (!this.closed) this.flushHeld();
    await this.finish();
  }

  /**
   * Ends this writer but not the log: what is queued is written and the file closed; the pieces
   * still waiting for their newline are returned to the writer that goes on (another thread's).
   */
  async handOver(): Promise<Held> {
    await this.finish();
    const held = { ...this.pending };
    this.pending.stdout = this.pending.stderr = null;
    return held;
  }

  private async finish(): Promise<void> {
    if (this.closed) {
      while (this.writing) await this.writing;
      return;
    }
    this.closed = true;
    while (this.writing) await this.writing;
    if (this.hasQueued()) {
      this.writing = this.drain();
      await this.writing;
    }
    // close(2) of a regular file returns at once: not worth a threadpool round trip.
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    await this.rotator.settle();
  }
}
