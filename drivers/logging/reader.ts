// Reads json-file logs back as entries: stream filtering, since/until, tail N (found by reading
// blocks backwards from the end, across rotated files, without parsing what is skipped) and
// follow (fs.watch on the directory plus a poll fallback; survives rotation and truncation).
// Rotated files may be gzipped (path.N.gz, ./rotate.ts). Each format reads its own records and
// finds its own tail: json-file lines in ./json-source.ts, the `local` driver's framed protobuf
// records (…/local-logs/container.log) in ./local-reader.ts.
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import { notImplemented } from '../../lib/errors.ts';
import { RecordSource, isLocalLogPath, localTailOffsets } from './local-reader.ts';
import { LineSource, tailOffsets } from './json-source.ts';
import { openRotated } from './rotate.ts';
import type { LogFileHandle as FileHandle } from './rotate.ts';

import type { LogEntry, LogReadOptions } from '../../lib/ports/logs.ts';
export type { LogEntry, LogReadOptions };

export interface LogReaderOptions {
  pathOf: (containerId: string) => string | undefined;
  log: Logger;
  /** Poll interval while following, a fallback for missed watch events. */
  pollMs?: number;
}

/** How far a follower looks back for files rotated past it (max-file is rarely near this). */
const MAX_ROTATED_SCAN = 100;

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

/**
 * The rotated files written after the one with inode `ino` and before `current`, oldest first:
 * path.1, path.2, … are opened until the old file is found among them (as path.K; then path.K-1 …
 * path.1 came after it). None when it is not found (compressed or removed by max-file: where it
 * stood is unknown) — the follower then goes on with `current` as before.
 */
async function rotatedSince(path: string, ino: number, current: FileHandle): Promise<FileHandle[]> {
  const currentIno = (await current.stat()).ino;
  const newer: FileHandle[] = [];
  const seen = new Set<number>();
  for (let k = 1; k <= MAX_ROTATED_SCAN; k++) {
    const fh = await openIfExists(`${path}.${k}`);
    if (!fh) break;
    const fIno = (await fh.stat().catch(() => null))?.ino;
    // The old file: what was opened before it is newer. `current` or a file seen twice: renamed
    // under the scan by another rotation.
    if (fIno === ino) {
      await fh.close().catch(() => {});
      return newer.reverse();
    }
    if (fIno === undefined || fIno === currentIno || seen.has(fIno)) await fh.close().catch(() => {});
    else {
      seen.add(fIno);
      newer.push(fh);
    }
  }
  await Promise.all(newer.map((h) => h.close().catch(() => {})));
  return [];
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
            // Rotated more than once since the last look (a busy writer, a slow reader): the
            // files written in between, oldest first, before the new one.
            const between = await rotatedSince(path, ino, fh);
            for (const b of between) handles.add(b);
            for (const b of between) {
              if (yield* drainSource(sourceOf(b, 0), verdict, signal)) return;
              handles.delete(b);
              await b.close().catch(() => {});
            }
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
