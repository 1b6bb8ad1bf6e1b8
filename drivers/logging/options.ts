// Log driver names and options, validated with the reference daemon's messages.
import { invalidArgument } from '../../lib/errors.ts';
import { goBool, ramInBytes } from '../../lib/units.ts';
import { fileLogOptions } from './file-options.ts';
import { validateFluentd } from './fluentd.ts';
import { validateGelf } from './gelf.ts';
import { validateJournald } from './journald.ts';
import { validateSyslog } from './syslog.ts';
import { localLogOptions } from './local.ts';

export interface LogConfigInput {
  Type: string;
  Config: Record<string, string> | null | undefined;
}


const JSON_FILE_OPTS = new Set(['max-file', 'max-size', 'compress', 'labels', 'labels-regex', 'env', 'env-regex', 'tag']);
/** The reference's local driver takes only these (daemon/logger/local: LogOptKeys); labels, env, tag are refused. */
const LOCAL_OPTS = new Set(['max-file', 'max-size', 'compress']);
export const FILE_DRIVERS = new Set(['json-file', 'local']);
/** Drivers that send the logs elsewhere; `docker logs` reads their local cache. */
export const REMOTE_DRIVERS = new Set(['syslog', 'gelf', 'fluentd', 'journald']);
/** Every registered driver, sorted, as `docker info` lists them (Plugins.Log). */
export const LOG_DRIVERS = [...FILE_DRIVERS, ...REMOTE_DRIVERS].sort();
/** Options of every driver, kept out of the drivers' own validation (as the reference's builtInLogOpts). */
const BUILTIN_OPTS = new Set(['mode', 'max-buffer-size', 'cache-disabled', 'cache-max-file', 'cache-max-size', 'cache-compress']);
const REMOTE_VALIDATORS: Record<string, (cfg: Record<string, string>) => void> = {
  syslog: validateSyslog,
  gelf: validateGelf,
  fluentd: validateFluentd,
  journald: validateJournald,
};

/** Whether the local cache of a remote driver is on (cache-disabled unset or false). */
export function cacheEnabled(cfg: Record<string, string>): boolean {
  const v = cfg['cache-disabled'];
  if (!v) return true;
  return goBool(v) === false;
}

/** Whether `docker logs` can read a container logging with this config. */
export function canReadLogs(lc: { Type: string; Config: Record<string, string> | null | undefined }): boolean {
  const t = lc.Type || 'json-file';
  if (t === 'none') return false;
  if (REMOTE_DRIVERS.has(t)) return cacheEnabled(lc.Config ?? {});
  return true;
}

/** Create-time check of a container's (or the daemon's default) LogConfig. */
export function validateLogConfig(lc: LogConfigInput): void {
  const name = lc.Type || 'json-file';
  if (name === 'none') return;
  const cfg = { ...(lc.Config ?? {}) };
  const mode = cfg.mode ?? '';
  if (mode !== '' && mode !== 'blocking' && mode !== 'non-blocking') throw invalidArgument(`logger: logging mode not supported: ${mode}`);
  if (cfg['max-buffer-size'] !== undefined) {
    if (mode !== 'non-blocking') throw invalidArgument(`logger: max-buffer-size option is only supported with 'mode=non-blocking'`);
    try {
      ramInBytes(cfg['max-buffer-size']);
    } catch (err) {
      throw invalidArgument(`error parsing option max-buffer-size: ${(err as Error).message}`);
    }
  }
  const cd = cfg['cache-disabled'];
  if (cd && goBool(cd) === undefined) throw invalidArgument(`invalid value for option cache-disabled: ${cd}`);
  for (const k of BUILTIN_OPTS) delete cfg[k];
  if (name === 'json-file') {
    for (const k of Object.keys(cfg)) if (!JSON_FILE_OPTS.has(k)) throw invalidArgument(`unknown log opt '${k}' for json-file log driver`);
  } else if (name === 'local') {
    for (const k of Object.keys(cfg)) if (!LOCAL_OPTS.has(k)) throw invalidArgument(`unknown log opt '${k}' for log driver local`);
    localLogOptions(cfg);
    return;
  } else if (REMOTE_VALIDATORS[name]) {
    try {
      REMOTE_VALIDATORS[name](cfg);
    } catch (err) {
      throw invalidArgument((err as Error).message);
    }
    return;
  } else {
    throw invalidArgument(`logger: no log driver named '${name}' is registered`);
  }
  fileLogOptions(cfg);
}
