// The store's watchers: listeners of a kind's committed changes (`watch`, with a replay from
// recent history), waiters on one resource (`waitFor`), and the fan-out of each commit's events
// to both. The store hands events here only once they are committed, so no watcher ever sees a
// write that is then rolled back.
import type { Logger } from 'pino';
import { EngineError } from '../lib/errors.ts';
import type { WatchEvent } from './types.ts';

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
export const DEFAULT_EVENT_HISTORY = 256;

export class Watches {
  private readonly log: Logger | undefined;
  private closed = false;
  private readonly listeners = new Set<Listener>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly ring: WatchEvent[];
  private ringStart = 0;
  private ringLen = 0;
  /** Every event with a revision above this is in the ring. */
  private ringFloor: number;
  private readonly dispatchQueue: WatchEvent[] = [];
  private dispatching = false;

  /** `history`: how many events to keep for replay; `revision`: the store's at open (nothing before it is kept). */
  constructor(history: number, revision: number, log: Logger | undefined) {
    this.log = log;
    this.ring = new Array<WatchEvent>(Math.max(16, history));
    this.ringFloor = revision;
  }

  /** See Store.watch; `committed` answers the revision whose changes watchers have all been sent. */
  watch(kind: string | null, fn: WatchFn, fromRevision: number | undefined, committed: () => number): () => void {
    const l: Listener = { kind, fn, seen: committed(), active: true };
    if (fromRevision !== undefined && fromRevision < l.seen) {
      if (fromRevision < this.ringFloor) throw new WatchExpiredError(fromRevision, this.ringFloor);
      for (const ev of this.replay(kind, fromRevision)) this.deliver(l, ev);
      l.seen = committed();
    }
    this.listeners.add(l);
    return () => {
      l.active = false;
      this.listeners.delete(l);
    };
  }

  /** See Store.waitFor; `read` answers the resource's current value. */
  waitFor<R>(kind: string, name: string, read: () => R, predicate: (r: R) => boolean, opts: WaitForOptions): Promise<R> {
    const { signal, timeoutMs } = opts;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const now = read();
    if (predicate(now) || this.closed) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const key = waiterKey(kind, name);
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
          const r = read();
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
          resolve(read());
        }, timeoutMs);
      }
    });
  }

  /** Number of active watch listeners and waiters. */
  get count(): number {
    let n = this.listeners.size;
    for (const s of this.waiters.values()) n += s.size;
    return n;
  }

  /** The store is closing: listeners are dropped, waiters resolve with what is there now. */
  close(): void {
    this.closed = true;
    this.listeners.clear();
    for (const set of [...this.waiters.values()]) for (const w of [...set]) w.check();
    this.waiters.clear();
  }

  /** Committed events, in revision order: kept for replay and delivered to listeners and waiters. */
  publish(events: WatchEvent[]): void {
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
        const set = this.waiters.get(waiterKey(ev.kind, ev.name));
        if (set) for (const w of [...set]) w.check();
      }
    } finally {
      this.dispatchQueue.length = 0;
      this.dispatching = false;
    }
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
}

function waiterKey(kind: string, name: string): string {
  return `${kind}\u0000${name}`;
}

function abortError(signal: AbortSignal): Error {
  const err = new DOMException('The operation was aborted', 'AbortError');
  (err as { cause?: unknown }).cause = signal.reason;
  return err;
}
