// Reads json-file logs back as entries: stream filtering, since/until, tail N (found by reading
// blocks backwards from the end, across rotated files, without parsing what is skipped) and
// follow (fs.watch on the directory plus a poll fallback; survives rotation and truncation).
// Rotated files may be gzipped (path.N.gz, ./rotate.ts). The `local` driver's files
// (…/local-logs/container.log) are framed protobuf records, decoded by ./local-reader.ts.
//
// Lines are decoded with a byte-level fast path for the layout our writer produces
// ({"log":"...","stream":"...","time":"..."}); anything else goes through JSON.parse.
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import { notImplemented } from '../../lib/errors.ts';
import { RecordSource, isLocalLogPath, localTailOffsets } from './local-reader.ts';
import { openRotated } from './rotate.ts';
import type { LogFileHandle as FileHandle } from './rotate.ts';

export interface LogReadOptions {
  stdout: boolean;
  stderr: boolean;
  follow: boolean;
  /** Unix seconds (fractional); entries strictly before are skipped; 0 = none. */
  since: number;
  /** Unix seconds (fractional); entries after are skipped; 0 = none. */
  until: number;
  /** Entries from the end; -1 = all. */
  tail: number;
}

export interface LogEntry {
  stream: 'stdout' | 'stderr';
  line: Buffer;
  time: string;
  attrs?: Record<string, string>;
}

export interface LogReaderOptions {
  pathOf: (containerId: string) => string | undefined;
  log: Logger;
  /** Poll interval while following, a fallback for missed watch events. */
  pollMs?: number;
}

const READ_SIZE = 256 * 1024;
/** A source starts with this much and grows to READ_SIZE once a read fills it (most logs are short). */
const FIRST_READ_SIZE = 16 * 1024;
const TAIL_BLOCK = 64 * 1024;

// ---- decoding -------------------------------------------------------------------------------

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

// ---- time filters ---------------------------------------------------------------------------

interface Instant {
  sec: number;
  nsec: number;
}

function instantOf(unixSeconds: number): Instant {
  const sec = Math.floor(unixSeconds);
  return { sec, nsec: Math.round((unixSeconds - sec) * 1e9) };
}

let lastSecKey = '';
let lastSec = 0;
/** Seconds and nanoseconds of a normalized RFC 3339 UTC time with 9 digits. */
function timeOf(t: string): Instant {
  const key = t.slice(0, 19);
  if (key !== lastSecKey) {
    lastSecKey = key;
    lastSec = Date.parse(`${key}Z`) / 1000;
  }
  return { sec: lastSec, nsec: Number(t.slice(20, 29)) || 0 };
}

const before = (a: Instant, b: Instant) => a.sec < b.sec || (a.sec === b.sec && a.nsec < b.nsec);

// ---- files ----------------------------------------------------------------------------------

async function openIfExists(p: string): Promise<FileHandle | null> {
  try {
    return await open(p, 'r');
  } catch {
    return null;
  }
}

/** path.N … path.1, path (oldest first), opened now so rotation while reading cannot reorder them. */
async function openAll(path: string): Promise<{ rotated: FileHandle[]; current: FileHandle | null }> {
  const rotated: FileHandle[] = [];
  for (let i = 1; ; i++) {
    const fh = await openRotated(path, i);
    if (!fh) break;
    rotated.unshift(fh);
  }
  return { rotated, current: await openIfExists(path) };
}

/**
 * Where to start reading each file so that only the last `n` complete lines are read.
 * Files are newest-last; returns one offset per file (size = skip the file).
 */
