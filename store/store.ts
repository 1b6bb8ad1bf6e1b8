// The durable resource store: every resource lives in one SQLite table (node:sqlite) and, at the
// same time, in memory. Reads are served from memory only; writes go to SQLite first and reach
// memory and watchers only once the transaction has committed. This file holds the API, the
// writes and the transactions that keep the three in step; the parts are beside it: what goes to
// disk (persistence.ts, with the durability trade-off), the in-memory records and their undo log
// (records.ts, with indexes.ts), and watches and waiters (watches.ts).
import type { Logger } from 'pino';
import { isStorageFull, StoreReserve } from './reserve.ts';
import { logScopeChange, type ScopeRules } from './scope.ts';
import { EngineError, conflict, internal, notFound, unavailable } from '../lib/errors.ts';
import type { QuarantinedRecord } from './load.ts';
import { StoreDb } from './persistence.ts';
import { freezeResource, json, Records, type Entry } from './records.ts';
import { schemaProblem } from './schema.ts';
import { DEFAULT_EVENT_HISTORY, Watches, type WaitForOptions, type WatchFn } from './watches.ts';
import type { AnyKind, KindTable, ResourceOf, ResourcePredicate, SpecMutation, SpecOf, StatusMutation, StatusOf } from './kind.ts';
import type { IndexDef, Resource, WatchEvent } from './types.ts';

export type { QuarantinedRecord } from './load.ts';
export { WatchExpiredError, isWatchExpired, type WaitForOptions, type WatchFn } from './watches.ts';

export interface StoreOptions {
  log?: Logger;
  /** See store/persistence.ts. Default NORMAL. */
  synchronous?: 'NORMAL' | 'FULL';
  /** How many recent events `watch(kind, fn, fromRevision)` can replay (each holds its resource). Default DEFAULT_EVENT_HISTORY. */
  eventHistory?: number;
  /** The kinds the store checks writes against and migrates loaded records by (or quarantines them). Kinds not in it are stored as given. */
  kinds?: KindTable;
  /** Bytes kept free for the store beside the database (store/reserve.ts). Default 0: none. */
  reserveBytes?: number;
  /** The records that belong to one storage driver, and the driver now (store/scope.ts). */
  scope?: ScopeRules;
}

export interface PutOptions {
  /** 0: the resource must not exist yet; n > 0: its resourceVersion must be n. */
  expectedResourceVersion?: number;
}

/** What `transaction(fn)` hands to `fn`: the store itself, whose reads see the pending writes. */
export type StoreTx = Pick<Store, 'get' | 'list' | 'byIndex' | 'create' | 'updateSpec' | 'updateStatus' | 'put' | 'delete' | 'revision'>;

export function openStore(path: string, opts: StoreOptions = {}): Store {
  return new Store(path, opts);
}

export class Store {
  private readonly db: StoreDb;
  private readonly log: Logger | undefined;
  private readonly schemas: KindTable;
  private readonly records = new Records();
  private readonly watches: Watches;
  private rev = 0;
  private closed = false;
  private readonly reserve: StoreReserve | null;

  // Transaction state. Depth 0: no transaction open.
  private depth = 0;
  private pending: WatchEvent[] = [];

  constructor(path: string, opts: StoreOptions = {}) {
    this.log = opts.log;
    this.schemas = opts.kinds ?? new Map();
    this.db = new StoreDb(path, opts.synchronous, opts.scope);
    logScopeChange(this.log, this.db.scopeChange);
    this.reserve = opts.reserveBytes ? new StoreReserve(`${path}.reserve`, opts.reserveBytes, opts.log) : null;
    this.load();
    this.watches = new Watches(opts.eventHistory ?? DEFAULT_EVENT_HISTORY, this.rev, this.log);
    this.log?.debug({ path, revision: this.rev }, 'store opened');
  }

  private load(): void {
    this.rev = this.db.revision();
    for (const r of this.db.records(this.schemas, this.log)) {
      const res = freezeResource(r.kind, r.name, r.spec, r.status, r.generation, r.resourceVersion, r.createdAt);
      this.records.load(r.kind, r.name, { res, specJson: r.specJson, statusJson: r.statusJson, order: r.order });
      // A crash can't leave a resource newer than the revision (same transaction), but be safe.
      if (res.resourceVersion > this.rev) this.rev = res.resourceVersion;
    }
  }

  /** Records set aside at load (this start or an earlier one), oldest first. */
  quarantined(): QuarantinedRecord[] {
    return this.db.quarantined();
  }

  // ---- reads (memory only) ----------------------------------------------------------------

  /** The store's revision: bumped by every committed write (within a transaction, by each pending write). */
  get revision(): number {
    return this.rev;
  }

  get<K extends AnyKind>(kind: K, name: string): ResourceOf<K> | undefined {
    return this.records.entry(kind.name, name)?.res as ResourceOf<K> | undefined;
  }

  /** All resources of a kind in creation order. Resources are frozen: copy, don't mutate. */
  list<K extends AnyKind>(kind: K): ResourceOf<K>[] {
    return this.records.list(kind.name) as ResourceOf<K>[];
  }

