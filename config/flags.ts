// Command-line parsing driven by the options table, with pflag's rules: --flag=value and
// --flag value, bool flags that take a value only after '=', short flags that may be grouped
// (-Dl debug) or carry their value (-Hunix://..., -H=unix://...), repeatable list and map flags.
import { invalidArgument } from '../lib/errors.ts';
import type { ConfigField, OptionDef, RuntimeEntry, Ulimit } from './options.ts';
import { OPTIONS, optionByFlag, optionByShort } from './options.ts';
import { ramInBytes } from '../lib/units.ts';
import { goBool } from '../lib/units.ts';
import { goFormat, parseAddressPool, parseIntStrict, parseRuntime, parseUlimit } from './values.ts';

export interface ParsedFlags {
  /** Field values for the options given on the command line, in their final typed form. */
  values: Partial<Record<ConfigField, unknown>>;
  /** The options given, by long name, with their value as the reference daemon prints it. */
  given: Map<string, { opt: OptionDef; shown: string }>;
  help: boolean;
  version: boolean;
  validate: boolean;
}

function flagLabel(opt: OptionDef): string {
  return opt.short ? `-${opt.short}, --${opt.name}` : `--${opt.name}`;
}

function badValue(opt: OptionDef, value: string, why: string): Error {
  return invalidArgument(`invalid argument "${value}" for "${flagLabel(opt)}" flag: ${why}`);
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function apply(res: ParsedFlags, opt: OptionDef, value: string): void {
  if (opt.type === 'action') {
    const b = goBool(value);
    if (b === undefined) throw badValue(opt, value, `strconv.ParseBool: parsing "${value}": invalid syntax`);
    if (opt.name === 'help') res.help = b;
    else if (opt.name === 'version') res.version = b;
    else if (opt.name === 'validate') res.validate = b;
    return;
  }
  const field = opt.field as ConfigField;
  const first = !res.given.has(opt.name);
  const cur = res.values[field];
  let shown = value;
  switch (opt.type) {
    case 'bool': {
      const b = goBool(value);
      if (b === undefined) throw badValue(opt, value, `strconv.ParseBool: parsing "${value}": invalid syntax`);
      res.values[field] = b;
      shown = String(b);
      break;
    }
    case 'int': {
      const n = parseIntStrict(value);
      if (n === undefined) throw badValue(opt, value, `strconv.ParseInt: parsing "${value}": invalid syntax`);
      res.values[field] = n;
      break;
    }
    case 'bytes':
      try {
        res.values[field] = ramInBytes(value);
      } catch (err) {
        throw badValue(opt, value, errMessage(err));
      }
      break;
    case 'string':
      res.values[field] = value;
      break;
    case 'list': {
      const list = first ? [] : (cur as string[]);
      list.push(value);
      res.values[field] = list;
      shown = goFormat(list);
      break;
    }
    case 'map': {
      const map = first ? {} : (cur as Record<string, string>);
      const eq = value.indexOf('=');
      if (eq < 0) map[value] = '';
      else map[value.slice(0, eq)] = value.slice(eq + 1);
      res.values[field] = map;
      shown = goFormat(map);
      break;
    }
    case 'mapmap': {
      const map = first ? {} : (cur as Record<string, Record<string, string>>);
      const m = /^([^=]+)=([^=]+)=(.*)$/.exec(value);
      if (!m) throw badValue(opt, value, 'expected driver=option=value');
      (map[m[1]] ??= {})[m[2]] = m[3];
      res.values[field] = map;
      shown = goFormat(map);
      break;
    }
    case 'feature': {
      const map = first ? {} : (cur as Record<string, boolean>);
      const eq = value.indexOf('=');
      const name = (eq < 0 ? value : value.slice(0, eq)).trim();
      const b = eq < 0 ? true : goBool(value.slice(eq + 1).trim());
      if (!name || b === undefined) throw badValue(opt, value, 'expected feature-name[=true|false]');
      map[name] = b;
      res.values[field] = map;
      shown = goFormat(map);
      break;
    }
    case 'ulimit': {
      const map = first ? {} : (cur as Record<string, Ulimit>);
      let u: Ulimit;
      try {
        u = parseUlimit(value);
      } catch (err) {
        throw badValue(opt, value, errMessage(err));
      }
      map[u.Name] = u;
      res.values[field] = map;
      shown = goFormat(Object.values(map).map((x) => `${x.Name}=${x.Soft}:${x.Hard}`));
      break;
    }
    case 'runtime': {
      const map = first ? {} : (cur as Record<string, RuntimeEntry>);
      let name: string;
      let entry: RuntimeEntry;
      try {
        [name, entry] = parseRuntime(value);
      } catch (err) {
        throw badValue(opt, value, errMessage(err));
      }
      if (map[name]) throw badValue(opt, value, `runtime '${name}' was already defined`);
      map[name] = entry;
      res.values[field] = map;
      shown = goFormat(Object.entries(map).map(([n, r]) => `${n}=${r.path}`));
      break;
    }
    case 'pool': {
      const list = first ? [] : (cur as unknown[]);
      try {
        list.push(parseAddressPool(value));
      } catch (err) {
        throw badValue(opt, value, errMessage(err));
      }
      res.values[field] = list;
      break;
    }
    case 'file':
      throw invalidArgument(`unknown flag: --${opt.name}`);
  }
  res.given.set(opt.name, { opt, shown });
}

const takesValue = (opt: OptionDef) => opt.type !== 'bool' && opt.type !== 'action';

/** Parses engined's argv (without node and script). Throws InvalidArgument with pflag's wording. */
export function parseFlags(argv: readonly string[]): ParsedFlags {
  const res: ParsedFlags = { values: {}, given: new Map(), help: false, version: false, validate: false };
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith('--')) {
      const body = arg.slice(2);
      const eq = body.indexOf('=');
      const name = eq < 0 ? body : body.slice(0, eq);
      const opt = optionByFlag(name);
      if (!opt || !name) throw invalidArgument(`unknown flag: --${name}`);
      if (eq >= 0) apply(res, opt, body.slice(eq + 1));
      else if (!takesValue(opt)) apply(res, opt, 'true');
      else if (i + 1 < argv.length) apply(res, opt, argv[++i]);
      else throw invalidArgument(`flag needs an argument: --${name}`);
    } else if (arg.startsWith('-') && arg.length > 1) {
      // A group of short flags; the first one that takes a value swallows the rest (or the next arg).
      let rest = arg.slice(1);
      while (rest.length > 0) {
        const c = rest[0];
        const opt = optionByShort(c);
        if (!opt) throw invalidArgument(`unknown shorthand flag: '${c}' in -${rest}`);
        rest = rest.slice(1);
        if (rest.startsWith('=')) {
          apply(res, opt, rest.slice(1));
          rest = '';
        } else if (!takesValue(opt)) {
          apply(res, opt, 'true');
        } else if (rest.length > 0) {
          apply(res, opt, rest);
          rest = '';
        } else if (i + 1 < argv.length) {
          apply(res, opt, argv[++i]);
        } else {
          throw invalidArgument(`flag needs an argument: '${c}' in -${c}`);
        }
      }
    } else {
      positional.push(arg);
    }
    if (res.help) return res;
  }
  if (positional.length > 0) throw invalidArgument(`"engined" accepts no arguments`);
  return res;
}

