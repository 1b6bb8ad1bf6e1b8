// The store's in-memory view: every record of every kind, in creation order, with the kinds'
// list cache and secondary indexes (indexes.ts) kept in step. Each change is logged so that a
// transaction that fails puts memory back as it was, exactly as SQLite puts the database back.
// Resources here are frozen copies parsed from the JSON written, never a caller's object.
import { internal, notFound } from '../lib/errors.ts';
import { Indexes } from './indexes.ts';
import type { IndexDef, Resource } from './types.ts';

export interface Entry {
  res: Resource;
  specJson: string;
  statusJson: string;
  /** SQLite rowid: creation order, kept across restarts. */
  order: number;
}

interface Undo {
  kind: string;
  name: string;
  prev: Entry | undefined;
}

export class Records {
  private readonly kinds = new Map<string, Map<string, Entry>>();
  private readonly listCache = new Map<string, Resource[]>();
  private readonly indexes = new Indexes();
  private undo: Undo[] = [];

  entry(kind: string, name: string): Entry | undefined {
    return this.kinds.get(kind)?.get(name);
  }

  mustEntry(kind: string, name: string): Entry {
    const e = this.entry(kind, name);
    if (!e) throw notFound(`resource ${kind}/${name} not found`);
    return e;
  }

  /** All resources of a kind in creation order (a copy of the cached list). */
  list(kind: string): Resource[] {
    let cached = this.listCache.get(kind);
    if (!cached) {
      const m = this.kinds.get(kind);
      cached = m ? Array.from(m.values(), (e) => e.res) : [];
      this.listCache.set(kind, cached);
    }
    return cached.slice();
  }

  byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] {
    return this.indexes.lookup(def, key, () => Array.from(this.kinds.get(def.kind)?.values() ?? [], (e) => e.res));
  }

  /** A record read at open: not a change, nothing to undo. */
  load(kind: string, name: string, entry: Entry): void {
    this.kindMap(kind).set(name, entry);
  }

  /** `entry` replaces `prev` (undefined: a new record). */
  set(kind: string, name: string, entry: Entry, prev: Entry | undefined): void {
    this.undo.push({ kind, name, prev });
    this.kindMap(kind).set(name, entry);
    this.listCache.delete(kind);
    this.indexes.update(kind, name, prev?.res, entry.res);
  }

  remove(kind: string, name: string, cur: Entry): void {
    this.undo.push({ kind, name, prev: cur });
    this.kinds.get(kind)!.delete(name);
    this.listCache.delete(kind);
    this.indexes.update(kind, name, cur.res, undefined);
  }

  /** Where the change log stands: what `rollback` goes back to. */
  get mark(): number {
    return this.undo.length;
  }

  /** The changes are committed: nothing of them will be undone. */
  forget(): void {
    this.undo = [];
  }

  /** Undoes the changes made since `mark`, newest first. */
  rollback(mark: number): void {
    const reorder = new Set<string>();
    for (let i = this.undo.length - 1; i >= mark; i--) {
      const { kind, name, prev } = this.undo[i]!;
      const m = this.kindMap(kind);
      const undone = m.get(name)?.res;
      if (!prev) m.delete(name);
      else {
        if (!m.has(name)) reorder.add(kind);
        m.set(name, prev);
      }
      this.listCache.delete(kind);
      this.indexes.update(kind, name, undone, prev?.res);
    }
    this.undo.length = mark;
    // A resurrected (deleted, then rolled back) entry went to the end of its map: restore creation order.
    for (const kind of reorder) {
      const sorted = [...this.kindMap(kind).entries()].sort((a, b) => a[1].order - b[1].order);
      this.kinds.set(kind, new Map(sorted));
    }
  }

  private kindMap(kind: string): Map<string, Entry> {
    let m = this.kinds.get(kind);
    if (!m) this.kinds.set(kind, (m = new Map()));
    return m;
  }
}

export function json(v: unknown): string {
  const s = JSON.stringify(v);
  if (s === undefined) throw internal('store: value is not JSON-serialisable (undefined)');
  return s;
}

/** Memory keeps its own frozen copy (parsed from the JSON written), never the caller's object. */
export function freezeResource(
  kind: string,
  name: string,
  spec: unknown,
  status: unknown,
  generation: number,
  resourceVersion: number,
  createdAt: string,
): Resource {
  return deepFreeze({ kind, name, spec, status, generation, resourceVersion, createdAt });
}

function deepFreeze<V>(v: V): V {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}
