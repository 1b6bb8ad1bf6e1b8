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