  /** The resources of `def.kind` that `def.keys` maps to `key` (a name lookup without scanning the kind). */
  byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] {
    return this.records.byIndex(def, key);
  }

  // ---- writes -----------------------------------------------------------------------------

  create<K extends AnyKind>(kind: K, name: string, spec: SpecOf<K>, status: StatusOf<K>): ResourceOf<K> {
    return this.write(() => {
      if (this.records.entry(kind.name, name)) throw new EngineError('AlreadyExists', `resource ${kind.name}/${name} already exists`);
      return this.insert(kind.name, name, json(spec), json(status)) as ResourceOf<K>;
    });
  }

  /** Replaces the spec with `mutate(spec)`; bumps generation. No write at all if the spec is unchanged. */
  updateSpec<K extends AnyKind>(kind: K, name: string, mutate: SpecMutation<K>): ResourceOf<K> {
    return this.write(() => {
      const cur = this.records.mustEntry(kind.name, name);
      const res = cur.res as ResourceOf<K>;
      const specJson = json(mutate(res.spec, res));
      return this.replace(cur, specJson, cur.statusJson) as ResourceOf<K>;
    });
  }

  /** Replaces the status with `mutate(status)`; generation unchanged. No write if the status is unchanged. */
  updateStatus<K extends AnyKind>(kind: K, name: string, mutate: StatusMutation<K>): ResourceOf<K> {
    return this.write(() => {
      const cur = this.records.mustEntry(kind.name, name);
      const res = cur.res as ResourceOf<K>;
      const statusJson = json(mutate(res.status, res));
      return this.replace(cur, cur.specJson, statusJson) as ResourceOf<K>;
    });
  }

  /** Creates or replaces spec and status, optionally only if the resource is still at `expectedResourceVersion`. */
  put<K extends AnyKind>(kind: K, r: { name: string; spec: SpecOf<K>; status: StatusOf<K> }, opts: PutOptions = {}): ResourceOf<K> {
    return this.write(() => {
      const cur = this.records.entry(kind.name, r.name);
      const expected = opts.expectedResourceVersion;
      if (expected !== undefined) {
        if (expected === 0 && cur) throw new EngineError('AlreadyExists', `resource ${kind.name}/${r.name} already exists`);
        if (expected !== 0 && !cur) throw notFound(`resource ${kind.name}/${r.name} not found`);
        if (cur && expected !== 0 && cur.res.resourceVersion !== expected) {
          throw conflict(
            `resource ${kind.name}/${r.name} has been modified (resourceVersion ${cur.res.resourceVersion}, expected ${expected})`,
          );
        }
      }
      if (!cur) return this.insert(kind.name, r.name, json(r.spec), json(r.status)) as ResourceOf<K>;
      return this.replace(cur, json(r.spec), json(r.status)) as ResourceOf<K>;
    });
  }

  delete(k: AnyKind, name: string): boolean {
    const kind = k.name;
    return this.write(() => {
      const cur = this.records.entry(kind, name);
      if (!cur) return false;
      const revision = this.rev + 1;
      this.db.remove(kind, name);
      this.db.setRevision(revision);
      this.rev = revision;
      this.records.remove(kind, name, cur);
      this.pending.push({ type: 'delete', revision, kind, name, resource: cur.res });
      return true;
    });
  }

  /**
   * Runs `fn` in one SQLite transaction. Memory changes are visible to reads inside `fn`;
   * watchers see the events only after the commit. If `fn` throws, the database, memory and
   * revision are as before. Nested calls are savepoints. `fn` must be synchronous.
   */
  transaction<R>(fn: (tx: StoreTx) => R): R {
    if (this.depth > 0 || !this.reserve) return this.runTransaction(fn);
    try {
      return this.runTransaction(fn);
    } catch (err) {
      // Nothing of it was applied: with the reserve freed it is tried once more.
      if (!isStorageFull(err) || !this.reserve.release()) throw err;
      return this.runTransaction(fn);
    }
  }

  private runTransaction<R>(fn: (tx: StoreTx) => R): R {
    this.assertOpen();
    const outer = this.depth === 0;
    const sp = `sp${this.depth}`;
    const undoMark = this.records.mark;
    const eventMark = this.pending.length;
    const revMark = this.rev;
    if (outer) this.db.begin();
    else this.db.savepoint(sp);
    this.depth++;
    let result: R;
    try {
      result = fn(this);
      if (result && typeof (result as { then?: unknown }).then === 'function') {
        throw internal('store transaction function must be synchronous');
      }
    } catch (err) {
      this.depth--;
      try {
        if (outer) this.db.rollback();
        else this.db.rollbackTo(sp);
      } catch (rbErr) {
        // SQLite may already have rolled back (e.g. after SQLITE_FULL); the first error is the one to report.
        this.log?.warn({ err: rbErr }, 'store rollback failed');
      }
      this.records.rollback(undoMark);
      this.pending.length = eventMark;
      this.rev = revMark;
      throw err;
    }
    this.depth--;
    if (!outer) {
      this.db.release(sp);
      return result;
    }
    try {
      this.db.commit();
    } catch (err) {
      try {
        this.db.rollback();
      } catch {
        // COMMIT failures usually roll back by themselves.
      }
      this.records.rollback(0);
      this.pending = [];
      this.rev = revMark;
      throw err;
    }
    const events = this.pending;
    this.pending = [];
    this.records.forget();
    this.watches.publish(events);
    return result;
  }

  private write<R>(fn: () => R): R {
    this.assertOpen();
    return this.depth > 0 ? fn() : this.transaction(fn);
  }

  private insert(kind: string, name: string, specJson: string, statusJson: string): Resource {
    const spec = JSON.parse(specJson);
    const status = JSON.parse(statusJson);
    this.check(kind, name, spec, status);
    const revision = this.rev + 1;
    const createdAt = new Date().toISOString();
    const order = this.db.insert(kind, name, specJson, statusJson, 1, revision, createdAt, this.versionOf(kind));
    this.db.setRevision(revision);
    this.rev = revision;
    const res = freezeResource(kind, name, spec, status, 1, revision, createdAt);
    this.set(kind, name, { res, specJson, statusJson, order }, undefined);
    return res;
  }

  private replace(cur: Entry, specJson: string, statusJson: string): Resource {
    const specChanged = specJson !== cur.specJson;
    const statusChanged = statusJson !== cur.statusJson;
    if (!specChanged && !statusChanged) return cur.res;
    const { kind, name } = cur.res;
    const spec = specChanged ? JSON.parse(specJson) : cur.res.spec;
    const status = statusChanged ? JSON.parse(statusJson) : cur.res.status;
    this.check(kind, name, specChanged ? spec : undefined, statusChanged ? status : undefined);
    const revision = this.rev + 1;
    const generation = cur.res.generation + (specChanged ? 1 : 0);
    this.db.update(kind, name, specJson, statusJson, generation, revision, this.versionOf(kind));
    this.db.setRevision(revision);
    this.rev = revision;
    const res = freezeResource(kind, name, spec, status, generation, revision, cur.res.createdAt);
    this.set(kind, name, { res, specJson, statusJson, order: cur.order }, cur);
    return res;
  }

  /** Refuses a spec or status (undefined: not written) that does not match its kind's schema: the writer has a bug. */
  private check(kind: string, name: string, spec: unknown, status: unknown): void {
    const ks = this.schemas.get(kind);
    if (!ks) return;
    const problem = (spec !== undefined ? schemaProblem(ks, 'spec', spec) : undefined) ?? (status !== undefined ? schemaProblem(ks, 'status', status) : undefined);
    if (problem) throw internal(`store: ${kind}/${name} does not match its schema: ${problem}`);
  }

  private versionOf(kind: string): number {
    return this.schemas.get(kind)?.version ?? 0;
  }

  private set(kind: string, name: string, entry: Entry, prev: Entry | undefined): void {
    this.records.set(kind, name, entry, prev);
    this.pending.push({ type: 'put', revision: entry.res.resourceVersion, kind, name, resource: entry.res });
  }

  // ---- watch ------------------------------------------------------------------------------

  /**
   * Calls `fn` for every committed change of `kind` (all kinds when null), in revision order.
   * With `fromRevision`, first replays the changes after it from recent history. When the history
   * no longer holds them all (older than it, or from before the store was opened) it throws
   * WatchExpiredError, as Kubernetes answers 410: a gap would drop deletes silently, so the caller
   * lists again and watches from now (list after watch: nothing is missed).
   */
  watch<K extends AnyKind>(k: K, fn: (ev: WatchEvent<ResourceOf<K>>) => void, fromRevision?: number): () => void;
  watch(k: null, fn: WatchFn, fromRevision?: number): () => void;
  watch(k: AnyKind | null, fn: WatchFn, fromRevision?: number): () => void;
  watch(k: AnyKind | null, fn: WatchFn, fromRevision?: number): () => void {
    return this.watches.watch(k?.name ?? null, fn, fromRevision, () => this.committedRevision());
  }

  /**
   * Resolves with the resource once `predicate` holds for it (undefined: it does not exist): at
   * once if it already does. On timeout resolves with the current value (re-check the
   * predicate); on abort rejects with an AbortError. The store being closed resolves too.
   */
  waitFor<K extends AnyKind>(kind: K, name: string, predicate: ResourcePredicate<K>, opts: WaitForOptions = {}): Promise<ResourceOf<K> | undefined> {
    return this.watches.waitFor(kind.name, name, () => this.get(kind, name), predicate, opts);
  }

  /** Number of active watch listeners and waiters (for tests and metrics). */
  get watcherCount(): number {
    return this.watches.count;
  }

  close(): void {
    if (this.closed) return;
    if (this.depth > 0) throw internal('store closed inside a transaction');
    this.closed = true;
    this.reserve?.close();
    this.watches.close();
    this.db.close();
    this.log?.debug({ revision: this.rev }, 'store closed');
  }

  private committedRevision(): number {
    // Inside a transaction, pending writes have bumped `rev` but nobody has seen them yet.
    return this.pending.length > 0 ? this.pending[0]!.revision - 1 : this.rev;
  }

  private assertOpen(): void {
    if (this.closed) throw unavailable('store is closed');
  }
}
