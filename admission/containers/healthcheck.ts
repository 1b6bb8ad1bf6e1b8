// Config.Healthcheck at create: checked as the reference daemon checks it (durations of at least
// 1ms, no negative retries, a known test form), then merged with the image's HEALTHCHECK: no
// healthcheck takes the image's; an empty test takes the image's test, zero durations its durations.
import { invalidArgument } from '../../lib/errors.ts';

export interface Healthcheck {
  Test?: string[];
  Interval?: number;
  Timeout?: number;
  StartPeriod?: number;
  StartInterval?: number;
  Retries?: number;
}

const DURATIONS = ['Interval', 'Timeout', 'StartPeriod', 'StartInterval'] as const;
const MIN_NS = 1_000_000;

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The body's Healthcheck, checked; null when absent. */
export function parseHealthcheck(raw: unknown): Healthcheck | null {
  if (raw === undefined || raw === null) return null;
  if (!isObj(raw)) throw invalidArgument('invalid Healthcheck: expected an object');
  const out: Healthcheck = {};
  const test = raw.Test;
  if (test !== undefined && test !== null) {
    if (!Array.isArray(test) || test.some((t) => typeof t !== 'string')) throw invalidArgument('invalid Healthcheck.Test: expected an array of strings');
    if (test.length && !['NONE', 'CMD', 'CMD-SHELL'].includes(test[0] as string)) throw invalidArgument(`unsupported Healthcheck.Test type: ${String(test[0])}`);
    out.Test = [...(test as string[])];
  }
  for (const k of DURATIONS) {
    const v = raw[k];
    if (v === undefined || v === null) continue;
    if (!Number.isInteger(v)) throw invalidArgument(`invalid Healthcheck.${k}: expected an integer (nanoseconds)`);
    if ((v as number) !== 0 && (v as number) < MIN_NS) throw invalidArgument(`${k} in Healthcheck cannot be less than 1ms`);
    out[k] = v as number;
  }
  const retries = raw.Retries;
  if (retries !== undefined && retries !== null) {
    if (!Number.isInteger(retries)) throw invalidArgument('invalid Healthcheck.Retries: expected an integer');
    if ((retries as number) < 0) throw invalidArgument('Retries in Healthcheck cannot be negative');
    out.Retries = retries as number;
  }
  return out;
}

/** The container's healthcheck with what it leaves unset taken from the image's; undefined when neither has one. */
export function mergeHealthcheck(own: Healthcheck | null, image: unknown): Healthcheck | undefined {
  const img = isObj(image) ? (image as Healthcheck) : null;
  if (!own) return img ? { ...img } : undefined;
  if (!img) return own;
  const out: Healthcheck = { ...own };
  if (!out.Test?.length) out.Test = img.Test;
  for (const k of DURATIONS) if (!out[k]) out[k] = img[k];
  if (!out.Retries) out.Retries = img.Retries;
  for (const k of Object.keys(out) as Array<keyof Healthcheck>) if (out[k] === undefined) delete out[k];
  return out;
}
