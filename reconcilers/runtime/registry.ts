// The runtime table the daemon resolves names with, backed by the runtime records: `swap` writes
// the records a validated configuration wants (the built-in stdrt and its `runc` alias, the
// configured runtimes from the file or --add-runtime, the shims found on PATH) and deletes the
// others; `resolve` and `names` answer from the records; the default runtime's name is kept here.
// `build` validates a whole configuration first (createRuntimes, today's refusals), so a reload is
// all or nothing.
import { invalidArgument } from '../../lib/errors.ts';
import type { ShimOptions } from '../../drivers/supervisor/client.ts';
import {
  createRuntimes,
  RUNC_ALIAS,
  RUNC_SHIM,
  shimRuntime,
  shimsOnPath,
  STDRT,
  writeRuntimeWrapper,
  type ResolvedRuntime,
  type RuntimeConfigEntry,
  type RuntimeContext,
  type Runtimes as RuntimeTable,
} from '../../drivers/supervisor/runtimes.ts';
import { INITIAL_RUNTIME_STATUS, isRuntimeReady, listRuntimes, Runtimes, type RuntimeSpec } from '../../store/kinds/runtime.ts';
import type { Store } from '../../store/store.ts';
import { resolveRecord } from './reconciler.ts';

/** The runtime part of the daemon's configuration. */
export interface RuntimesConfig {
  defaultRuntime?: string;
  runtimes?: Record<string, RuntimeConfigEntry>;
}

export interface RuntimeRegistry extends RuntimeTable {
  /** A table for `c` (throws on an invalid one), to `swap` in once the whole reload is accepted. */
  build(c: RuntimesConfig): RuntimeTable;
  /** Writes the records of a table `build` made, and takes its default runtime. */
  swap(next: RuntimeTable): void;
}

export interface RuntimeRegistryOptions extends RuntimeContext {
  /** `<data-root>/runtimes`: the wrapper scripts of runtimes with runtimeArgs. */
  wrapperDir: string;
  /** Where the configured runtimes come from: the file, or --add-runtime. */
  source: 'file' | 'flag';
  /** The shim names found on PATH (default: PATH scanned at each swap). */
  shims?: () => string[];
}

type RegistryStore = Pick<Store, 'get' | 'list' | 'create' | 'updateSpec' | 'delete' | 'transaction'>;

function specOf(source: RuntimeSpec['source'], e: RuntimeConfigEntry): RuntimeSpec {
  const s: RuntimeSpec = { source };
  if (e.path !== undefined) s.path = e.path;
  if (e.runtimeArgs !== undefined) s.runtimeArgs = e.runtimeArgs;
  if (e.runtimeType !== undefined) s.runtimeType = e.runtimeType;
  if (e.options !== undefined) s.options = e.options;
  return s;
}

const BUILTIN: RuntimeSpec = { source: 'builtin', runtimeType: RUNC_SHIM };

export function createRuntimeRegistry(store: RegistryStore, opts: RuntimeRegistryOptions): RuntimeRegistry {
  const ctx: RuntimeContext = { execRoot: opts.execRoot, wrapperDir: opts.wrapperDir, systemdCgroup: opts.systemdCgroup, noPivotRoot: opts.noPivotRoot };
  const shims = opts.shims ?? (() => shimsOnPath());
  /** What each table `build` made stands for. */
  const built = new WeakMap<RuntimeTable, { defaultName: string; runtimes: Record<string, RuntimeConfigEntry> }>();
  let defaultName = STDRT;

  const desiredOf = (runtimes: Record<string, RuntimeConfigEntry>): Map<string, RuntimeSpec> => {
    const want = new Map<string, RuntimeSpec>([[STDRT, BUILTIN]]);
    for (const s of shims()) want.set(s, { source: 'path', runtimeType: s });
    for (const [name, e] of Object.entries(runtimes)) want.set(name, specOf(opts.source, e));
    if (!want.has(RUNC_ALIAS)) want.set(RUNC_ALIAS, BUILTIN);
    return want;
  };

  return {
    get default() {
      return defaultName;
    },
    names: () => listRuntimes(store).map((r) => r.name),
    resolve(name: string): ResolvedRuntime {
      const n = name || defaultName;
      const r = store.get(Runtimes, n);
      if (r) {
        if (isRuntimeReady(r)) return r.status.options ? { name: r.status.shim, options: r.status.options as ShimOptions } : { name: r.status.shim };
        // Not reconciled yet (just added by a reload): resolved from its spec, the wrapper written now.
        const res = resolveRecord(n, r.spec, ctx);
        if (res.wrapper) writeRuntimeWrapper(res.wrapper);
        return res.options ? { name: res.name, options: res.options } : { name: res.name };
      }
      const shim = shimRuntime(n, ctx);
      if (shim) return shim;
      throw invalidArgument(`unknown or invalid runtime name: ${n}`);
    },
    build(c: RuntimesConfig): RuntimeTable {
      const runtimes = c.runtimes ?? {};
      const table = createRuntimes({ defaultRuntime: c.defaultRuntime || STDRT, runtimes, execRoot: opts.execRoot, wrapperDir: opts.wrapperDir, systemdCgroup: opts.systemdCgroup, noPivotRoot: opts.noPivotRoot });
      built.set(table, { defaultName: table.default, runtimes });
      return table;
    },
    swap(next: RuntimeTable): void {
      const b = built.get(next);
      if (!b) throw new Error('runtimes: swap takes a table made by build()');
      const want = desiredOf(b.runtimes);
      store.transaction(() => {
        for (const r of store.list(Runtimes)) if (!want.has(r.name)) store.delete(Runtimes, r.name);
        for (const [name, spec] of want) {
          if (store.get(Runtimes, name)) store.updateSpec(Runtimes, name, () => spec);
          else store.create(Runtimes, name, spec, INITIAL_RUNTIME_STATUS);
        }
      });
      defaultName = b.defaultName;
    },
  };
}
