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

export function makeLogger(opts: { level: string; format: string }): Logger {
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
  const text = {
    write(chunk: string): void {
      dest.write(textLine(chunk));
    },
    flush(): void {
      dest.flush();
    },
  };
  return pino(base, text);
}
