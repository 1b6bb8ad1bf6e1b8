// The json-file log driver: one JSON object per line,
//   {"log":"hi\n","stream":"stdout","time":"2026-01-02T03:04:05.123456789Z"}
// Chunks are split at newlines; a trailing piece without newline waits for the rest (or for
// close). Lines longer than 16 KiB are written as several partial entries (no "\n" in their
// "log") followed by the final piece, as the reference does. Batching, backpressure, rotation
// (`compress`: gzipped rotated files, `path.N.gz`) and the free-space reserve are the file
// drivers' (./batched-file.ts). The options labels, labels-regex, env, env-regex and tag add
// attributes to every entry, as the reference (jsonfilelog.go): the container labels and env
// they select (./info.ts extraAttributes) and the rendered tag (only when `tag` is set), written
// as Go's json.Marshal writes a map between "stream" and "time":
//   {"log":"hi\n","stream":"stdout","attrs":{"app":"web","tag":"x"},"time":"..."}
// `docker logs --details` shows them.
import { BatchedLogFile, type FileLog, type Held } from './batched-file.ts';
import { extraAttributes, goJsonStringMap, parseLogTag, type ContainerLogInfo } from './info.ts';
import type { FileLogOptions } from './file-options.ts';

export type { LogSink } from './batched-file.ts';

/** Longest "log" payload of one entry, in bytes; longer lines become partial entries. */
export const MAX_LINE = 16 * 1024;

/** What JSON.stringify escapes in decoded output (a newline ends an entry; decoding leaves no lone surrogate). */
const NEEDS_ESCAPE = /["\\\x00-\x09\x0b-\x1f]/;
/** Whether a line of `text` may be longer than MAX_LINE bytes (UTF-16 length * 3 bounds its UTF-8 length). */
function hasLongLine(text: string): boolean {
  const limit = Math.floor(MAX_LINE / 3);
  if (text.length <= limit) return false;
  let start = 0;
  for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
    if (nl - start > limit) return true;
    start = nl + 1;
  }
  return text.length - start > limit;
}

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

export class JsonFileWriter extends BatchedLogFile<string | Buffer> {
  /** `,"attrs":{...}` or ''. */
  private readonly extra: string;

  constructor(path: string, opts: FileLogOptions, log: FileLog, extra: string, held?: Held) {
    super(path, opts, log, held);
    this.extra = extra;
  }

  /**
   * A chunk's entries, all stamped with the time it arrived. Without a max-size (no rotation
   * between entries) they are queued as one buffer: the many small strings die young, instead of
   * waiting in the queue until they are old enough to fill the old generation (whose collections
   * then stall the API while containers log fast).
   */
  protected accept(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    const time = nowRfc3339Nano();
    const batched = !(this.opts.maxSize > 0);
    const entries = this.entries(stream, chunk, time, batched);
    if (entries.length === 0) return;
    if (batched) this.push(Buffer.from(entries.length === 1 ? entries[0]! : entries.join('')), time);
    else for (const e of entries) this.push(e, time);
  }

  /** The entries the chunk completes (what waits for its newline stays in `pending`). */
  private entries(stream: 'stdout' | 'stderr', chunk: Buffer, time: string, batched: boolean): string[] {
    const out: string[] = [];
    const suffix = `","stream":"${stream}"${this.extra},"time":"${time}"}\n`;
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
      if (batched && !NEEDS_ESCAPE.test(text) && !hasLongLine(text)) {
        // Nothing in them to escape or to split: all the entries in one string, no string per
        // line (JSON.stringify would return each line as it is).
        out.push(`{"log":"${text.replaceAll('\n', `\\n${suffix}{"log":"`)}\\n${suffix}`);
      } else {
        let start = 0;
        for (;;) {
          const nl = text.indexOf('\n', start);
          this.line(nl < 0 ? text.slice(start) : text.slice(start, nl), suffix, out);
          if (nl < 0) break;
          start = nl + 1;
        }
      }
    }
    let rest = buf.subarray(lastNl + 1);
    while (rest.length > MAX_LINE) {
      out.push(this.partial(rest.toString('utf8', 0, MAX_LINE), suffix));
      rest = rest.subarray(MAX_LINE);
    }
    // The caller may reuse its buffer: keep our own copy of the held piece.
    if (rest.length > 0) this.pending[stream] = Buffer.from(rest);
    return out;
  }

  /** One complete line (without its "\n"), as its entries. */
  private line(line: string, suffix: string, out: string[]): void {
    // UTF-16 length * 3 bounds the UTF-8 length: only long lines need the exact byte count.
    if (line.length * 3 > MAX_LINE && Buffer.byteLength(line) > MAX_LINE) {
      let bytes = Buffer.from(line);
      while (bytes.length > MAX_LINE) {
        out.push(this.partial(bytes.toString('utf8', 0, MAX_LINE), suffix));
        bytes = bytes.subarray(MAX_LINE);
      }
      line = bytes.toString('utf8');
    }
    const q = JSON.stringify(line);
    out.push(`{"log":${q.slice(0, -1)}\\n${suffix}`);
  }

  /** An entry of text without its newline (a piece of a long line, or the last piece at close); `suffix` closes the string. */
  private partial(text: string, suffix: string): string {
    return `{"log":${JSON.stringify(text).slice(0, -1)}${suffix}`;
  }

  protected flushHeld(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      const held = this.pending[stream];
      if (held) {
        this.pending[stream] = null;
        // A last piece without newline: written as is (no "\n" added).
        const time = nowRfc3339Nano();
        this.push(this.partial(held.toString('utf8'), `","stream":"${stream}"${this.extra},"time":"${time}"}\n`), time);
      }
    }
  }
}

/**
 * The `attrs` of json-file entries (`,"attrs":{...}` or '' when there are none): labels/env as
 * selected by the options, and `tag` rendered (no default template) when set. Throws (a bad
 * regexp or template) as the reference's New.
 */
export function jsonFileAttrs(info: ContainerLogInfo | undefined, config: Record<string, string>): string {
  if (!info) return '';
  let attrs: Record<string, string>;
  try {
    attrs = extraAttributes(info, config);
    const tag = parseLogTag(info, config, '');
    if (tag !== '') attrs.tag = tag;
  } catch (err) {
    throw new Error(`failed to initialize logging driver: ${(err as Error).message}`);
  }
  return Object.keys(attrs).length ? `,"attrs":${goJsonStringMap(attrs)}` : '';
}
