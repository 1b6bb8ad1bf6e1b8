// The controller runner: store watch -> keyed work queue -> reconcile(key).
// Every put/delete of the controller's kind enqueues the resource name; start-up enqueues every
// existing resource once (that resync is how restarts and crash recovery converge). A controller of
// fixed keys and no kind of its own (the cluster's task runner and orchestrator, whose state is in etcd)
// has those keys queued at start instead, and is woken by its triggers alone. What else wakes
// a key (other kinds' changes, supervisor events, a job's end) is declared with the builder
// (controllers/builder.ts) and runs here as triggers while the controller runs. The reconciler gets
// a key, never an event: it re-reads what it needs.
import type { Logger } from 'pino';
import type { WatchEvent } from '../store/types.ts';
import type { Store } from '../store/store.ts';
import type { AnyKind } from '../store/kind.ts';
import type { ControllerMetrics, ReconcileResultLabel } from './metrics.ts';
import { WorkQueue } from './work-queue.ts';

export interface ReconcileContext {
  /** Aborted only when stop() gives up waiting for in-flight reconciles. */
  signal: AbortSignal;
  /** Child logger with `{ controller, key, reconcileId }`. */
  log: Logger;
}

export type ReconcileResult = void | { requeueAfter: number };

export interface Reconciler {
  reconcile(key: string, ctx: ReconcileContext): Promise<ReconcileResult>;
  /** Shutdown gave up waiting for the reconciles in flight: abort what they started (a machine host's effects). */
  stop?(): void;
}

export type ControllerStore = Pick<Store, 'watch' | 'list' | 'get' | 'byIndex'>;

/** Something besides the controller's own kind that wakes keys, subscribed while the controller runs. */
export interface Trigger {
  /** For logs: "watches container", "source". */
  describe: string;
  /** Starts delivering keys to `enqueue`; answers the stop. */
  start(enqueue: (key: string) => void): () => void;
}

export interface ControllerOptions {
  name: string;
  /** The kind reconciled (each record's name a key); or, with none, `keys`. */
  kind?: AnyKind;
  /** Without a kind: the keys reconciled (queued at start; synced once each is reconciled once). */
  keys?: readonly string[];
  /** What the kind and the triggers' watches read (a controller of keys and sources alone: none). */
  store?: ControllerStore;
  reconciler: Reconciler;
  log: Logger;
  /** Concurrent reconciles (of different keys). Default 4. */
  workers?: number;
  /** How long stop() lets in-flight reconciles run before aborting their signal. Default 30 s. */
  stopTimeoutMs?: number;
  /** Retry backoff of failed reconciles. Defaults 5 ms .. 60 s. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /**
   * Queue a resource when it is created, deleted or its spec changes (a new generation), not
   * for status-only writes. For kinds whose status only their own reconciler writes: its writes
   * would otherwise queue every key again after each reconcile that changed something.
   */
  specChangesOnly?: boolean;
  /**
   * Resume the watch after this store revision instead of listing everything (a runner started
   * again with what it had seen). A revision older than the store's history is relisted.
   */
  resumeFromRevision?: number;
  /** Other kinds' watches and outside sources (controllers/builder.ts declares them). */
  triggers?: readonly Trigger[];
  /** controller_runtime_* and workqueue_* families (controllers/metrics.ts); none by default. */
  metrics?: ControllerMetrics;
  /**
   * The reconciler reports its own failures (an unreachable store, logged once per cause): the
   * runner logs its retries at debug, not at warn and error every back-off.
   */
  quietRetries?: boolean;
}

