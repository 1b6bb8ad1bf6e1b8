// A keyed work queue in the shape of client-go's rate-limiting workqueue:
// - a key waiting in the queue is held once, however often it is added (dedup);
// - a key being processed is never handed to a second worker; adding it meanwhile marks it
//   dirty, and done() puts it back so the change is not lost;
// - addAfter(key, ms) delays an add (the earliest pending delay wins);
// - addRateLimited(key) retries with per-key exponential backoff, forget(key) resets it;
// - shutdown() stops intake and lets in-flight items finish.

import type { QueueMetrics } from './metrics.ts';

/** What the queue reads time from and schedules delayed adds on; tests pass one they move by hand. */
export interface Clock {
  now(): number;
  /** Calls `fn` after `ms`; the handle goes to clear(). Must not keep the process alive. */
  schedule(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  schedule: (fn, ms) => setTimeout(fn, ms).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface WorkQueueOptions {
  /** First retry delay. Default 5 ms. */
  baseDelayMs?: number;
  /** Retry delay cap. Default 60 s. */
  maxDelayMs?: number;
  /** Default: the real one. */
  clock?: Clock;
  /** workqueue_* families (controllers/metrics.ts); none by default. */
  metrics?: QueueMetrics;
}

interface Delayed {
  at: number;
  timer: unknown;
}

export class WorkQueue<K = string> {
  private readonly queue: K[] = [];
  private head = 0;
  /** Keys that need processing: waiting in `queue`, or re-added while processing. */
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly delayed = new Map<K, Delayed>();
  private readonly failures = new Map<K, number>();
  private readonly getters: Array<(key: K | undefined) => void> = [];
  private idleWaiters: Array<() => void> = [];
  private shuttingDown = false;
  private draining = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly clock: Clock;
  private readonly metrics: QueueMetrics | undefined;
  /** With metrics: when each waiting key was queued, and when each in-flight key was handed out. */
  private readonly queuedAt = new Map<K, number>();
  private readonly startedAt = new Map<K, number>();

  constructor(opts: WorkQueueOptions = {}) {
    this.baseDelayMs = opts.baseDelayMs ?? 5;
    this.maxDelayMs = opts.maxDelayMs ?? 60_000;
    this.clock = opts.clock ?? realClock;
    this.metrics = opts.metrics;
  }

  add(key: K): void {
    if (this.shuttingDown) return;
    const d = this.delayed.get(key);
    if (d) {
      this.clock.clear(d.timer);
      this.delayed.delete(key);
    }
    if (this.dirty.has(key)) return;
    this.metrics?.added();
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Adds `key` after `ms`; if it already has a pending delayed add, the earlier one stays. */
  addAfter(key: K, ms: number): void {
    if (this.shuttingDown) return;
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    const at = this.clock.now() + ms;
    const cur = this.delayed.get(key);
    if (cur) {
      if (cur.at <= at) return;
      this.clock.clear(cur.timer);
    }
    const timer = this.clock.schedule(() => {
      if (this.delayed.get(key)?.timer !== timer) return;
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    this.delayed.set(key, { at, timer });
  }

  /** Re-adds `key` after its backoff: base * 2^failures, capped. */
  addRateLimited(key: K): void {
    this.metrics?.retried();
    this.addAfter(key, this.nextDelay(key));
  }

  /** The delay the next addRateLimited(key) will use, counting it as one more failure. */
  private nextDelay(key: K): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return Math.min(this.baseDelayMs * 2 ** Math.min(n, 40), this.maxDelayMs);
  }

  /** Clears the backoff of `key` (after a successful run). */
  forget(key: K): void {
    this.failures.delete(key);
  }

  numRequeues(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  /**
   * The next key to process, marked as processing until done(key). Resolves undefined once the
   * queue is shut down (after a draining shutdown, only when nothing is left to hand out).
   */
  get(): Promise<K | undefined> {
    const key = this.take();
    if (key !== undefined || this.finished()) return Promise.resolve(key);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  done(key: K): void {
    if (!this.processing.delete(key)) return;
    if (this.metrics) {
      const started = this.startedAt.get(key);
      this.startedAt.delete(key);
      if (started !== undefined) this.metrics.finished((this.clock.now() - started) / 1000);
    }
    if (this.dirty.has(key)) {
      if (this.shuttingDown && !this.draining) this.dirty.delete(key);
      else this.push(key);
    }
    this.checkIdle();
  }

  /** Keys waiting to be handed out (not counting delayed or in-flight ones). */
  get length(): number {
    return this.queue.length - this.head;
  }

  get inFlight(): number {
    return this.processing.size;
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /**
   * Stops intake (add/addAfter are ignored from now on) and drops delayed adds. With `drain`,
   * keys already waiting are still handed out; without, they are dropped and waiting getters
   * get undefined. Either way resolves once no key is being processed (and none is left).
   */
  shutdown(drain: boolean): Promise<void> {
    this.shuttingDown = true;
    this.draining = drain;
    for (const d of this.delayed.values()) this.clock.clear(d.timer);
    this.delayed.clear();
    if (!drain) {
      for (let i = this.head; i < this.queue.length; i++) this.dirty.delete(this.queue[i]!);
      this.queue.length = 0;
      this.head = 0;
      this.queuedAt.clear();
    }
    this.releaseGettersIfEmpty();
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.checkIdle();
    });
  }

  private push(key: K): void {
    const getter = this.getters.shift();
    if (getter) {
      this.dirty.delete(key);
      this.processing.add(key);
      this.handedOut(key, 0);
      getter(key);
      return;
    }
    if (this.metrics) this.queuedAt.set(key, this.clock.now());
    this.queue.push(key);
  }

  private handedOut(key: K, waitedMs: number): void {
    if (!this.metrics) return;
    this.metrics.handedOut(waitedMs / 1000);
    this.startedAt.set(key, this.clock.now());
  }

  /** Seconds of work in progress, in total and the longest (workqueue_unfinished_work_seconds, _longest_running_processor_seconds). */
  unfinished(): { total: number; longest: number } {
    const now = this.clock.now();
    let total = 0;
    let longest = 0;
    for (const at of this.startedAt.values()) {
      const s = (now - at) / 1000;
      total += s;
      if (s > longest) longest = s;
    }
    return { total, longest };
  }

  private take(): K | undefined {
    if (this.head >= this.queue.length) return undefined;
    const key = this.queue[this.head]!;
    this.queue[this.head] = undefined as K;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.dirty.delete(key);
    this.processing.add(key);
    if (this.metrics) {
      const queued = this.queuedAt.get(key);
      this.queuedAt.delete(key);
      this.handedOut(key, queued === undefined ? 0 : this.clock.now() - queued);
    }
    return key;
  }

  /** Shut down and nothing more will be handed out (a draining queue waits for in-flight keys, which may come back dirty). */
  private finished(): boolean {
    return this.shuttingDown && this.length === 0 && (!this.draining || this.processing.size === 0);
  }

  private releaseGettersIfEmpty(): void {
    if (!this.finished()) return;
    for (const g of this.getters.splice(0)) g(undefined);
  }

  private checkIdle(): void {
    this.releaseGettersIfEmpty();
    if (!this.shuttingDown || this.processing.size > 0 || this.length > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
