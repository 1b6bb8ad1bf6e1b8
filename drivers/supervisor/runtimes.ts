// Runtime registry: maps an engine runtime name (stdrt, drop-in OCI runtimes, shims) to the
// supervisor's runtime name plus the shim options that client.ts createContainer encodes.
import { accessSync, chmodSync, constants, mkdirSync, readdirSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
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
  /** Where runtimeArgs wrapper scripts go (default `<execRoot>/runtimes`). */
  wrapperDir?: string;
  /** runc's --systemd-cgroup (cgroup driver systemd). */
  systemdCgroup?: boolean;
  /** ENGINE_RAMDISK: runc shims run containers without pivot_root (the runc option NoPivotRoot). */
  noPivotRoot?: boolean;
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

/** What resolving a runtime needs besides its entry. */
export interface RuntimeContext {
  execRoot: string;
  /** Where runtimeArgs wrapper scripts go (default `<execRoot>/runtimes`). */
  wrapperDir?: string;
  systemdCgroup?: boolean;
  noPivotRoot?: boolean;
}

/** A runtimeArgs wrapper script: the file and what it holds. */
export interface RuntimeWrapper {
  file: string;
  body: string;
}

/** A resolved runtime and, for a path runtime with runtimeArgs, the wrapper its binary_name names. */
export interface RuntimeResolution extends ResolvedRuntime {
  wrapper?: RuntimeWrapper;
}

function runcDefaultsOf(ctx: RuntimeContext): Record<string, unknown> {
  return { binary_name: 'runc', root: join(ctx.execRoot, 'runtime-runc'), systemd_cgroup: !!ctx.systemdCgroup, ...(ctx.noPivotRoot ? { no_pivot_root: true } : {}) };
}

function wrapperDirOf(ctx: RuntimeContext): string {
  return ctx.wrapperDir ?? join(ctx.execRoot, 'runtimes');
}

/** The wrapper script file of runtime `name` under `dir`. */
export function wrapperFile(dir: string, name: string): string {
  return join(dir, name.replace(/[^A-Za-z0-9._-]/g, '_'));
}

/** Whether `name` is a shim name (io.containerd.<name>.v<N>), usable with no configuration. */
export function isShimName(name: string): boolean {
  return SHIM_NAME.test(name);
}

/** Refusals of a configured runtime's name. */
export function checkRuntimeName(name: string): void {
  if (!name) throw invalidArgument('runtime name must not be empty');
  if (name === STDRT) throw invalidArgument(`runtime name '${STDRT}' is reserved`);
}

/**
 * The one validation of a runtime entry, and what it resolves to: throws InvalidArgument with the
 * engine's messages. Pure: a wrapper script is described, not written (writeRuntimeWrapper).
 */
export function resolveRuntimeEntry(name: string, entry: RuntimeConfigEntry, ctx: RuntimeContext): RuntimeResolution {
  const runcDefaults = runcDefaultsOf(ctx);
  if (entry.path && entry.runtimeType) throw invalidArgument(`runtime ${name}: path and runtimeType are mutually exclusive`);
  if (entry.path && entry.options) throw invalidArgument(`runtime ${name}: options cannot be used with a path runtime`);
  if (entry.path) {
    const args = entry.runtimeArgs ?? [];
    // The shim cannot pass arguments to the runtime, so runtimeArgs need a wrapper script.
    const wrapper = args.length ? { file: wrapperFile(wrapperDirOf(ctx), name), body: `#!/bin/sh\nexec ${[entry.path, ...args].map(shellQuote).join(' ')} "$@"\n` } : undefined;
    const out: RuntimeResolution = { name: RUNC_SHIM, options: { typeUrl: RUNC_OPTIONS_URL, fields: { ...runcDefaults, binary_name: wrapper?.file ?? entry.path } } };
    if (wrapper) out.wrapper = wrapper;
    return out;
  }
  if (entry.runtimeType) {
    const type = entry.runtimeType;
    if (!isAbsolute(type) && !SHIM_NAME.test(type)) throw invalidArgument(`runtime ${name}: invalid runtimeType ${type}`);
    if (isRuncShim(type)) return { name: type, options: { typeUrl: RUNC_OPTIONS_URL, fields: { ...runcDefaults, ...runcOptionsFrom(name, entry.options ?? {}) } } };
    if (entry.options && Object.keys(entry.options).length) return { name: type, options: { typeUrl: GENERIC_OPTIONS_URL, fields: genericOptionsFrom(name, entry.options) } };
    return { name: type };
  }
  throw invalidArgument(`runtime ${name}: either path or runtimeType must be set`);
}

/** A shim name not in the configuration: it goes straight through, with no options (runc's defaults for runc). */
export function shimRuntime(name: string, ctx: RuntimeContext): ResolvedRuntime | undefined {
  if (!SHIM_NAME.test(name)) return undefined;
  return isRuncShim(name) ? { name, options: { typeUrl: RUNC_OPTIONS_URL, fields: runcDefaultsOf(ctx) } } : { name };
}

/** What every shim executable's name starts with (tested before SHIM_FILE). */
const SHIM_PREFIX = 'containerd-shim-';
const SHIM_FILE = /^containerd-shim-([a-z0-9_-]+)-(v[0-9]+)$/;

/**
 * The shims found on PATH: `containerd-shim-<name>-v<N>` executables, as runtime names
 * `io.containerd.<name>.v<N>`. A directory named twice (or through a link, /bin -> /usr/bin) is read
 * once, and a name is matched only once it starts like a shim's: a PATH holds thousands of other
 * names, and a loop that long with a regular expression in it made V8 compile it with TurboFan now
 * and then, which maps ~5 MiB more of node's code into the resident set for the daemon's life
 * (the idle figure's two levels, 78 and 84 MiB).
 */
export function shimsOnPath(pathVar: string | undefined = process.env.PATH): string[] {
  const out = new Set<string>();
  const seen = new Set<string>();
  for (const dir of (pathVar ?? '').split(':')) {
    if (!dir || !isAbsolute(dir)) continue;
    let entries: string[];
    try {
      const real = realpathSync(dir);
      if (seen.has(real)) continue;
      seen.add(real);
      entries = readdirSync(real);
    } catch {
      continue;
    }
    for (const f of entries) {
      if (!f.startsWith(SHIM_PREFIX)) continue;
      const m = SHIM_FILE.exec(f);
      if (!m) continue;
      const name = `io.containerd.${m[1]}.${m[2]}`;
      if (!SHIM_NAME.test(name) || out.has(name)) continue;
      try {
        accessSync(join(dir, f), constants.X_OK);
        if (!statSync(join(dir, f)).isFile()) continue;
      } catch {
        continue;
      }
      out.add(name);
    }
  }
  return [...out].sort();
}

export function createRuntimes(opts: RuntimesOptions): Runtimes {
  const ctx: RuntimeContext = { execRoot: opts.execRoot, wrapperDir: opts.wrapperDir, systemdCgroup: opts.systemdCgroup, noPivotRoot: opts.noPivotRoot };
  const table = new Map<string, () => ResolvedRuntime>();

  table.set(STDRT, () => resolveRuntimeEntry(STDRT, { runtimeType: RUNC_SHIM }, ctx));

  for (const [name, entry] of Object.entries(opts.runtimes ?? {})) {
    checkRuntimeName(name);
    const r = resolveRuntimeEntry(name, entry, ctx);
    let written = false;
    table.set(name, () => {
      if (r.wrapper && !written) {
        writeRuntimeWrapper(r.wrapper);
        written = true;
      }
      return { name: r.name, ...(r.options ? { options: r.options } : {}) };
    });
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
      const shim = shimRuntime(n, ctx);
      if (shim) return shim;
      throw invalidArgument(`unknown or invalid runtime name: ${n}`);
    },
  };
}

/** Writes a wrapper script (its directory made if missing). */
export function writeRuntimeWrapper(w: RuntimeWrapper): void {
  mkdirSync(dirname(w.file), { recursive: true, mode: 0o700 });
  writeFileSync(w.file, w.body, { mode: 0o700 });
  chmodSync(w.file, 0o700);
}
