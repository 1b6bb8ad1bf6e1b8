// Go's duration text, go-units' sizes and strconv.ParseBool's spellings, as the reference daemon
// reads and writes them: one definition each for the options, filters, Dockerfile flags and
// messages that use them.
import { invalidArgument } from './errors.ts';

const GO_TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const GO_FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Go's strconv.ParseBool: the value of one of its spellings, undefined for anything else. */
export function goBool(s: string): boolean | undefined {
  return GO_TRUE.has(s) ? true : GO_FALSE.has(s) ? false : undefined;
}

/** Go's strconv.ParseBool's message for a value that is none of its spellings. */
export function goBoolSyntax(s: string): string {
  return `strconv.ParseBool: parsing ${JSON.stringify(s)}: invalid syntax`;
}

const DURATION_UNITS: Record<string, number> = { ns: 1, us: 1e3, 'µs': 1e3, 'μs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** Go's time.ParseDuration, in nanoseconds; throws Go's messages ("time: invalid duration ..."). */
export function parseGoDuration(s: string): number {
  const quoted = JSON.stringify(s);
  let rest = s;
  let sign = 1;
  if (rest[0] === '-' || rest[0] === '+') {
    if (rest[0] === '-') sign = -1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw new Error(`time: invalid duration ${quoted}`);
  let total = 0;
  while (rest !== '') {
    const num = /^(\d*)(?:\.(\d*))?/.exec(rest);
    if (!num || (num[1] === '' && (num[2] ?? '') === '')) throw new Error(`time: invalid duration ${quoted}`);
    rest = rest.slice(num[0].length);
    const unit = /^[^\d.]*/.exec(rest)?.[0] ?? '';
    if (unit === '') throw new Error(`time: missing unit in duration ${quoted}`);
    const scale = DURATION_UNITS[unit];
    if (scale === undefined) throw new Error(`time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`);
    rest = rest.slice(unit.length);
    total += Number(`${num[1] || '0'}.${num[2] ?? ''}0`) * scale;
  }
  return sign * Math.round(total);
}

/** Whether `s` reads as a Go duration. */
export function isGoDuration(s: string): boolean {
  try {
    parseGoDuration(s);
    return true;
  } catch {
    return false;
  }
}

const trim = (n: number): string => String(Number(n.toFixed(9)));

/** Go's time.Duration String() ("0s", "500ms", "1.5s", "2m0s", "1h0m0s") for nanoseconds. */
export function formatGoDuration(ns: number): string {
  if (ns === 0) return '0s';
  if (ns < 0) return `-${formatGoDuration(-ns)}`;
  if (ns < 1e3) return `${ns}ns`;
  if (ns < 1e6) return `${trim(ns / 1e3)}µs`;
  if (ns < 1e9) return `${trim(ns / 1e6)}ms`;
  let s = ns / 1e9;
  let out = '';
  if (s >= 3600) {
    out += `${Math.floor(s / 3600)}h`;
    s %= 3600;
  }
  if (out || s >= 60) {
    out += `${Math.floor(s / 60)}m`;
    s %= 60;
  }
  return `${out}${trim(s)}s`;
}

const DECIMAL: Record<string, number> = { '': 1, k: 1e3, m: 1e6, g: 1e9, t: 1e12, p: 1e15 };
const BINARY: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4, p: 1024 ** 5 };

/** go-units' size syntax (the reference's vendored v0.4): "10m", "1.5 GiB", "512kb", "1024". */
function parseSize(s: string, units: Record<string, number>): number {
  const m = /^(\d+(?:\.\d+)*) ?([kKmMgGtTpP])?[iI]?[bB]?$/.exec(s);
  if (!m) throw invalidArgument(`invalid size: '${s}'`);
  return Math.trunc(Number.parseFloat(m[1]!) * units[(m[2] ?? '').toLowerCase()]!);
}

/** go-units FromHumanSize: decimal multiples ("10m" = 10,000,000 bytes; log sizes, builder storage). */
export const fromHumanSize = (s: string): number => parseSize(s, DECIMAL);
/** go-units RAMInBytes: binary multiples ("64m" = 64 MiB; memory, shm, buffers). */
export const ramInBytes = (s: string): number => parseSize(s, BINARY);

const HUMAN_UNITS = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB', 'ZB', 'YB'];

/** go-units HumanSize: decimal units, 4 significant digits (`1.235MB`, `512B`). */
export function humanSize(n: number): string {
  let i = 0;
  while (n >= 1000 && i < HUMAN_UNITS.length - 1) {
    n /= 1000;
    i++;
  }
  return `${Number(n.toPrecision(4))}${HUMAN_UNITS[i]}`;
}
