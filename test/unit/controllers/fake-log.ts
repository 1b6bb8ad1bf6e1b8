// A pino-shaped logger that records calls, so tests need no pino instance and can assert logs.
import type { Logger } from 'pino';

export interface LogLine {
  level: string;
  bindings: Record<string, unknown>;
  obj: unknown;
  msg: string | undefined;
}

export function fakeLog(lines: LogLine[] = [], bindings: Record<string, unknown> = {}): Logger & { lines: LogLine[] } {
  const at =
    (level: string) =>
    (obj: unknown, msg?: string): void => {
      lines.push({ level, bindings, obj, msg: typeof obj === 'string' ? obj : msg });
    };
  const log = {
    lines,
    level: 'debug',
    child: (b: Record<string, unknown>) => fakeLog(lines, { ...bindings, ...b }),
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    fatal: at('fatal'),
    silent: () => {},
    flush: () => {},
  };
  return log as unknown as Logger & { lines: LogLine[] };
}
