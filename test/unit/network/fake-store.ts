// A small in-memory store with the NetworkStore surface, for the network unit tests.
// `transaction` rolls back on throw, like the real store.
import { EngineError } from '../../../lib/errors.ts';
import type { AnyKind, ResourceOf, SpecMutation, SpecOf, StatusMutation, StatusOf } from '../../../store/kind.ts';
import type { IndexDef, Resource } from '../../../store/types.ts';
import type { NetworkStore } from '../../../reconcilers/network/deps.ts';

export class FakeStore implements NetworkStore {
  data = new Map<string, Resource>();
  private rev = 0;

  private key(kind: string, name: string): string {
    return `${kind}\u0000${name}`;
  }

  get<K extends AnyKind>(kind: K, name: string): ResourceOf<K> | undefined {
    const r = this.data.get(this.key(kind.name, name));
    return r ? (structuredClone(r) as ResourceOf<K>) : undefined;
  }

  list<K extends AnyKind>(kind: K): ResourceOf<K>[] {
    return this.listNamed(kind.name) as ResourceOf<K>[];
  }

  private listNamed(kind: string): Resource[] {
    return [...this.data.values()].filter((r) => r.kind === kind).map((r) => structuredClone(r));
  }

  /** A scan: the fake keeps no indexes. */
  byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] {
    return (this.listNamed(def.kind) as Resource<S, T>[]).filter((r) => def.keys(r).includes(key));
  }

  create<K extends AnyKind>(kind: K, name: string, spec: SpecOf<K>, status: StatusOf<K>): ResourceOf<K> {
    const k = this.key(kind.name, name);
    if (this.data.has(k)) throw new EngineError('AlreadyExists', `resource ${kind.name}/${name} already exists`);
    const r: Resource = { kind: kind.name, name, spec, status, generation: 1, resourceVersion: ++this.rev, createdAt: new Date().toISOString() };
    this.data.set(k, structuredClone(r));
    return r as ResourceOf<K>;
  }

  updateSpec<K extends AnyKind>(kind: K, name: string, mutate: SpecMutation<K>): ResourceOf<K> {
    const cur = this.must(kind, name);
    const spec = mutate(cur.spec, cur);
    if (JSON.stringify(spec) === JSON.stringify(cur.spec)) return cur;
    const next = { ...cur, spec, generation: cur.generation + 1, resourceVersion: ++this.rev };
    this.data.set(this.key(kind.name, name), structuredClone(next) as Resource);
    return next;
  }

  updateStatus<K extends AnyKind>(kind: K, name: string, mutate: StatusMutation<K>): ResourceOf<K> {
    const cur = this.must(kind, name);
    const status = mutate(cur.status, cur);
    if (JSON.stringify(status) === JSON.stringify(cur.status)) return cur;
    const next = { ...cur, status, resourceVersion: ++this.rev };
    this.data.set(this.key(kind.name, name), structuredClone(next) as Resource);
    return next;
  }

  delete(kind: AnyKind, name: string): boolean {
    return this.data.delete(this.key(kind.name, name));
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

  private must<K extends AnyKind>(kind: K, name: string): ResourceOf<K> {
    const r = this.get(kind, name);
    if (!r) throw new EngineError('NotFound', `resource ${kind.name}/${name} not found`);
    return r;
  }
}
