// Runtime registry: maps an engine runtime name (stdrt, drop-in OCI runtimes, shims) to the
// supervisor's runtime name plus the shim options that client.ts createContainer encodes.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { invalidArgument } from '../../lib/errors.ts';
import type { ShimOptions } from './client.ts';

export const RUNC_SHIM = 'io.containerd.runc.v2';
export const STDRT = 'stdrt';
export const RUNC_ALIAS = 'runc';
const RUNC_OPTIONS_URL = 'containerd.runc.v1.Options';
const GENERIC_OPTIONS_URL = 'runtimeoptions.v1.Options';

export interface RuntimeConfigEntry {
  path?: string;
  runtimeArgs?: string[];
  runtimeType?: string;
  options?: Record<string, unknown>;
}

export interface ResolvedRuntime {
  /** Supervisor runtime (shim) name, e.g. io.containerd.runc.v2. */
  name: string;
  options?: ShimOptions;
}

export interface Runtimes {
  resolve(name: string): ResolvedRuntime;
  names(): string[];
  readonly default: string;
}

export interface RuntimesOptions {
  defaultRuntime: string;
  runtimes: Record<string, RuntimeConfigEntry>;
  execRoot: string;
  /** runc's --systemd-cgroup (cgroup driver systemd). */
  systemdCgroup?: boolean;
}

/** Go-style keys of runc shim options (as daemon.json writes them) → our proto field names. */
const RUNC_KEYS: Record<string, { field: string; type: 'bool' | 'string' | 'uint' }> = {
  nopivotroot: { field: 'no_pivot_root', type: 'bool' },
  nonewkeyring: { field: 'no_new_keyring', type: 'bool' },
  shimcgroup: { field: 'shim_cgroup', type: 'string' },
  iouid: { field: 'io_uid', type: 'uint' },
  iogid: { field: 'io_gid', type: 'uint' },
  binaryname: { field: 'binary_name', type: 'string' },
  root: { field: 'root', type: 'string' },
  criupath: { field: 'criu_path', type: 'string' },
  systemdcgroup: { field: 'systemd_cgroup', type: 'bool' },
  criuimagepath: { field: 'criu_image_path', type: 'string' },
  criuworkpath: { field: 'criu_work_path', type: 'string' },
};

const SHIM_NAME = /^io\.containerd\.[a-z0-9_-]+\.v[0-9]+$/;

function isRuncShim(t: string): boolean {
  return t === RUNC_SHIM || t === 'io.containerd.runc.v1';
}

function runcOptionsFrom(name: string, raw: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    const spec = RUNC_KEYS[k.replace(/_/g, '').toLowerCase()];
    if (!spec) throw invalidArgument(`runtime ${name}: unknown option ${k}`);
    const ok =
      (spec.type === 'bool' && typeof v === 'boolean') ||
      (spec.type === 'string' && typeof v === 'string') ||
      (spec.type === 'uint' && typeof v === 'number' && Number.isInteger(v) && v >= 0);
    if (!ok) throw invalidArgument(`runtime ${name}: option ${k} must be a ${spec.type === 'uint' ? 'non-negative integer' : spec.type}`);
    out[spec.field] = v;
  }
  return out;
}

function genericOptionsFrom(name: string, raw: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    const key = k.replace(/_/g, '').toLowerCase();
    if (key !== 'typeurl' && key !== 'configpath') throw invalidArgument(`runtime ${name}: unknown option ${k}`);
    if (typeof v !== 'string') throw invalidArgument(`runtime ${name}: option ${k} must be a string`);
    out[key === 'typeurl' ? 'type_url' : 'config_path'] = v;
  }
  return out;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export function createRuntimes(opts: RuntimesOptions): Runtimes {
  const runcRoot = join(opts.execRoot, 'runtime-runc');
  const runcDefaults = { binary_name: 'runc', root: runcRoot, systemd_cgroup: !!opts.systemdCgroup };
  const table = new Map<string, () => ResolvedRuntime>();

  table.set(STDRT, () => ({ name: RUNC_SHIM, options: { typeUrl: RUNC_OPTIONS_URL, fields: { ...runcDefaults } } }));

  for (const [name, entry] of Object.entries(opts.runtimes ?? {})) {
    if (!name) throw invalidArgument('runtime name must not be empty');
    if (name === STDRT) throw invalidArgument(`runtime name '${STDRT}' is reserved`);
    if (entry.path && entry.runtimeType) throw invalidArgument(`runtime ${name}: path and runtimeType are mutually exclusive`);
    if (entry.path && entry.options) throw invalidArgument(`runtime ${name}: options cannot be used with a path runtime`);
    if (entry.path) {
      const path = entry.path;
      const args = entry.runtimeArgs ?? [];
      let binary: string | undefined;
      table.set(name, () => {
        // The shim cannot pass arguments to the runtime, so runtimeArgs need a wrapper script.
        binary ??= args.length ? writeWrapper(opts.execRoot, name, path, args) : path;
        return { name: RUNC_SHIM, options: { typeUrl: RUNC_OPTIONS_URL, fields: { ...runcDefaults, binary_name: binary } } };
      });
      continue;
    }
    if (entry.runtimeType) {
      const type = entry.runtimeType;
      if (!isAbsolute(type) && !SHIM_NAME.test(type)) throw invalidArgument(`runtime ${name}: invalid runtimeType ${type}`);
      let resolved: ResolvedRuntime;
      if (isRuncShim(type)) {
        resolved = { name: type, options: { typeUrl: RUNC_OPTIONS_URL, fields: { ...runcDefaults, ...runcOptionsFrom(name, entry.options ?? {}) } } };
      } else if (entry.options && Object.keys(entry.options).length) {
        resolved = { name: type, options: { typeUrl: GENERIC_OPTIONS_URL, fields: genericOptionsFrom(name, entry.options) } };
      } else {
        resolved = { name: type };
      }
      table.set(name, () => resolved);
      continue;
    }
    throw invalidArgument(`runtime ${name}: either path or runtimeType must be set`);
  }

  // `runc`, the name clients know the stock runtime by, is stdrt's drop-in name (unless configured
  // as a runtime of its own); a container keeps the name it was created with.
  if (!table.has(RUNC_ALIAS)) table.set(RUNC_ALIAS, table.get(STDRT)!);

  const defaultName = opts.defaultRuntime || STDRT;
  if (!table.has(defaultName)) throw invalidArgument(`specified default runtime '${defaultName}' does not exist`);

  return {
    default: defaultName,
    names: () => [...table.keys()],
    resolve(name: string): ResolvedRuntime {
      const n = name || defaultName;
      const make = table.get(n);
      if (make) return make();
      // A shim name not in the config goes straight through, with no options.
      if (SHIM_NAME.test(n)) return isRuncShim(n) ? { name: n, options: { typeUrl: RUNC_OPTIONS_URL, fields: { ...runcDefaults } } } : { name: n };
      throw invalidArgument(`unknown or invalid runtime name: ${n}`);
    },
  };
}

function writeWrapper(execRoot: string, name: string, path: string, args: string[]): string {
  const dir = join(execRoot, 'runtimes');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, name.replace(/[^A-Za-z0-9._-]/g, '_'));
  const body = `#!/bin/sh\nexec ${[path, ...args].map(shellQuote).join(' ')} "$@"\n`;
  writeFileSync(file, body, { mode: 0o700 });
  chmodSync(file, 0o700);
  return file;
}
