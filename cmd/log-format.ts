// The daemon's log formats (spec rule 14): `text` (the default), logrus-style lines
//   time="2026-01-02T03:04:05.123456789Z" level=info msg="API listen" hosts="[unix:///x.sock]"
// and `json`, one object per line with level (a name), msg and time (RFC 3339, nanoseconds).
import pino, { type Logger } from 'pino';
import { nowRfc3339Nano } from '../drivers/logging/json-file.ts';
import { sourceMappedStack } from './source-stack.ts';

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warning', 50: 'error', 60: 'fatal' };

/** A logfmt value: bare when it is one plain word, else quoted as Go's %q would. */
function value(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return /^[A-Za-z0-9_.:/@+-]+$/.test(s) ? s : JSON.stringify(s);
}

/** logrus's level colors on a terminal: gray, blue, yellow, red. */
const COLORS: Record<string, number> = { trace: 37, debug: 37, info: 36, warning: 33, error: 31, fatal: 31 };

/**
 * The text form on a terminal, as logrus's TextFormatter writes it there unless --raw-logs
 * (DisableColors) is given: a colored four-letter level, the seconds since start, the message
 * padded to 44 columns and colored keys — `INFO[0002] API listen   hosts=...`.
 */
export function ttyLine(json: string, startMs: number): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const { time, level, msg, err, ...rest } = rec;
  const name = typeof level === 'number' ? (LEVELS[level] ?? String(level)) : String(level);
  const color = COLORS[name] ?? 36;
  const secs = Math.max(0, Math.floor((Date.parse(String(time ?? '')) - startMs) / 1000)) || 0;
  let line = `\x1b[${color}m${name.toUpperCase().slice(0, 4)}\x1b[0m[${String(secs).padStart(4, '0')}] ${String(msg ?? '').padEnd(44)}`;
  const kv = (k: string, v: unknown) => {
    line += ` \x1b[${color}m${k}\x1b[0m=${value(v)}`;
  };
  if (err && typeof err === 'object') kv('error', (err as { message?: unknown }).message ?? err);
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) kv(k, v);
  return `${line}\n`;
}

/** One pino JSON record as a text line. */
export function textLine(json: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const { time, level, msg, err, ...rest } = rec;
  let line = `time=${JSON.stringify(String(time ?? ''))} level=${typeof level === 'number' ? (LEVELS[level] ?? level) : String(level)} msg=${JSON.stringify(String(msg ?? ''))}`;
  if (err && typeof err === 'object') {
    const e = err as { message?: unknown; stack?: unknown };
    line += ` error=${value(e.message ?? err)}`;
    // Where a failure came from, for the errors only: a warning's stack is noise.
    if (typeof level === 'number' && level >= 50 && typeof e.stack === 'string') line += ` stack=${JSON.stringify(sourceMappedStack(e.stack))}`;
  }
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) line += ` ${k}=${value(v)}`;
  return `${line}\n`;
}

/** A JSON record whose error stack names the TypeScript sources. */
function withSourceStack(json: string): string {
  try {
    const rec = JSON.parse(json) as { err?: { stack?: unknown } };
    if (typeof rec.err?.stack !== 'string') return json;
    rec.err.stack = sourceMappedStack(rec.err.stack);
    return `${JSON.stringify(rec)}\n`;
  } catch {
    return json;
  }
}

/**
 * opts.raw (--raw-logs): always the plain text form, never the terminal's colored one (which the
 * text format takes only when stderr is a terminal).
 */
export function makeLogger(opts: { level: string; format: string; raw?: boolean }): Logger {
  const dest = pino.destination({ fd: 2, sync: false });
  const base = {
    level: opts.level,
    base: undefined,
    timestamp: () => `,"time":"${nowRfc3339Nano()}"`,
  };
  if (opts.format === 'json') {
    const json = {
      write(chunk: string): void {
        dest.write(chunk.includes('"stack":"') ? withSourceStack(chunk) : chunk);
      },
      flush(): void {
        dest.flush();
      },
    };
    return pino({ ...base, formatters: { level: (_label: string, n: number) => ({ level: LEVELS[n] ?? String(n) }) } }, json);
  }
  const startMs = Date.now();
  const colored = !opts.raw && process.stderr.isTTY === true;
  const text = {
    write(chunk: string): void {
      dest.write(colored ? ttyLine(chunk, startMs) : textLine(chunk));
    },
    flush(): void {
      dest.flush();
    },
  };
  return pino(base, text);
}
