// A small in-memory store with the NetworkStore surface, for the network unit tests.
// `transaction` rolls back on throw, like the real store.
import { EngineError } from '../../../lib/errors.ts';
import type { IndexDef, Resource } from '../../../store/types.ts';
import type { NetworkStore } from '../../../reconcilers/network/deps.ts';

export class FakeStore implements NetworkStore {
  data = new Map<string, Resource>();
  private rev = 0;

  private key(kind: string, name: string): string {
    return `${kind}\u0000${name}`;
  }

  get<S, T>(kind: string, name: string): Resource<S, T> | undefined {
    const r = this.data.get(this.key(kind, name));
    return r ? (structuredClone(r) as Resource<S, T>) : undefined;
  }

  list<S, T>(kind: string): Resource<S, T>[] {
    return [...this.data.values()].filter((r) => r.kind === kind).map((r) => structuredClone(r) as Resource<S, T>);
  }

  /** A scan: the fake keeps no indexes. */
  byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] {
    return this.list<S, T>(def.kind).filter((r) => def.keys(r).includes(key));
  }

  create<S, T>(kind: string, name: string, spec: S, status: T): Resource<S, T> {
    const k = this.key(kind, name);
    if (this.data.has(k)) throw new EngineError('AlreadyExists', `resource ${kind}/${name} already exists`);
    const r: Resource<S, T> = { kind, name, spec, status, generation: 1, resourceVersion: ++this.rev, createdAt: new Date().toISOString() };
    this.data.set(k, structuredClone(r) as Resource);
    return r;
  }

  updateSpec<S, T>(kind: string, name: string, mutate: (spec: S, current: Resource<S, T>) => S): Resource<S, T> {
    const cur = this.must<S, T>(kind, name);
    const spec = mutate(cur.spec, cur);
    if (JSON.stringify(spec) === JSON.stringify(cur.spec)) return cur;
    const next = { ...cur, spec, generation: cur.generation + 1, resourceVersion: ++this.rev };
    this.data.set(this.key(kind, name), structuredClone(next) as Resource);
    return next;
  }

  updateStatus<S, T>(kind: string, name: string, mutate: (status: T, current: Resource<S, T>) => T): Resource<S, T> {
    const cur = this.must<S, T>(kind, name);
    const status = mutate(cur.status, cur);
    if (JSON.stringify(status) === JSON.stringify(cur.status)) return cur;
    const next = { ...cur, status, resourceVersion: ++this.rev };
    this.data.set(this.key(kind, name), structuredClone(next) as Resource);
    return next;
  }

  delete(kind: string, name: string): boolean {
    return this.data.delete(this.key(kind, name));
  }

  transaction<R>(fn: () => R): R {
    const saved = new Map(this.data);
    const rev = this.rev;
    try {
      return fn();
    } catch (err) {
      this.data = saved;
      this.rev = rev;
      throw err;
    }
  }

  private must<S, T>(kind: string, name: string): Resource<S, T> {
    const r = this.get<S, T>(kind, name);
    if (!r) throw new EngineError('NotFound', `resource ${kind}/${name} not found`);
    return r;
  }
}
