// The `local` log driver, in the reference's on-disk format (moby daemon/logger/local): each
// record is a 4-byte big-endian length, a protobuf LogEntry (./protos/entry.proto: source,
// time_nano, line without its "\n", partial metadata), and the length again, so that a tail can
// walk the file backwards. The file is <container dir>/local-logs/container.log; defaults
// max-size 20m, max-file 5, compress true (rotated files are gzipped: container.log.1.gz …).
//
// Lines longer than 16 KiB become partial entries sharing an id (ordinal 1, 2, …; the last one
// marked `last`); a piece left without newline at close is a partial entry not marked last,
// as the reference's copier writes them. Batching, backpressure and the free-space reserve are
// those of the json-file writer; a failed write keeps only whole records.
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync } from 'node:fs';
import { close as closeCb, open as openCb, write as writeCb } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import { invalidArgument } from '../../lib/errors.ts';
import { LogEntry as LogEntryProto } from './gen/entry.ts';
import { MAX_LINE, keepFree, nowRfc3339Nano, roomLeft, ROOM_CHECK_MS } from './json-file.ts';
import type { LogSink } from './json-file.ts';
import { fromHumanSize } from './options.ts';
import type { FileLogOptions } from './options.ts';
import { Rotator } from './rotate.ts';

const writeAsync = (fd: number, b: Buffer, off: number, len: number) =>
  new Promise<number>((res, rej) => writeCb(fd, b, off, len, null, (err, n) => (err ? rej(err) : res(n))));
const openAsync = promisify(openCb);
const closeAsync = promisify(closeCb);

const HIGH_WATER = 1 << 20;
const BACKPRESSURE = 4 << 20;

export const LOCAL_DEFAULT_MAX_SIZE = 20 * 1024 * 1024;
export const LOCAL_DEFAULT_MAX_FILES = 5;

/** The log file of a `local` container, under its directory. */
export function localLogPath(containerDir: string): string {
  return join(containerDir, 'local-logs', 'container.log');
}

const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** The reference's local driver options (daemon/logger/local/config.go); throws InvalidArgument. */
export function localLogOptions(cfg: Record<string, string>): FileLogOptions {
  let maxSize = LOCAL_DEFAULT_MAX_SIZE;
  let maxFiles = LOCAL_DEFAULT_MAX_FILES;
  let compress = true;
  if (cfg['max-size'] !== undefined) {
    try {
      maxSize = fromHumanSize(cfg['max-size']);
    } catch (err) {
      throw invalidArgument(`invalid value for max-size: ${cfg['max-size']}: ${(err as Error).message}`);
    }
  }
  if (cfg['max-file'] !== undefined) {
    const s = cfg['max-file'];
    if (!/^[+-]?\d+$/.test(s)) throw invalidArgument(`invalid value for max-file: ${s}: strconv.Atoi: parsing "${s}": invalid syntax`);
    maxFiles = Number.parseInt(s, 10);
  }
  if (cfg.compress !== undefined) {
    const s = cfg.compress;
    if (TRUE.has(s)) compress = true;
    else if (FALSE.has(s)) compress = false;
    else throw invalidArgument(`invalid boolean value for compress: strconv.ParseBool: parsing "${s}": invalid syntax`);
  }
  if (maxSize < 0) throw invalidArgument('max-size must not be negative');
  if (maxFiles < 0) throw invalidArgument('max-file must not be negative');
  if (compress && maxFiles <= 1) throw invalidArgument('compression cannot be enabled when max file count is 1');
  return { maxSize, maxFiles, compress };
}

/** Unix nanoseconds of one of nowRfc3339Nano's times. */
export function nanosOf(t: string): bigint {
  return BigInt(Date.parse(`${t.slice(0, 23)}Z`)) * 1000000n + BigInt(t.slice(23, 29));
}

/** One framed record: length, LogEntry, length. */
export function encodeRecord(e: LogEntryProto): Buffer {
  const body = LogEntryProto.encode(e).finish();
  const out = Buffer.allocUnsafe(body.length + 8);
  out.writeUInt32BE(body.length, 0);
  out.set(body, 4);
  out.writeUInt32BE(body.length, body.length + 4);
  return out;
}

interface Segment {
  parts: Buffer[];
  rotate: boolean;
  lastTime?: string;
}

class LocalWriter implements LogSink {
  private fd: number;
  private size: number;
  private segments: Segment[] = [{ parts: [], rotate: false }];
  private queued = 0;
  private writing: Promise<void> | null = null;
  private scheduled = false;
  private closed = false;
  private failing = 0;
  private room = { at: 0, bytes: 0 };
  private lastTime = '';
  private readonly waiters: Array<() => void> = [];
  private readonly pending: { stdout: Buffer | null; stderr: Buffer | null } = { stdout: null, stderr: null };
  private readonly rotator: Rotator;