/** Thrown by a reconciler when retrying cannot help: logged, not retried. */
export class TerminalError extends Error {
  readonly terminal = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

/** The store's answer to a watch from a revision its history no longer holds (store/store.ts WatchExpiredError). */
function isWatchExpired(err: unknown): boolean {
  return !!err && typeof err === 'object' && (err as { expired?: unknown }).expired === true;
}

function isTerminal(err: unknown): boolean {
  return err instanceof TerminalError || (!!err && typeof err === 'object' && (err as { terminal?: unknown }).terminal === true);
}

export class Controller {
  readonly name: string;
  readonly kind: AnyKind | undefined;
  private readonly keys: readonly string[];
  private readonly quietRetries: boolean;
  private readonly store: ControllerStore | undefined;
  private readonly reconciler: Reconciler;
  private readonly log: Logger;
  private readonly workers: number;
  private readonly stopTimeoutMs: number;
  private readonly queue: WorkQueue<string>;
  private readonly abort = new AbortController();
  private unwatch: (() => void) | null = null;
  private readonly triggers: readonly Trigger[];
  private readonly metrics: ControllerMetrics | undefined;
  private active = 0;
  private stopTriggers: Array<() => void> = [];
  private loops: Promise<void>[] = [];
  private started = false;
  private stopped = false;
  private seq = 0;
  /** With specChangesOnly: the generation last queued per key. */
  private readonly generations: Map<string, number> | null;
  private readonly resumeFrom: number | undefined;
  /** The keys listed at start not yet reconciled once; null once all have been. */
  private unsynced: Set<string> | null = null;
  private markSynced!: () => void;
  private readonly syncedP = new Promise<void>((resolve) => (this.markSynced = resolve));

  constructor(opts: ControllerOptions) {
    this.name = opts.name;
    this.kind = opts.kind;
    this.keys = opts.keys ?? [];
    if (!opts.kind && !this.keys.length) throw new Error(`controller ${opts.name}: neither a kind nor keys`);
    if (opts.kind && !opts.store) throw new Error(`controller ${opts.name}: a kind and no store`);
    this.quietRetries = !!opts.quietRetries;
    this.store = opts.store;
    this.reconciler = opts.reconciler;
    this.log = opts.log.child({ controller: opts.name });
    this.workers = Math.max(1, opts.workers ?? 4);
    this.stopTimeoutMs = opts.stopTimeoutMs ?? 30_000;
    this.metrics = opts.metrics;
    this.queue = new WorkQueue<string>({ baseDelayMs: opts.baseDelayMs, maxDelayMs: opts.maxDelayMs, metrics: opts.metrics?.queue });
    opts.metrics?.watchQueue(this.queue);
    opts.metrics?.workers(0, this.workers);
    this.generations = opts.specChangesOnly ? new Map() : null;
    this.resumeFrom = opts.resumeFromRevision;
    this.triggers = opts.triggers ?? [];
  }

  /**
   * Resolves once every object that existed at start has been reconciled once (as controller-runtime's
   * informers "have synced"): another controller that reads this one's status waits for it, so it
   * does not act on what a previous run of the daemon last wrote.
   */
  synced(): Promise<void> {
    return this.syncedP;
  }

  async start(): Promise<void> {
    if (this.started || this.stopped) return;
    this.started = true;
    const kind = this.kind;
    const store = this.store;
    if (!kind || !store) {
      for (const k of this.keys) this.queue.add(k);
      this.unsynced = new Set(this.keys);
      this.startTriggers();
      for (let i = 0; i < this.workers; i++) this.loops.push(this.worker());
      this.log.info({ workers: this.workers, keys: this.keys.length }, 'controller started');
      return;
    }
    const from = this.resumeFrom;
    if (from !== undefined && this.resume(store, kind, from)) {
      this.markSynced();
      this.startTriggers();
      for (let i = 0; i < this.workers; i++) this.loops.push(this.worker());
      this.log.info({ workers: this.workers, resumedFrom: from }, 'controller started');
      return;
    }
    // Watch first, then list: a change between the two is seen twice at worst, never missed.
    this.unwatch = store.watch(kind, (ev) => this.onEvent(ev));
    const existing = store.list(kind);
    for (const r of existing) {
      this.generations?.set(r.name, r.generation);
      this.queue.add(r.name);
    }
    this.unsynced = new Set(existing.map((r) => r.name));
    if (this.unsynced.size === 0) this.markSynced();
    this.startTriggers();
    for (let i = 0; i < this.workers; i++) this.loops.push(this.worker());
    this.log.info({ workers: this.workers, resync: existing.length }, 'controller started');
  }

