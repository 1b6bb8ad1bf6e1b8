// The durable resource store: every resource lives in one SQLite table (node:sqlite) and, at the
// same time, in memory. Reads are served from memory only; writes go to SQLite first and reach
// memory and watchers only once the transaction has committed.
//
// Durability: WAL with synchronous=NORMAL. A commit has been written (write(2)) into the WAL
// before the call returns, so it survives the process being killed (kill -9, OOM, crash): the
// bytes are in the kernel's page cache and SQLite recovers the WAL on the next open. What NORMAL
// gives up is the fsync per commit, i.e. the last commits on power loss or kernel panic. That is
// the trade the daemon wants: an fsync per write would make every API call cost milliseconds,
// and after a power loss the reconcilers re-observe the world anyway. `synchronous: 'FULL'`
// is available for callers that need the stronger guarantee.
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { Logger } from 'pino';
import { isStorageFull, StoreReserve } from './reserve.ts';
import { EngineError, conflict, internal, notFound, unavailable } from '../lib/errors.ts';
import { Indexes } from './indexes.ts';
import { loadRecords, prepareRecordTables, quarantinedRecords, type QuarantinedRecord } from './load.ts';
import { schemaProblem } from './schema.ts';
import type { AnyKind, KindTable, ResourceOf, ResourcePredicate, SpecMutation, SpecOf, StatusMutation, StatusOf } from './kind.ts';
import type { IndexDef, Resource, WatchEvent } from './types.ts';

export type { QuarantinedRecord } from './load.ts';

export interface StoreOptions {
  log?: Logger;
  /** See the file comment. Default NORMAL. */
  synchronous?: 'NORMAL' | 'FULL';
  /** How many recent events `watch(kind, fn, fromRevision)` can replay (each holds its resource). Default DEFAULT_EVENT_HISTORY. */
  eventHistory?: number;
  /** The kinds the store checks writes against and migrates loaded records by (or quarantines them). Kinds not in it are stored as given. */
  kinds?: KindTable;
  /** Bytes kept free for the store beside the database (store/reserve.ts). Default 0: none. */
  reserveBytes?: number;
}

export interface PutOptions {
  /** 0: the resource must not exist yet; n > 0: its resourceVersion must be n. */
  expectedResourceVersion?: number;
}

export interface WaitForOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

export type WatchFn = (ev: WatchEvent) => void;

/** A watch asked to resume from a revision the history no longer holds: list again, then watch from now. */
export class WatchExpiredError extends EngineError {
  readonly expired = true;
  constructor(from: number, floor: number) {
    super('FailedPrecondition', `too old resource version: ${from} (the watch history starts after ${floor}); list again`);
  }
}

/** Whether `err` is a WatchExpiredError (also across module copies: by its marker). */
export function isWatchExpired(err: unknown): boolean {
  return !!err && typeof err === 'object' && (err as { expired?: unknown }).expired === true;
}

/** What `transaction(fn)` hands to `fn`: the store itself, whose reads see the pending writes. */
export type StoreTx = Pick<Store, 'get' | 'list' | 'byIndex' | 'create' | 'updateSpec' | 'updateStatus' | 'put' | 'delete' | 'revision'>;

