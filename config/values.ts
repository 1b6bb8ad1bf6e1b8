// Value parsers for the option types of the table: command-line strings and config-file JSON both
// end up as the typed DaemonConfig field. Messages follow the reference daemon's wording.
import { invalidArgument } from '../lib/errors.ts';
import { ramInBytes } from '../lib/units.ts';
import type { AddressPool, OptionDef, RuntimeEntry, Ulimit } from './options.ts';
import { STOCK_RUNTIME } from './options.ts';


/** Go's strconv.ParseInt(s, 0, 64) for the values an option can sensibly hold. */
export function parseIntStrict(s: string): number | undefined {
  const t = s.replace(/_/g, '');
  let m = /^([+-]?)(0x[0-9a-f]+|0o[0-7]+|0b[01]+)$/i.exec(t);
  if (m) {
    const n = Number(m[2]);
    return m[1] === '-' ? -n : n;
  }
  m = /^[+-]?\d+$/.exec(t);
  if (!m) return undefined;
  const n = Number(t);
  return Number.isSafeInteger(n) ? n : undefined;
}

const ULIMIT_NAMES = new Set([
  'core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue', 'nice', 'nofile', 'nproc', 'rss', 'rtprio', 'rttime', 'sigpending', 'stack',
]);

/** name=soft[:hard], as for `docker run --ulimit`. */
export function parseUlimit(s: string): Ulimit {
  const eq = s.indexOf('=');
  if (eq < 0) throw invalidArgument(`invalid ulimit argument: ${s}`);
  const name = s.slice(0, eq);
  if (!ULIMIT_NAMES.has(name)) throw invalidArgument(`invalid ulimit type: ${name}`);
  const parts = s.slice(eq + 1).split(':');
  if (parts.length > 2) throw invalidArgument(`too many limit value arguments - ${s.slice(eq + 1)}, can only have up to two, \`soft[:hard]\``);
  const soft = parseIntStrict(parts[0]);
  const hard = parts.length === 2 ? parseIntStrict(parts[1]) : soft;
  if (soft === undefined || hard === undefined) throw invalidArgument(`invalid ulimit argument: ${s}`);
  checkUlimit({ Name: name, Soft: soft, Hard: hard });
  return { Name: name, Soft: soft, Hard: hard };
}

function checkUlimit(u: Ulimit): void {
  if (!ULIMIT_NAMES.has(u.Name)) throw invalidArgument(`invalid ulimit type: ${u.Name}`);
  if (u.Soft > u.Hard) throw invalidArgument(`ulimit soft limit must be less than or equal to hard limit: ${u.Soft} > ${u.Hard}`);
}

/** --add-runtime name=path. */
export function parseRuntime(s: string): [string, RuntimeEntry] {
  const eq = s.indexOf('=');
  const name = eq < 0 ? '' : s.slice(0, eq).trim().toLowerCase();
  const path = eq < 0 ? '' : s.slice(eq + 1).trim();
  if (!name || !path) throw invalidArgument(`invalid runtime argument: ${s}`);
  if (name === STOCK_RUNTIME) throw invalidArgument(`runtime name '${STOCK_RUNTIME}' is reserved`);
  return [name, { path }];
}

/** --default-address-pool base=10.10.0.0/16,size=24 */
export function parseAddressPool(s: string): AddressPool {
  const pool: Partial<AddressPool> = {};
  for (const field of s.split(',')) {
    const eq = field.indexOf('=');
    const k = field.slice(0, eq).trim().toLowerCase();
    const v = field.slice(eq + 1).trim();
    if (eq < 0) throw invalidArgument(`invalid field '${field}' must be a key=value pair`);
    if (k === 'base') pool.base = v;
    else if (k === 'size') {
      const n = parseIntStrict(v);
      if (n === undefined) throw invalidArgument(`invalid size value: ${v}`);
      pool.size = n;
    } else throw invalidArgument(`unexpected key '${k}' in '${field}'`);
  }
  return checkPool(pool);
}

function checkPool(pool: Partial<AddressPool>): AddressPool {
  if (!pool.base || !isCidr(pool.base)) throw invalidArgument(`invalid base pool: ${pool.base ?? ''}`);
  const max = pool.base.includes(':') ? 128 : 32;
  if (pool.size === undefined || !Number.isInteger(pool.size) || pool.size < 0 || pool.size > max) {
    throw invalidArgument(`invalid pool size: ${pool.size ?? ''}`);
  }
  return { base: pool.base, size: pool.size };
}

export function isIPv4(s: string): boolean {
  const parts = s.split('.');
  return parts.length === 4 && parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255);
}

