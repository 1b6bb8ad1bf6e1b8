// A small in-memory store for API unit tests: the ImageStore contract (get/list/create/updateSpec/
// delete/waitFor/transaction) plus updateStatus and a change hook that fake reconcilers use.
import { alreadyExists, notFound } from '../../../lib/errors.ts';
import type { IndexDef, Resource } from '../../../store/types.ts';
import type { ImageStore, StoreTx } from '../../../api/images/store.ts';
import type { ImageSpec, ImageStatus } from '../../../store/types.ts';
import { KIND } from '../../../store/types.ts';

type Any = Resource<unknown, unknown>;

export class FakeStore implements ImageStore {
  private data = new Map<string, Any>();
  private rev = 0;
  private waiters = new Set<() => void>();
  /** Called (asynchronously) after every committed change. */
  onChange?: (kind: string, name: string) => void;

  private key(kind: string, name: string): string {
    return `${kind}/${name}`;
  }

  get<S, T>(kind: string, name: string): Resource<S, T> | undefined {
    return this.data.get(this.key(kind, name)) as Resource<S, T> | undefined;
  }

  list<S, T>(kind: string): Resource<S, T>[] {
    return [...this.data.values()].filter((r) => r.kind === kind) as Resource<S, T>[];
  }

  /** A scan: the fake keeps no indexes. */
  byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] {
    return this.list<S, T>(def.kind).filter((r) => def.keys(r).includes(key));
  }

  create<S, T>(kind: string, name: string, spec: S, status: T): Resource<S, T> {
    if (this.data.has(this.key(kind, name))) throw alreadyExists(`${kind} ${name} already exists`);
    const r: Resource<S, T> = { kind, name, spec, status, generation: 1, resourceVersion: ++this.rev, createdAt: new Date(Date.now() + this.rev).toISOString() };
    this.data.set(this.key(kind, name), r as Any);
    this.changed(kind, name);
    return r;
  }

  updateSpec<S, T>(kind: string, name: string, mutate: (spec: S, current: Resource<S, T>) => S): Resource<S, T> {
    const cur = this.get<S, T>(kind, name);
    if (!cur) throw notFound(`${kind} ${name} not found`);
    const r = { ...cur, spec: mutate(structuredClone(cur.spec), cur), generation: cur.generation + 1, resourceVersion: ++this.rev };
    this.data.set(this.key(kind, name), r as Any);
    this.changed(kind, name);
    return r;
  }

  updateStatus<S, T>(kind: string, name: string, mutate: (status: T, current: Resource<S, T>) => T): Resource<S, T> {
    const cur = this.get<S, T>(kind, name);
    if (!cur) throw notFound(`${kind} ${name} not found`);
    const r = { ...cur, status: mutate(structuredClone(cur.status), cur), resourceVersion: ++this.rev };
    this.data.set(this.key(kind, name), r as Any);
    this.changed(kind, name);
    return r;
  }

  delete(kind: string, name: string): boolean {
    const had = this.data.delete(this.key(kind, name));
    if (had) this.changed(kind, name);
    return had;
  }

  transaction<R>(fn: (tx: StoreTx) => R): R {
    const snapshot = new Map(this.data);
    try {
      return fn(this);
    } catch (err) {
      this.data = snapshot;
      throw err;
    }
  }

  waitFor<S, T>(
    kind: string,
    name: string,
    predicate: (r: Resource<S, T> | undefined) => boolean,
    opts: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<Resource<S, T> | undefined> {
    return new Promise((resolve) => {
      const check = (): boolean => {
        const r = this.get<S, T>(kind, name);
        if (!predicate(r)) return false;
        finish(r);
        return true;
      };
      const finish = (r: Resource<S, T> | undefined) => {
        this.waiters.delete(waiter);
        clearTimeout(timer);
        resolve(r);
      };
      const waiter = () => void check();
      const timer = setTimeout(() => finish(this.get<S, T>(kind, name)), opts.timeoutMs ?? 5000);
      opts.signal?.addEventListener('abort', () => finish(this.get<S, T>(kind, name)), { once: true });
      if (!check()) this.waiters.add(waiter);
    });
  }

  private changed(kind: string, name: string): void {
    setImmediate(() => {
      for (const w of [...this.waiters]) w();
      this.onChange?.(kind, name);
    });
  }
}

/** The image reconciler's observable behaviour: pending → ready; desired removed → record deleted. */
export function fakeImageReconciler(store: FakeStore, opts: { fail?: (id: string) => string | undefined } = {}): void {
  store.onChange = (kind, name) => {
    if (kind !== KIND.image) return;
    const r = store.get<ImageSpec, ImageStatus>(KIND.image, name);
    if (!r) return;
    if (r.spec.desired === 'removed') {
      store.delete(KIND.image, name);
      return;
    }
    if (r.status.observedGeneration < r.generation) {
      const error = opts.fail?.(name);
      store.updateStatus<ImageSpec, ImageStatus>(KIND.image, name, (s) => ({
        ...s, phase: error ? 'failed' : 'ready', error: error ?? '', observedGeneration: r.generation,
      }));
    }
  };
}