async function tailOffsets(files: FileHandle[], n: number): Promise<number[]> {
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

// ---- the reader -----------------------------------------------------------------------------

interface Filter {
  stdout: boolean;
  stderr: boolean;
  since: Instant | null;
  until: Instant | null;
}

/** What the reader drains: complete entries from a position on. */
interface Source {
  fh: FileHandle;
  pos: number;
  next(): Promise<LogEntry[] | null>;
  reset(pos: number): void;
}

/** Reads complete lines from a file handle, remembering where the next read starts. */
class LineSource implements Source {
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

/** Filtered batches of everything `src` holds now; returns true when reading must end (past `until`, aborted). */
async function* drainSource(src: Source, verdict: (e: LogEntry) => number, signal: AbortSignal): AsyncGenerator<LogEntry[], boolean> {
  for (;;) {
    if (signal.aborted) return true;
    const batch = await src.next();
    if (!batch) return false;
    const out: LogEntry[] = [];
    let past = false;
    for (const e of batch) {
      const v = verdict(e);
      if (v === 2) {
        past = true;
        break;
      }
      if (v === 0) out.push(e);
    }
    if (out.length) yield out;
    if (past) return true;
  }
}

async function* readLog(path: string, o: LogReadOptions, signal: AbortSignal, stop: AbortSignal | undefined, pollMs: number, log: Logger): AsyncGenerator<LogEntry[]> {
  const filter: Filter = {
    stdout: o.stdout,
    stderr: o.stderr,
    since: o.since > 0 ? instantOf(o.since) : null,
    until: o.until > 0 ? instantOf(o.until) : null,
  };
  const local = isLocalLogPath(path);
  const sourceOf = (fh: FileHandle, pos: number): Source => (local ? new RecordSource(fh, pos) : new LineSource(fh, pos));
  const { rotated, current } = await openAll(path);
  const handles = new Set<FileHandle>([...rotated, ...(current ? [current] : [])]);
  let watcher: FSWatcher | null = null;
  let timer: NodeJS.Timeout | null = null;
  let wake: (() => void) | null = null;
  const poke = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  signal.addEventListener('abort', poke);
  stop?.addEventListener('abort', poke);
  let untilTimer: NodeJS.Timeout | null = null;
  let untilReached = false;

  // 0 = keep going, 1 = entry skipped, 2 = past `until`: stop.
  const verdict = (e: LogEntry): number => {
    if (filter.since || filter.until) {
      const t = timeOf(e.time);
      if (filter.until && before(filter.until, t)) return 2;
      if (filter.since && before(t, filter.since)) return 1;
    }
    if (e.stream === 'stdout' ? !filter.stdout : !filter.stderr) return 1;
    return 0;
  };

  try {
    const files = current ? [...rotated, current] : rotated;
    const offsets = o.tail >= 0 ? await (local ? localTailOffsets : tailOffsets)(files, o.tail) : files.map(() => 0);
    let src: Source | null = null;
    for (let f = 0; f < files.length; f++) {
      src = sourceOf(files[f]!, offsets[f]!);
      if (yield* drainSource(src, verdict, signal)) return;
      if (files[f] !== current) {
        handles.delete(files[f]!);
        await files[f]!.close().catch(() => {});
      }
    }
    if (!o.follow) return;

    // ---- follow ----
    if (!current) src = null;
    let ino = src ? (await src.fh.stat()).ino : -1;
    try {
      watcher = watch(dirname(path), { persistent: false }, (_ev, name) => {
        if (!name || String(name).startsWith(basename(path))) poke();
      });
      watcher.on('error', () => {
        watcher?.close();
        watcher = null;
      });
    } catch (err) {
      log.debug({ err, path }, 'fs.watch unavailable; polling');
    }
    if (filter.until) {
      const ms = (filter.until.sec + filter.until.nsec / 1e9) * 1000 - Date.now();
      untilTimer = setTimeout(() => {
        untilReached = true;
        poke();
      }, Math.max(0, ms));
    }

    let finalPass = false;
    for (;;) {
      if (signal.aborted) return;
      if (stop?.aborted || untilReached) finalPass = true;
      // Drain what the current file has now.
      if (src && (yield* drainSource(src, verdict, signal))) return;
      // Rotation (a new file at `path`) or truncation (max-file=1).
      let st;
      try {
        st = await stat(path);
      } catch {
        st = null;
      }
      if (st && st.ino !== ino) {
        const fh = await openIfExists(path);
        if (fh) {
          handles.add(fh);
          if (src) {
            // The writer is done with the old file once a new one exists: read its last lines.
            if (yield* drainSource(src, verdict, signal)) return;
            handles.delete(src.fh);
            await src.fh.close().catch(() => {});
          }
          src = sourceOf(fh, 0);
          ino = (await fh.stat()).ino;
          continue;
        }
      } else if (st && src && st.size < src.pos) {
        src.reset(0);
        continue;
      }
      if (finalPass) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(poke, pollMs);
      });
      if (timer) clearTimeout(timer);
      timer = null;
    }
  } finally {
    signal.removeEventListener('abort', poke);
    stop?.removeEventListener('abort', poke);
    if (timer) clearTimeout(timer);
    if (untilTimer) clearTimeout(untilTimer);
    (watcher as FSWatcher | null)?.close();
    await Promise.all([...handles].map((h) => h.close().catch(() => {})));
  }
}

/**
 * Entries one by one from a generator of batches: the per-entry cost is a resolved promise,
 * not a generator resumption. Stops at once when `signal` aborts.
 */
function flatten(gen: AsyncGenerator<LogEntry[]>, signal: AbortSignal): AsyncIterableIterator<LogEntry> {
  let batch: LogEntry[] = [];
  let idx = 0;
  const done: IteratorReturnResult<undefined> = { done: true, value: undefined };
  const finish = async (): Promise<IteratorResult<LogEntry>> => {
    batch = [];
    await gen.return(undefined);
    return done;
  };
  const refill = async (): Promise<IteratorResult<LogEntry>> => {
    for (;;) {
      if (signal.aborted) return finish();
      const r = await gen.next();
      if (r.done) return done;
      batch = r.value;
      idx = 0;
      if (batch.length > 0) return { done: false, value: batch[idx++]! };
    }
  };
  const it: AsyncIterableIterator<LogEntry> = {
    [Symbol.asyncIterator]: () => it,
    next(): Promise<IteratorResult<LogEntry>> {
      if (idx < batch.length && !signal.aborted) return Promise.resolve({ done: false, value: batch[idx++]! });
      return refill();
    },
    return: finish,
    throw: async (err: unknown) => {
      await gen.return(undefined);
      throw err;
    },
  };
  return it;
}

export function createLogReader(opts: LogReaderOptions): { read(containerId: string, o: LogReadOptions, signal: AbortSignal, stopFollowing?: AbortSignal): AsyncIterable<LogEntry> } {
  const pollMs = opts.pollMs ?? 250;
  return {
    read(containerId, o, signal, stopFollowing) {
      const path = opts.pathOf(containerId);
      if (!path) {
        return (async function* () {
          throw notImplemented('configured logging driver does not support reading');
        })();
      }
      return flatten(readLog(path, o, signal, stopFollowing, pollMs, opts.log), signal);
    },
  };
}