interface Entry {
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

interface Listener {
  kind: string | null;
  fn: WatchFn;
  /** Events at or below this revision were already delivered (or replayed) to this listener. */
  seen: number;
  active: boolean;
}

interface Waiter {
  check: () => void;
}

/**
 * Events kept for watches that resume from a revision (a controller restarted in-process; one that
 * finds its revision gone lists again). Each holds a whole resource, often the last version of a
 * removed container that nothing else holds: 1024 of them kept several MiB after a busy session.
 */
const DEFAULT_EVENT_HISTORY = 256;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS resources (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  spec TEXT NOT NULL,
  status TEXT NOT NULL,
  generation INTEGER NOT NULL,
  resource_version INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (kind, name)
);
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
`;

export function openStore(path: string, opts: StoreOptions = {}): Store {
  return new Store(path, opts);
}

export class Store {
  private readonly db: DatabaseSync;
  private readonly log: Logger | undefined;
  private readonly schemas: KindTable;
  private readonly kinds = new Map<string, Map<string, Entry>>();
  private readonly listCache = new Map<string, Resource[]>();
  private readonly indexes = new Indexes();
  private rev = 0;
  private closed = false;
  private readonly reserve: StoreReserve | null;

  private readonly stmt: {
    insert: StatementSync;
    update: StatementSync;
    remove: StatementSync;
    setRev: StatementSync;
    begin: StatementSync;
    commit: StatementSync;
  };

  // Transaction state. Depth 0: no transaction open.
  private depth = 0;
  private undo: Undo[] = [];
  private pending: WatchEvent[] = [];

  // Watch state.
  private readonly listeners = new Set<Listener>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly ring: WatchEvent[];
  private ringStart = 0;
  private ringLen = 0;
  /** Every event with a revision above this is in the ring. */
  private ringFloor: number;
  private readonly dispatchQueue: WatchEvent[] = [];
  private dispatching = false;

  constructor(path: string, opts: StoreOptions = {}) {
    this.log = opts.log;
    this.schemas = opts.kinds ?? new Map();
    this.ring = new Array<WatchEvent>(Math.max(16, opts.eventHistory ?? DEFAULT_EVENT_HISTORY));
    const db = new DatabaseSync(path);
    try {
      // One daemon per store: its memory is the only view of the data. EXCLUSIVE locking makes a
      // second process fail at open instead of writing behind our back (the OS drops the lock
      // when the holder dies, so a killed daemon never blocks its successor).
      db.exec('PRAGMA locking_mode = EXCLUSIVE');
      db.exec('PRAGMA busy_timeout = 1000');
      db.exec('PRAGMA journal_mode = WAL');
      db.exec(`PRAGMA synchronous = ${opts.synchronous === 'FULL' ? 'FULL' : 'NORMAL'}`);
      // Reads are served from memory (everything is loaded at open), so SQLite's page cache only
      // helps writes find their B-tree pages, and the OS caches the file anyway. 256 KiB instead of
      // the default 2 MiB, which a busy daemon would otherwise fill and keep.
      db.exec('PRAGMA cache_size = -256');
      db.exec('BEGIN IMMEDIATE');
      db.exec(SCHEMA);
      prepareRecordTables(db);
      db.exec(`INSERT OR IGNORE INTO meta (key, value) VALUES ('revision', 0)`);
      db.exec('COMMIT');
    } catch (err) {
      db.close();
      if (/locked|busy/i.test(String((err as Error)?.message))) {
        throw unavailable(`store ${path} is in use by another process`, err);
      }
      throw err;
    }
    this.db = db;
    this.reserve = opts.reserveBytes ? new StoreReserve(`${path}.reserve`, opts.reserveBytes, opts.log) : null;
    this.stmt = {
      insert: db.prepare(
        'INSERT INTO resources (kind, name, spec, status, generation, resource_version, created_at, schema_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      update: db.prepare(
        'UPDATE resources SET spec = ?, status = ?, generation = ?, resource_version = ?, schema_version = ? WHERE kind = ? AND name = ?',
      ),
      remove: db.prepare('DELETE FROM resources WHERE kind = ? AND name = ?'),
      setRev: db.prepare(`UPDATE meta SET value = ? WHERE key = 'revision'`),
      // Prepared once: exec() would parse them again for every write.
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
    };
    this.load();
    this.ringFloor = this.rev;
    this.log?.debug({ path, revision: this.rev }, 'store opened');
  }

  private load(): void {
    const meta = this.db.prepare(`SELECT value FROM meta WHERE key = 'revision'`).get() as { value: number } | undefined;
    this.rev = Number(meta?.value ?? 0);
    for (const r of loadRecords(this.db, this.schemas, this.log)) {
      const res = freezeResource(r.kind, r.name, r.spec, r.status, r.generation, r.resourceVersion, r.createdAt);
      this.kindMap(r.kind).set(r.name, { res, specJson: r.specJson, statusJson: r.statusJson, order: r.order });
      // A crash can't leave a resource newer than the revision (same transaction), but be safe.
      if (res.resourceVersion > this.rev) this.rev = res.resourceVersion;
    }
  }

  /** Records set aside at load (this start or an earlier one), oldest first. */
  quarantined(): QuarantinedRecord[] {
    return quarantinedRecords(this.db);
  }

  // ---- reads (memory only) ----------------------------------------------------------------

  /** The store's revision: bumped by every committed write (within a transaction, by each pending write). */
  get revision(): number {
    return this.rev;
  }

  get<K extends AnyKind>(kind: K, name: string): ResourceOf<K> | undefined {
    return this.kinds.get(kind.name)?.get(name)?.res as ResourceOf<K> | undefined;
  }

  /** All resources of a kind in creation order. Resources are frozen: copy, don't mutate. */
  list<K extends AnyKind>(kind: K): ResourceOf<K>[] {
    let cached = this.listCache.get(kind.name);
    if (!cached) {
      const m = this.kinds.get(kind.name);
      cached = m ? Array.from(m.values(), (e) => e.res) : [];
      this.listCache.set(kind.name, cached);
    }
    return cached.slice() as ResourceOf<K>[];
  }

  /** The resources of `def.kind` that `def.keys` maps to `key` (a name lookup without scanning the kind). */
  byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] {
    return this.indexes.lookup(def, key, () => Array.from(this.kinds.get(def.kind)?.values() ?? [], (e) => e.res));
  }

  // ---- writes -----------------------------------------------------------------------------

  create<K extends AnyKind>(kind: K, name: string, spec: SpecOf<K>, status: StatusOf<K>): ResourceOf<K> {
    return this.write(() => {
      if (this.entry(kind.name, name)) throw new EngineError('AlreadyExists', `resource ${kind.name}/${name} already exists`);
      return this.insert(kind.name, name, json(spec), json(status)) as ResourceOf<K>;
    });
  }

  /** Replaces the spec with `mutate(spec)`; bumps generation. No write at all if the spec is unchanged. */
  updateSpec<K extends AnyKind>(kind: K, name: string, mutate: SpecMutation<K>): ResourceOf<K> {
    return this.write(() => {
      const cur = this.mustEntry(kind.name, name);
      const res = cur.res as ResourceOf<K>;
      const specJson = json(mutate(res.spec, res));
      return this.replace(cur, specJson, cur.statusJson) as ResourceOf<K>;
    });
  }

  /** Replaces the status with `mutate(status)`; generation unchanged. No write if the status is unchanged. */
  updateStatus<K extends AnyKind>(kind: K, name: string, mutate: StatusMutation<K>): ResourceOf<K> {
    return this.write(() => {
      const cur = this.mustEntry(kind.name, name);
      const res = cur.res as ResourceOf<K>;
      const statusJson = json(mutate(res.status, res));
      return this.replace(cur, cur.specJson, statusJson) as ResourceOf<K>;
    });
  }

  /** Creates or replaces spec and status, optionally only if the resource is still at `expectedResourceVersion`. */
  put<K extends AnyKind>(kind: K, r: { name: string; spec: SpecOf<K>; status: StatusOf<K> }, opts: PutOptions = {}): ResourceOf<K> {
    return this.write(() => {
      const cur = this.entry(kind.name, r.name);
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
      const cur = this.entry(kind, name);
      if (!cur) return false;
      const revision = this.rev + 1;
      this.stmt.remove.run(kind, name);
      this.stmt.setRev.run(revision);
      this.rev = revision;
      this.undo.push({ kind, name, prev: cur });
      this.kinds.get(kind)!.delete(name);
      this.listCache.delete(kind);
      this.indexes.update(kind, name, cur.res, undefined);
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
    const undoMark = this.undo.length;
    const eventMark = this.pending.length;
    const revMark = this.rev;
    if (outer) this.stmt.begin.run();
    else this.db.exec(`SAVEPOINT ${sp}`);
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
        this.db.exec(outer ? 'ROLLBACK' : `ROLLBACK TO ${sp}; RELEASE ${sp}`);
      } catch (rbErr) {
        // SQLite may already have rolled back (e.g. after SQLITE_FULL); the first error is the one to report.
        this.log?.warn({ err: rbErr }, 'store rollback failed');
      }
      this.rollbackMemory(undoMark);
      this.pending.length = eventMark;
      this.rev = revMark;
      throw err;
    }
    this.depth--;
    if (!outer) {
      this.db.exec(`RELEASE ${sp}`);
      return result;
    }
    try {
      this.stmt.commit.run();
    } catch (err) {
      try {
        this.db.exec('ROLLBACK');
      } catch {
        // COMMIT failures usually roll back by themselves.
      }
      this.rollbackMemory(0);
      this.pending = [];
      this.rev = revMark;
      throw err;
    }
    const events = this.pending;
    this.pending = [];
    this.undo = [];
    this.publish(events);
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
    const out = this.stmt.insert.run(kind, name, specJson, statusJson, 1, revision, createdAt, this.versionOf(kind));
    this.stmt.setRev.run(revision);
    this.rev = revision;
    const res = freezeResource(kind, name, spec, status, 1, revision, createdAt);
    this.set(kind, name, { res, specJson, statusJson, order: Number(out.lastInsertRowid) }, undefined);
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
    this.stmt.update.run(specJson, statusJson, generation, revision, this.versionOf(kind), kind, name);
    this.stmt.setRev.run(revision);
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
    this.undo.push({ kind, name, prev });
    this.kindMap(kind).set(name, entry);
    this.listCache.delete(kind);
    this.indexes.update(kind, name, prev?.res, entry.res);
    this.pending.push({ type: 'put', revision: entry.res.resourceVersion, kind, name, resource: entry.res });
  }

  private rollbackMemory(mark: number): void {
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
    const kind = k?.name ?? null;
    const l: Listener = { kind, fn, seen: this.committedRevision(), active: true };
    if (fromRevision !== undefined && fromRevision < l.seen) {
      if (fromRevision < this.ringFloor) throw new WatchExpiredError(fromRevision, this.ringFloor);
      for (const ev of this.replay(kind, fromRevision)) this.deliver(l, ev);
      l.seen = this.committedRevision();
    }
    this.listeners.add(l);
    return () => {
      l.active = false;
      this.listeners.delete(l);
    };
  }

  /**
   * Resolves with the resource once `predicate` holds for it (undefined: it does not exist): at
   * once if it already does. On timeout resolves with the current value (re-check the
   * predicate); on abort rejects with an AbortError. The store being closed resolves too.
   */
  waitFor<K extends AnyKind>(kind: K, name: string, predicate: ResourcePredicate<K>, opts: WaitForOptions = {}): Promise<ResourceOf<K> | undefined> {
    const { signal, timeoutMs } = opts;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const now = this.get(kind, name);
    if (predicate(now) || this.closed) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const key = `${kind.name}\u0000${name}`;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const cleanup = () => {
        const set = this.waiters.get(key);
        set?.delete(waiter);
        if (set?.size === 0) this.waiters.delete(key);
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        check: () => {
          const r = this.get(kind, name);
          let ok: boolean;
          try {
            ok = this.closed || predicate(r);
          } catch (err) {
            cleanup();
            reject(err);
            return;
          }
          if (ok) {
            cleanup();
            resolve(r);
          }
        },
      };
      const onAbort = () => {
        cleanup();
        reject(abortError(signal!));
      };
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      set.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined && timeoutMs >= 0 && Number.isFinite(timeoutMs)) {
        timer = setTimeout(() => {
          cleanup();
          resolve(this.get(kind, name));
        }, timeoutMs);
      }
    });
  }

  /** Number of active watch listeners and waiters (for tests and metrics). */
  get watcherCount(): number {
    let n = this.listeners.size;
    for (const s of this.waiters.values()) n += s.size;
    return n;
  }

  close(): void {
    if (this.closed) return;
    if (this.depth > 0) throw internal('store closed inside a transaction');
    this.closed = true;
    this.reserve?.close();
    this.listeners.clear();
    for (const set of [...this.waiters.values()]) for (const w of [...set]) w.check();
    this.waiters.clear();
    this.db.close();
    this.log?.debug({ revision: this.rev }, 'store closed');
  }

  private committedRevision(): number {
    // Inside a transaction, pending writes have bumped `rev` but nobody has seen them yet.
    return this.pending.length > 0 ? this.pending[0]!.revision - 1 : this.rev;
  }

  /** The changes after `from` of `kind`, from the history (the caller checked that it holds them). */
  private replay(kind: string | null, from: number): WatchEvent[] {
    const out: WatchEvent[] = [];
    for (let i = 0; i < this.ringLen; i++) {
      const ev = this.ring[(this.ringStart + i) % this.ring.length]!;
      if (ev.revision > from && (kind === null || ev.kind === kind)) out.push(ev);
    }
    return out;
  }

  private publish(events: WatchEvent[]): void {
    if (events.length === 0) return;
    for (const ev of events) this.remember(ev);
    this.dispatchQueue.push(...events);
    // A listener that writes triggers publish() again: its events join the queue behind ours
    // so that every listener still sees revision order.
    if (this.dispatching) return;
    this.dispatching = true;
    try {
      for (let i = 0; i < this.dispatchQueue.length; i++) {
        const ev = this.dispatchQueue[i]!;
        for (const l of [...this.listeners]) {
          if (l.active && (l.kind === null || l.kind === ev.kind) && ev.revision > l.seen) this.deliver(l, ev);
        }
        const set = this.waiters.get(`${ev.kind}\u0000${ev.name}`);
        if (set) for (const w of [...set]) w.check();
      }
    } finally {
      this.dispatchQueue.length = 0;
      this.dispatching = false;
    }
  }

  private deliver(l: Listener, ev: WatchEvent): void {
    l.seen = ev.revision;
    try {
      l.fn(ev);
    } catch (err) {
      this.log?.error({ err, kind: ev.kind, name: ev.name, revision: ev.revision }, 'store watch listener threw');
    }
  }

  private remember(ev: WatchEvent): void {
    const cap = this.ring.length;
    if (this.ringLen === cap) {
      this.ringFloor = this.ring[this.ringStart]!.revision;
      this.ring[this.ringStart] = ev;
      this.ringStart = (this.ringStart + 1) % cap;
    } else {
      this.ring[(this.ringStart + this.ringLen) % cap] = ev;
      this.ringLen++;
    }
  }

  // ---- helpers ----------------------------------------------------------------------------

  private kindMap(kind: string): Map<string, Entry> {
    let m = this.kinds.get(kind);
    if (!m) this.kinds.set(kind, (m = new Map()));
    return m;
  }

  private entry(kind: string, name: string): Entry | undefined {
    return this.kinds.get(kind)?.get(name);
  }

  private mustEntry(kind: string, name: string): Entry {
    const e = this.entry(kind, name);
    if (!e) throw notFound(`resource ${kind}/${name} not found`);
    return e;
  }

  private assertOpen(): void {
    if (this.closed) throw unavailable('store is closed');
  }
}

function json(v: unknown): string {
  const s = JSON.stringify(v);
  if (s === undefined) throw internal('store: value is not JSON-serialisable (undefined)');
  return s;
}

/** Memory keeps its own frozen copy (parsed from the JSON written), never the caller's object. */
function freezeResource(
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

function abortError(signal: AbortSignal): Error {
  const err = new DOMException('The operation was aborted', 'AbortError');
  (err as { cause?: unknown }).cause = signal.reason;
  return err;
}