export function isIP(s: string): boolean {
  if (isIPv4(s)) return true;
  if (!s.includes(':') || !/^[0-9a-f:.]+$/i.test(s)) return false;
  const dbl = s.split('::');
  if (dbl.length > 2) return false;
  const groups = s.split(':').filter((g) => g !== '');
  const last = groups[groups.length - 1] ?? '';
  const v4tail = last.includes('.') ? isIPv4(last) : false;
  const hexGroups = v4tail ? groups.slice(0, -1) : groups;
  if (!hexGroups.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return false;
  const count = hexGroups.length + (v4tail ? 2 : 0);
  return dbl.length === 2 ? count < 8 : count === 8;
}

export function isCidr(s: string): boolean {
  const [ip, bits, extra] = s.split('/');
  if (extra !== undefined || bits === undefined || !/^\d+$/.test(bits)) return false;
  return isIP(ip) && Number(bits) <= (ip.includes(':') ? 128 : 32);
}

// ---- config-file values -------------------------------------------------------------------

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function typeError(key: string, want: string, v: unknown): Error {
  return invalidArgument(`invalid value for "${key}" in the configuration file: expected ${want}, got ${jsonType(v)}`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function stringArray(key: string, v: unknown): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw typeError(key, 'an array of strings', v);
  return [...v];
}

function stringMap(key: string, v: unknown): Record<string, string> {
  if (!isObject(v) || !Object.values(v).every((x) => typeof x === 'string')) throw typeError(key, 'an object of strings', v);
  return { ...(v as Record<string, string>) };
}

/** Converts one config-file value to its DaemonConfig field value. */
export function fromFileValue(opt: OptionDef, key: string, v: unknown): unknown {
  switch (opt.type) {
    case 'string':
      if (typeof v !== 'string') throw typeError(key, 'a string', v);
      return v;
    case 'bool':
      if (typeof v !== 'boolean') throw typeError(key, 'a boolean', v);
      return v;
    case 'int':
      if (typeof v !== 'number' || !Number.isInteger(v)) throw typeError(key, 'an integer', v);
      return v;
    case 'bytes':
      if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
      if (typeof v !== 'string') throw typeError(key, 'a size string such as "64M"', v);
      return ramInBytes(v);
    case 'list':
      return stringArray(key, v);
    case 'map':
      return stringMap(key, v);
    case 'mapmap': {
      if (!isObject(v)) throw typeError(key, 'an object of driver name to options', v);
      const out: Record<string, Record<string, string>> = {};
      for (const [driver, opts] of Object.entries(v)) out[driver] = stringMap(`${key}.${driver}`, opts);
      return out;
    }
    case 'feature': {
      if (!isObject(v) || !Object.values(v).every((x) => typeof x === 'boolean')) throw typeError(key, 'an object of booleans', v);
      return { ...(v as Record<string, boolean>) };
    }
    case 'ulimit': {
      if (!isObject(v)) throw typeError(key, 'an object of ulimits', v);
      const out: Record<string, Ulimit> = {};
      for (const [name, u] of Object.entries(v)) {
        if (!isObject(u)) throw typeError(`${key}.${name}`, 'an object {Name, Soft, Hard}', u);
        const lim: Ulimit = { Name: typeof u.Name === 'string' && u.Name ? u.Name : name, Soft: Number(u.Soft ?? 0), Hard: Number(u.Hard ?? 0) };
        if (!Number.isInteger(lim.Soft) || !Number.isInteger(lim.Hard)) throw typeError(`${key}.${name}`, 'integer Soft and Hard', u);
        checkUlimit(lim);
        out[name] = lim;
      }
      return out;
    }
    case 'runtime': {
      if (!isObject(v)) throw typeError(key, 'an object of runtimes', v);
      const out: Record<string, RuntimeEntry> = {};
      for (const [name, r] of Object.entries(v)) {
        if (!isObject(r)) throw typeError(`${key}.${name}`, 'an object', r);
        const entry: RuntimeEntry = {};
        for (const [k, x] of Object.entries(r)) {
          if (k === 'path' || k === 'runtimeType') {
            if (typeof x !== 'string') throw typeError(`${key}.${name}.${k}`, 'a string', x);
            entry[k] = x;
          } else if (k === 'runtimeArgs') entry.runtimeArgs = stringArray(`${key}.${name}.${k}`, x);
          else if (k === 'options') {
            if (!isObject(x)) throw typeError(`${key}.${name}.${k}`, 'an object', x);
            entry.options = { ...x };
          } else throw invalidArgument(`runtime ${name}: unknown field "${k}"`);
        }
        out[name] = entry;
      }
      return out;
    }
    case 'pool': {
      if (!Array.isArray(v)) throw typeError(key, 'an array of {base, size}', v);
      return v.map((p) => {
        if (!isObject(p)) throw typeError(key, 'an array of {base, size}', p);
        return checkPool({ base: typeof p.base === 'string' ? p.base : undefined, size: typeof p.size === 'number' ? p.size : undefined });
      });
    }
    case 'file':
      if (!isObject(v)) throw typeError(key, 'an object', v);
      return structuredClone(v);
    case 'action':
      throw invalidArgument(`"${key}" cannot be set in the configuration file`);
  }
}

/** Formats a value the way Go's %v prints it, for conflict messages. */
export function goFormat(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(goFormat).join(' ')}]`;
  if (isObject(v)) {
    const keys = Object.keys(v).sort();
    return `map[${keys.map((k) => `${k}:${goFormat(v[k])}`).join(' ')}]`;
  }
  if (v === null || v === undefined) return '<nil>';
  return String(v);
}
