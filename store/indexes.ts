// Secondary indexes of the in-memory view, as client-go's Indexer keeps them: a lookup by a
// key (a container's name, an endpoint's container) answers from a map instead of scanning
// every object of the kind. An index is built the first time it is asked for and then kept up
// to date by every write, rollback and delete.
import type { IndexDef, Resource } from './types.ts';


interface Index {
  def: IndexDef;
  /** key -> resource name -> resource. */
  byKey: Map<string, Map<string, Resource>>;
  /** resource name -> its keys, to take them away when it changes. */
  keysOf: Map<string, readonly string[]>;
}

export class Indexes {
  private readonly byKind = new Map<string, Map<string, Index>>();

  /** The resources of `def.kind` with `key` among their keys; `all` builds the index on first use. */
  lookup<S, T>(def: IndexDef<S, T>, key: string, all: () => Iterable<Resource>): Resource<S, T>[] {
    let kindIndexes = this.byKind.get(def.kind);
    if (!kindIndexes) this.byKind.set(def.kind, (kindIndexes = new Map()));
    let ix = kindIndexes.get(def.name);
    if (!ix) {
      ix = { def: def as IndexDef, byKey: new Map(), keysOf: new Map() };
      for (const r of all()) add(ix, r);
      kindIndexes.set(def.name, ix);
    }
    const hit = ix.byKey.get(key);
    return hit ? ([...hit.values()] as Resource<S, T>[]) : [];
  }

  /** A resource of `kind` changed from `prev` to `next` (undefined: absent). */
  update(kind: string, name: string, prev: Resource | undefined, next: Resource | undefined): void {
    const kindIndexes = this.byKind.get(kind);
    if (!kindIndexes) return;
    for (const ix of kindIndexes.values()) {
      if (prev) remove(ix, name);
      if (next) add(ix, next);
    }
  }
}

function add(ix: Index, r: Resource): void {
  const keys = ix.def.keys(r);
  ix.keysOf.set(r.name, keys);
  for (const k of keys) {
    let bucket = ix.byKey.get(k);
    if (!bucket) ix.byKey.set(k, (bucket = new Map()));
    bucket.set(r.name, r);
  }
}

function remove(ix: Index, name: string): void {
  for (const k of ix.keysOf.get(name) ?? []) {
    const bucket = ix.byKey.get(k);
    bucket?.delete(name);
    if (bucket?.size === 0) ix.byKey.delete(k);
  }
  ix.keysOf.delete(name);
}