  private readonly path: string;
  private readonly opts: FileLogOptions;
  private readonly log_: Logger;

  constructor(path: string, opts: FileLogOptions, log: Logger) {
    this.path = path;
    this.opts = opts;
    this.log_ = log;
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    this.fd = openSync(path, 'a', 0o640);
    this.size = fstatSync(this.fd).size;
    this.rotator = new Rotator(path, opts.maxFiles, opts.compress, log);
  }

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
    const nanos = nanosOf(time);
    let buf = chunk;
    const held = this.pending[stream];
    if (held) {
      buf = Buffer.concat([held, chunk]);
      this.pending[stream] = null;
    }
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(10, start);
      if (nl < 0) break;
      this.line(stream, buf.subarray(start, nl), time, nanos);
      start = nl + 1;
    }
    const rest = buf.subarray(start);
    // The caller may reuse its buffer: keep our own copy of the held piece.
    if (rest.length > MAX_LINE) this.line(stream, rest, time, nanos, true);
    else if (rest.length > 0) this.pending[stream] = Buffer.from(rest);
    this.kick();
  }

  /** One line without its "\n"; `open`: more of it follows (no final piece marked last). */
  private line(stream: string, line: Buffer, time: string, nanos: bigint, open = false): void {
    if (line.length <= MAX_LINE && !open) {
      this.push(encodeRecord({ source: stream, time_nano: nanos, line, partial: false, attrs: [] }), time);
      return;
    }
    const id = randomBytes(32).toString('hex');
    let ordinal = 1;
    for (let off = 0; off < line.length; off += MAX_LINE) {
      const piece = line.subarray(off, off + MAX_LINE);
      const last = off + MAX_LINE >= line.length && !open;
      this.push(encodeRecord({ source: stream, time_nano: nanos, line: piece, partial: true, partial_log_metadata: { last, id, ordinal: ordinal++ }, attrs: [] }), time);
    }
  }

  private push(rec: Buffer, time: string): void {
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
      this.size += rec.length;
    }
    seg.parts.push(rec);
    this.lastTime = time;
    this.queued += rec.length;
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
        const n = seg.parts.reduce((k, p) => k + p.length, 0);
        this.queued -= n;
        if (seg.parts.length > 0) await this.write(seg.parts, n);
        if (seg.rotate) await this.rotate(seg.lastTime ?? '');
        this.wake();
      }
    } finally {
      this.writing = null;
      this.wake();
    }
    if (this.hasQueued()) this.kick();
  }

  /** One batch of whole records; on failure whatever did not fit is dropped, never part of a record. */
  private async write(parts: Buffer[], total: number): Promise<void> {
    const buf = parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
    let n = 0;
    let err: unknown = null;
    try {
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
    let keep = 0;
    for (const p of parts) {
      if (keep + p.length > n) break;
      keep += p.length;
    }
    if (keep < n) {
      try {
        ftruncateSync(this.fd, fstatSync(this.fd).size - (n - keep));
      } catch {
        // the reader stops at a record it cannot frame
      }
    }
    if (this.failing === 0) this.log_.warn({ err, path: this.path }, 'writing container log failed; output is dropped until writes succeed');
    this.failing += buf.length - keep;
  }

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
      await this.rotator.rotate(lastTime);
    } catch (err) {
      this.log_.warn({ err, path: this.path }, 'rotating container log failed');
    }
    // Like the reference: truncate anyway in case rotation did not work out.
    this.fd = await openAsync(this.path, 'w', 0o640);
  }

  async close(): Promise<void> {
    if (this.closed) {
      while (this.writing) await this.writing;
      return;
    }
    const time = nowRfc3339Nano();
    for (const stream of ['stdout', 'stderr'] as const) {
      const held = this.pending[stream];
      if (held) {
        this.pending[stream] = null;
        this.line(stream, held, time, nanosOf(time), true);
      }
    }
    this.closed = true;
    while (this.writing) await this.writing;
    if (this.hasQueued()) {
      this.writing = this.drain();
      await this.writing;
    }
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    await this.rotator.settle();
  }
}

/** A `local` logger writing `path` (see localLogPath); options are the container's LogConfig.Config. */
export function openLocal(path: string, config: Record<string, string>, log: Logger): LogSink {
  return new LocalWriter(path, localLogOptions(config), log);
}
