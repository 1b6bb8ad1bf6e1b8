// Runtime reconciler: validates each runtime record with the one validation there is
// (drivers/supervisor/runtimes.ts), writes its runtimeArgs wrapper script under
// `<data-root>/runtimes` and records in the status what the supervisor is given for it (the shim
// and its options) with a Ready condition. When a record goes, its wrapper goes too, once no
// running container still runs through it (a container keeps running on a removed runtime).
import { existsSync, unlinkSync } from 'node:fs';
import type { ReconcileContext, ReconcileResult } from '../../controllers/controller.ts';
import { isCode } from '../../lib/errors.ts';
import {
  checkRuntimeName,
  resolveRuntimeEntry,
  wrapperFile,
  writeRuntimeWrapper,
  type RuntimeConfigEntry,
  type RuntimeContext,
  type RuntimeResolution,
} from '../../drivers/supervisor/runtimes.ts';
import { Containers, isRunning } from '../../store/kinds/container.ts';
import { Runtimes, type RuntimeResource, type RuntimeSpec, type RuntimeStatus } from '../../store/kinds/runtime.ts';
import type { ReconcilerStore } from '../store-like.ts';

/** How often a removed runtime's wrapper is looked at again while a container still runs through it. */
export const WRAPPER_IN_USE_RETRY_MS = 60_000;

export interface RuntimeReconcilerOptions extends RuntimeContext {
  /** Where wrapper scripts go: `<data-root>/runtimes`. */
  wrapperDir: string;
}

/** The configuration entry a runtime record's spec stands for. */
export function entryOf(spec: RuntimeSpec): RuntimeConfigEntry {
  const e: RuntimeConfigEntry = {};
  if (spec.path !== undefined) e.path = spec.path;
  if (spec.runtimeArgs !== undefined) e.runtimeArgs = spec.runtimeArgs;
  if (spec.runtimeType !== undefined) e.runtimeType = spec.runtimeType;
  if (spec.options !== undefined) e.options = spec.options;
  return e;
}

/** What a record resolves to (throws InvalidArgument with the engine's messages when it is invalid). */
export function resolveRecord(name: string, spec: RuntimeSpec, ctx: RuntimeContext): RuntimeResolution {
  if (spec.source !== 'builtin') checkRuntimeName(name);
  return resolveRuntimeEntry(name, entryOf(spec), ctx);
}

/** Whether a running container was started on runtime `name`. */
export function runtimeInUse(store: Pick<ReconcilerStore, 'list'>, name: string): boolean {
  return store.list(Containers).some((c) => c.spec.hostConfig.Runtime === name && isRunning(c.status));
}

export class RuntimeReconciler {
  readonly name = 'runtime';
  readonly kind = Runtimes.name;
  private readonly store: ReconcilerStore;
  private readonly opts: RuntimeReconcilerOptions;

  constructor(store: ReconcilerStore, opts: RuntimeReconcilerOptions) {
    this.store = store;
    this.opts = opts;
  }

  async reconcile(name: string, ctx: ReconcileContext): Promise<ReconcileResult> {
    const r = this.store.get(Runtimes, name);
    if (!r) return this.collectWrapper(name, ctx);
    let res: RuntimeResolution;
    try {
      res = resolveRecord(name, r.spec, this.opts);
    } catch (err) {
      // An invalid record stays so until its spec changes: no retry.
      const message = err instanceof Error ? err.message : String(err);
      this.writeStatus(r, { observedGeneration: r.generation, shim: '', conditions: [{ type: 'Ready', status: 'False', reason: 'Invalid', message }] });
      ctx.log.warn({ runtime: name, err: message }, 'invalid runtime');
      return;
    }
    if (res.wrapper) {
      try {
        writeRuntimeWrapper(res.wrapper);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        this.writeStatus(r, { observedGeneration: r.generation, shim: '', conditions: [{ type: 'Ready', status: 'False', reason: 'WrapperFailed', message }] });
        throw err;
      }
    } else {
      // It had runtimeArgs before: the old wrapper goes (unless a running container still uses it).
      this.removeWrapperIfUnused(name);
    }
    const status: RuntimeStatus = { observedGeneration: r.generation, shim: res.name, conditions: [{ type: 'Ready', status: 'True', reason: 'Valid', message: '' }] };
    if (res.options) status.options = { typeUrl: res.options.typeUrl, fields: { ...res.options.fields } };
    this.writeStatus(r, status);
  }

  /** The record is gone: its wrapper goes once no running container runs through it. */
  private collectWrapper(name: string, ctx: ReconcileContext): ReconcileResult {
    const file = wrapperFile(this.opts.wrapperDir, name);
    if (!existsSync(file)) return;
    if (runtimeInUse(this.store, name)) return { requeueAfter: WRAPPER_IN_USE_RETRY_MS };
    this.unlink(file);
    ctx.log.info({ runtime: name }, 'runtime removed');
  }

  private removeWrapperIfUnused(name: string): void {
    const file = wrapperFile(this.opts.wrapperDir, name);
    if (existsSync(file) && !runtimeInUse(this.store, name)) this.unlink(file);
  }

  private unlink(file: string): void {
    try {
      unlinkSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  private writeStatus(r: RuntimeResource, status: RuntimeStatus): void {
    try {
      this.store.updateStatus(Runtimes, r.name, () => status);
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
    }
  }
}