  private startTriggers(): void {
    const enqueue = (key: string) => this.enqueue(key);
    this.stopTriggers = this.triggers.map((t) => t.start(enqueue));
  }

  /**
   * Picks the watch up after `from` (the changes since are queued); false when the store's history
   * no longer holds them ("too old"): the caller lists everything again instead.
   */
  private resume(store: ControllerStore, kind: AnyKind, from: number): boolean {
    try {
      this.unwatch = store.watch(kind, (ev) => this.onEvent(ev), from);
      return true;
    } catch (err) {
      if (!isWatchExpired(err)) throw err;
      this.log.info({ from, reason: (err as Error).message }, 'watch history too old: relisting');
      return false;
    }
  }

  private onEvent(ev: WatchEvent): void {
    const gens = this.generations;
    if (gens) {
      if (ev.type === 'delete') gens.delete(ev.name);
      else if (gens.get(ev.name) === ev.resource.generation) return;
      else gens.set(ev.name, ev.resource.generation);
    }
    this.queue.add(ev.name);
  }

  /** Queue `key` for reconciling now, or after `afterMs`. Ignored once stopping. */
  enqueue(key: string, afterMs?: number): void {
    if (afterMs !== undefined && afterMs > 0) this.queue.addAfter(key, afterMs);
    else this.queue.add(key);
  }

  /**
   * Stops intake and drops waiting keys (the next start-up resyncs them), then lets in-flight
   * reconciles finish. If they take longer than stopTimeoutMs, their signal is aborted and
   * stop() returns without waiting further.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.unwatch?.();
    this.unwatch = null;
    for (const stop of this.stopTriggers.reverse()) stop();
    this.stopTriggers = [];
    const drained = this.queue.shutdown(false).then(() => Promise.all(this.loops));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), this.stopTimeoutMs);
    });
    const late = await Promise.race([drained.then(() => false), timedOut]);
    clearTimeout(timer);
    if (late) {
      this.log.warn({ inFlight: this.queue.inFlight, timeoutMs: this.stopTimeoutMs }, 'reconciles still running at stop; aborting them');
      this.abort.abort(new Error(`controller ${this.name} stopped`));
      this.reconciler.stop?.();
    }
    this.log.info('controller stopped');
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        await this.process(key);
      } finally {
        this.queue.done(key);
      }
    }
  }

  private async process(key: string): Promise<void> {
    const reconcileId = ++this.seq;
    // Most reconciles log nothing: the child logger is made on first use.
    let child: Logger | undefined;
    const parent = this.log;
    const ctx: ReconcileContext = {
      signal: this.abort.signal,
      get log() {
        return (child ??= parent.child({ key, reconcileId }));
      },
    };
    const started = performance.now();
    this.metrics?.workers(++this.active, this.workers);
    let result: ReconcileResultLabel = 'success';
    try {
      const res = await this.reconciler.reconcile(key, ctx);
      this.queue.forget(key);
      const after = res && typeof res === 'object' ? res.requeueAfter : undefined;
      if (after !== undefined && after >= 0) {
        result = 'requeue_after';
        this.queue.addAfter(key, after);
      }
      if (parent.isLevelEnabled?.('debug') ?? true) ctx.log.debug({ ms: Math.round(performance.now() - started), requeueAfter: after }, 'reconciled');
    } catch (err) {
      const log = ctx.log;
      result = 'error';
      if (isTerminal(err)) {
        this.queue.forget(key);
        log.error({ err }, 'reconcile failed permanently');
        return;
      }
      const retries = this.queue.numRequeues(key);
      this.queue.addRateLimited(key);
      log[this.quietRetries ? 'debug' : retries >= 5 ? 'error' : 'warn']({ err, retries: retries + 1 }, 'reconcile failed; retrying with backoff');
    } finally {
      if (this.unsynced?.delete(key) && this.unsynced.size === 0) {
        this.unsynced = null;
        this.markSynced();
      }
      this.metrics?.reconciled(result, (performance.now() - started) / 1000);
      this.metrics?.workers(--this.active, this.workers);
    }
  }
}
