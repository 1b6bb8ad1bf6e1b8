// The JSON configuration file: reading, flattening nested option groups (proxies), unknown-key and
// flag-conflict detection with the reference daemon's messages, and conversion to typed fields.
import { readFileSync } from 'node:fs';
import { invalidArgument, notFound } from '../lib/errors.ts';
import type { ConfigField, OptionDef } from './options.ts';
import { optionByFileKey } from './options.ts';
import type { ParsedFlags } from './flags.ts';
import { fromFileValue, goFormat } from './values.ts';

/** Keys whose object value holds other options and is flattened, as the reference daemon does. */
const GROUPS = new Set(['proxies']);

export interface FileEntry {
  opt: OptionDef;
  /** The key as the reference daemon names it in messages (the flattened, last segment). */
  name: string;
  raw: unknown;
}

/** Reads and parses the file. Throws NotFound (code ENOENT kept as cause) when it does not exist. */
export function readConfigJson(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw notFound(`open ${path}: no such file or directory`, err);
    throw invalidArgument(`open ${path}: ${(err as Error).message}`, err);
  }
  return parseConfigJson(text);
}

export function parseConfigJson(text: string): Record<string, unknown> {
  const body = text.replace(/^\uFEFF/, '');
  if (body.trim() === '') return {};
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (err) {
    throw invalidArgument(`invalid JSON: ${(err as Error).message}`, err);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw invalidArgument('invalid JSON: the configuration must be a JSON object');
  }
  return json as Record<string, unknown>;
}

/** Maps every key of the file to its option; unknown keys make the whole file invalid. */
export function fileEntries(json: Record<string, unknown>): FileEntry[] {
  const entries: FileEntry[] = [];
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(json)) {
    if (GROUPS.has(key) && typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const [sub, v] of Object.entries(value)) {
        const opt = optionByFileKey(`${key}.${sub}`);
        if (opt) entries.push({ opt, name: sub, raw: v });
        else unknown.push(sub);
      }
      continue;
    }
    const opt = optionByFileKey(key);
    if (opt) entries.push({ opt, name: key, raw: value });
    else unknown.push(key);
  }
  if (unknown.length > 0) {
    throw invalidArgument(`the following directives don't match any configuration option: ${unknown.sort().join(', ')}`);
  }
  return entries;
}

/** Proxy URLs may carry credentials; the reference daemon masks them in messages. */
export function maskCredentials(v: string): string {
  return v.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/@]*)@/i, (_m, scheme: string, userinfo: string) =>
    `${scheme}${userinfo.includes(':') ? 'xxxxx:xxxxx' : 'xxxxx'}@`,
  );
}

function shownValue(opt: OptionDef, v: unknown): string {
  const s = goFormat(v);
  return opt.fileKey?.startsWith('proxies.') ? maskCredentials(s) : s;
}

/** Options set both as a flag and in the file: the daemon refuses to start (spec §Errors). */
export function findConflicts(flags: ParsedFlags, entries: readonly FileEntry[]): string | null {
  const inFile = new Map(entries.map((e) => [e.opt.name, e]));
  const conflicts: string[] = [];
  for (const name of [...flags.given.keys()].sort()) {
    const e = inFile.get(name);
    if (!e) continue;
    const given = flags.given.get(name)!;
    conflicts.push(`${e.name}: (from flag: ${shownValue(e.opt, given.shown)}, from file: ${shownValue(e.opt, e.raw)})`);
  }
  if (conflicts.length === 0) return null;
  return `the following directives are specified both as a flag and in the configuration file: ${conflicts.join(', ')}`;
}

/** Typed field values for the file's entries. */
export function fileValues(entries: readonly FileEntry[]): Partial<Record<ConfigField, unknown>> {
  const out: Partial<Record<ConfigField, unknown>> = {};
  for (const e of entries) out[e.opt.field as ConfigField] = fromFileValue(e.opt, e.name, e.raw);
  return out;
}