export function defaultShown(opt: OptionDef): string {
  const d = opt.default;
  if (opt.type === 'bool') return d ? 'true' : '';
  if (opt.type === 'bytes') return typeof d === 'number' && d === 64 * 1024 * 1024 ? '64MiB' : String(d);
  if (opt.type === 'list' || opt.type === 'pool' || opt.type === 'ulimit' || opt.type === 'runtime') {
    return Array.isArray(d) && d.length ? goFormat(d) : opt.type === 'list' || opt.type === 'pool' ? '' : '[]';
  }
  if (opt.type === 'map' || opt.type === 'mapmap') return 'map[]';
  if (opt.type === 'int') return d ? String(d) : '';
  return typeof d === 'string' ? d : '';
}

/** Usage text generated from the table, in the reference daemon's layout. */
export function helpText(): string {
  const rows: Array<[string, string]> = [];
  for (const opt of OPTIONS) {
    if (opt.cli === false) continue;
    const short = opt.short ? `-${opt.short}, ` : '    ';
    const argName = opt.type === 'bool' || opt.type === 'action' ? '' : ` ${opt.arg ?? (opt.type === 'bytes' ? 'bytes' : opt.type === 'int' ? 'int' : opt.type === 'list' ? 'list' : 'string')}`;
    const def = defaultShown(opt);
    const shownDef = def === '' ? '' : opt.type === 'string' ? ` (default "${def}")` : ` (default ${def})`;
    rows.push([`  ${short}--${opt.name}${argName}`, `${opt.description}${shownDef}`]);
  }
  const width = Math.max(...rows.map(([l]) => l.length)) + 3;
  const lines = rows.map(([l, r]) => `${l.padEnd(width)}${r}`);
  return `\nUsage:\tengined [OPTIONS]\n\nA self-sufficient runtime for containers.\n\nOptions:\n${lines.join('\n')}\n`;
}
