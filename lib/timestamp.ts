// The reference's GetTimestamp (api/types/time): the `until` of the prune filters and the image
// list, and the `since`/`until` of the event stream, read one way. A Go duration before now ("10m",
// "1h30m"; whole seconds, as the reference keeps them), an RFC 3339 date or date-time (local time
// without a zone, as ParseInLocation), or Unix seconds[.nanos].
import { invalidArgument } from './errors.ts';
import { parseGoDuration } from './units.ts';

const NS_PER_MS = 1_000_000n;
const NS_PER_S = 1_000_000_000n;

/** `value` as nanoseconds since the epoch; `nowMs` is what a duration counts back from. Bad input: a 400. */
export function parseTimestamp(value: string, nowMs: number): bigint {
  if (value !== '0') {
    let d: number | undefined;
    try {
      d = parseGoDuration(value);
    } catch {
      // not a duration
    }
    if (d !== undefined) return (BigInt(Math.floor(nowMs / 1000)) - BigInt(Math.trunc(d / 1e9))) * NS_PER_S;
  }
  const t = dateTime(value);
  if (t !== null) return t;
  // Shaped like a date (a '-', as a negative number is too), but not one.
  if (value.includes('-')) throw invalidArgument(`parsing time ${JSON.stringify(value)}: not an RFC 3339 date or time`);
  const unix = /^(\d+)(?:\.(\d+))?$/.exec(value);
  if (!unix) throw invalidArgument(`failed to parse value as time or duration: ${JSON.stringify(value)}`);
  return BigInt(unix[1]!) * NS_PER_S + BigInt((unix[2] ?? '').padEnd(9, '0').slice(0, 9) || '0');
}

/** The same, in milliseconds. */
export function parseTimestampMs(value: string, nowMs: number): number {
  return Number(parseTimestamp(value, nowMs) / NS_PER_MS);
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2})(?::(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?)?([zZ]|[+-]\d{2}:\d{2})?$/;

/** RFC 3339 and its shortened forms (date only, hour, hour and minute) in ns, or null. */
function dateTime(value: string): bigint | null {
  const m = DATE_TIME.exec(value);
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone] = m;
  const [year, month, day, hour, min, sec] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate() || hour > 23 || min > 59 || sec > 59) return null;
  let ms: number;
  if (zone === undefined) ms = new Date(year, month - 1, day, hour, min, sec).getTime();
  else {
    const off = zone === 'z' || zone === 'Z' ? 0 : (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
    ms = Date.UTC(year, month - 1, day, hour, min, sec) - off * 60_000;
  }
  return BigInt(ms) * NS_PER_MS + BigInt(frac.padEnd(9, '0') || '0');
}
