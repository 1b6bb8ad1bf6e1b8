// The `local` log driver, in the reference's on-disk format (moby daemon/logger/local): each
// record is a 4-byte big-endian length, a protobuf LogEntry (./protos/entry.proto: source,
// time_nano, line without its "\n", partial metadata), and the length again, so that a tail can
// walk the file backwards. The file is <container dir>/local-logs/container.log; defaults
// max-size 20m, max-file 5, compress true (rotated files are gzipped: container.log.1.gz …).
//
// Lines longer than 16 KiB become partial entries sharing an id (ordinal 1, 2, …; the last one
// marked `last`); a piece left without newline at close is a partial entry not marked last,
// as the reference's copier writes them. Batching, backpressure, rotation and the free-space
// reserve are the file drivers' (./batched-file.ts); a failed write keeps only whole records.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { invalidArgument } from '../../lib/errors.ts';
import { BatchedLogFile, type FileLog, type Held } from './batched-file.ts';
import { LogEntry as LogEntryProto } from './gen/entry.ts';
import { MAX_LINE, nowRfc3339Nano } from './json-file.ts';
import { fromHumanSize, goBool, goBoolSyntax } from '../../lib/units.ts';
import type { FileLogOptions } from './file-options.ts';

export const LOCAL_DEFAULT_MAX_SIZE = 20 * 1024 * 1024;
export const LOCAL_DEFAULT_MAX_FILES = 5;

/** The log file of a `local` container, under its directory. */
export function localLogPath(containerDir: string): string {
  return join(containerDir, 'local-logs', 'container.log');
}

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
    const b = goBool(cfg.compress);
    if (b === undefined) throw invalidArgument(`invalid boolean value for compress: ${goBoolSyntax(cfg.compress)}`);
    compress = b;
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

export class LocalWriter extends BatchedLogFile<Buffer> {
  constructor(path: string, opts: FileLogOptions, log: FileLog, held?: Held) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    super(path, opts, log, held);
  }

  protected accept(stream: 'stdout' | 'stderr', chunk: Buffer): void {
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

  protected flushHeld(): void {
    const time = nowRfc3339Nano();
    for (const stream of ['stdout', 'stderr'] as const) {
      const held = this.pending[stream];
      if (held) {
        this.pending[stream] = null;
        this.line(stream, held, time, nanosOf(time), true);
      }
    }
  }
}
