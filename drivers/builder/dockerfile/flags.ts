// An instruction's `--name=value` flags, checked against what that instruction accepts, with
// the reference's (BFlags) messages.
import { withSuggestion } from './errors.ts';

export type FlagKind = 'string' | 'bool' | 'strings';
export type FlagValues = { strings: Record<string, string>; bools: Record<string, boolean>; lists: Record<string, string[]>; used: string[] };

export function parseFlags(args: string[], spec: Record<string, FlagKind>): FlagValues {
  const out: FlagValues = { strings: {}, bools: {}, lists: {}, used: [] };
  for (const a of args) {
    if (a === '--') break;
    if (!a.startsWith('--')) throw new Error(`arg should start with -- : ${a}`);
    const eq = a.indexOf('=');
    const flagName = eq < 0 ? a : a.slice(0, eq);
    const value = eq < 0 ? '' : a.slice(eq + 1);
    const name = flagName.slice(2);
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (!kind) throw new Error(withSuggestion(`unknown flag: ${flagName}`, name, Object.keys(spec), true));
    if (out.used.includes(name) && kind !== 'strings') throw new Error(`duplicate flag specified: ${flagName}`);
    out.used.push(name);
    if (kind === 'bool') {
      if (eq >= 0 && value === '') throw new Error(`missing a value on flag: ${flagName}`);
      const v = value.toLowerCase();
      if (v !== 'true' && v !== 'false' && v !== '') {
        throw new Error(`expecting boolean value for flag ${flagName}, not: ${value}`);
      }
      out.bools[name] = v !== 'false';
      continue;
    }
    if (eq < 0) throw new Error(`missing a value on flag: ${flagName}`);
    if (kind === 'string') out.strings[name] = value;
    else (out.lists[name] ??= []).push(value);
  }
  return out;
}

const UNITS: Record<string, number> = { ns: 1, us: 1e3, 'µs': 1e3, 'μs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

// Go's time.ParseDuration, in nanoseconds (what the image config's Healthcheck carries).
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
    const scale = UNITS[unit];
    if (scale === undefined) throw new Error(`time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`);
    rest = rest.slice(unit.length);
    total += Number(`${num[1] || '0'}.${num[2] ?? ''}0`) * scale;
  }
  return sign * Math.round(total);
}
