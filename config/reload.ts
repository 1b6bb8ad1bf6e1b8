// The SIGHUP reload diff: which reloadable options the new file changes, and a refusal when the
// file conflicts with flags, has unknown keys, is invalid, or changes an option that only a
// restart can apply. On refusal the daemon keeps running unchanged (spec §Daemon control).
import { isDeepStrictEqual } from 'node:util';
import type { ConfigField, DaemonConfig } from './options.ts';
import { setField } from './options.ts';
import { fileEntries, fileValues, parseConfigJson, type FileEntry } from './file.ts';
import type { ConfigSources } from './load.ts';
import { fileErrorPrefix, validateConfig } from './load.ts';
import { goFormat } from './values.ts';

export interface ReloadChange {
  field: ConfigField;
  /** The file key as written in daemon.json. */
  key: string;
  from: unknown;
  to: unknown;
}

export type ReloadResult =
  | { ok: true; config: DaemonConfig; changed: ReloadChange[] }
  | { ok: false; error: string; notReloadable: ReloadChange[] };

/**
 * Compares the running configuration with a re-read config file. Keys absent from the new file
 * keep their current value, as in the reference daemon. `newFileJson` is the parsed file (or its
 * text); `sources` (from loadDaemonConfig) tells which options came from flags.
 */
export function diffReload(oldConfig: DaemonConfig, newFileJson: unknown, sources?: Partial<ConfigSources>): ReloadResult {
  const fail = (msg: string, notReloadable: ReloadChange[] = []): ReloadResult => ({
    ok: false,
    error: fileErrorPrefix(oldConfig.configFile) + msg,
    notReloadable,
  });
  let entries: FileEntry[];
  let values: Partial<Record<ConfigField, unknown>>;
  try {
    const json = typeof newFileJson === 'string' ? parseConfigJson(newFileJson) : parseConfigJson(JSON.stringify(newFileJson ?? {}));
    entries = fileEntries(json);
    values = fileValues(entries);
  } catch (err) {
    return fail(err instanceof Error ? err.message : String(err));
  }

  const conflicts = entries
    .filter((e) => e.opt.field && sources?.[e.opt.field] === 'flag')
    .sort((a, b) => a.opt.name.localeCompare(b.opt.name))
    .map((e) => `${e.name}: (from flag: ${goFormat(oldConfig[e.opt.field!])}, from file: ${goFormat(e.raw)})`);
  if (conflicts.length > 0) {
    return fail(`the following directives are specified both as a flag and in the configuration file: ${conflicts.join(', ')}`);
  }

  const changed: ReloadChange[] = [];
  const notReloadable: ReloadChange[] = [];
  for (const e of entries) {
    const field = e.opt.field as ConfigField;
    const to = values[field];
    if (isDeepStrictEqual(oldConfig[field], to)) continue;
    const change = { field, key: e.opt.fileKey ?? e.name, from: oldConfig[field], to };
    (e.opt.reloadable && !restartOnly(field, oldConfig[field], to) ? changed : notReloadable).push(change);
  }
  if (notReloadable.length > 0) {
    const keys = notReloadable.map((c) => c.key).sort().join(', ');
    return fail(`the following directives cannot be changed by a reload, restart the daemon to apply them: ${keys}`, notReloadable);
  }

  const config = structuredClone(oldConfig);
  for (const c of changed) setField(config, c.field, structuredClone(c.to));
  try {
    validateConfig(config);
  } catch (err) {
    return fail(`file configuration validation failed (${err instanceof Error ? err.message : String(err)})`);
  }
  return { ok: true, config, changed };
}

/** A change of a reloadable option that still needs a restart: the supervisor's snapshotter switched (another image store). */
function restartOnly(field: ConfigField, from: unknown, to: unknown): boolean {
  if (field !== 'features') return false;
  const on = (v: unknown) => !!(v as Record<string, boolean> | undefined)?.['supervisor-snapshotter'];
  return on(from) !== on(to);
}
