// A watch-fed copy of one etcd prefix (key → value as text): a loop reads it on every pass instead
// of scanning etcd (nodes and the leader listing whole prefixes every 2 s cost etcd more the larger
// the cluster, issue 60). It lists once, then watches from the revision after the list's (nothing
// between missed, nothing before applied twice), on a watch stream of its own (./etcd-watch.ts says
// why). etcd3's watcher resumes across reconnects from where it read; a watch etcd cancels (the
// resume's revision was compacted meanwhile) is dropped, the prefix listed and watched again and
// the map rebuilt. Its subscribers hear the keys of every applied change and, on becoming ready,
// every key it holds and every key a rebuild dropped: `etcdPrefix(cache)` is a controller's source
// of those keys (controllers/builder.ts `.source()`), as controller-runtime's informers feed theirs.
import type { Etcd3 } from 'etcd3';
import type { Source } from '../../controllers/source.ts';
import { prefixWatcher } from './etcd-watch.ts';

type ChangeFn = (keys: readonly string[]) => void;

/** How soon a watch etcd canceled is made again; a failed list waits twice as long each time, up to the max. */
const RETRY_MS = 500;
const RETRY_MAX_MS = 4000;

export class PrefixCache {
  private readonly prefix: string;
  private readonly listeners = new Set<ChangeFn>();
  private map = new Map<string, string>();
  /** Keys held before the rebuild under way: told as changed once it is ready (a delete it missed). */
  private dropped = new Set<string>();
  private client: Etcd3 | null = null;
  /** Listed, and the watch attached to etcd (not between a disconnect and its resume). */
  private attached = false;
  private timer: NodeJS.Timeout | null = null;
  private retryMs = RETRY_MS;
  private stopped = false;
  /** Bumped by every rebuild and by stop(): a list or a watch's event for an earlier one is dropped. */
  private epoch = 0;

  constructor(prefix: string, onChange?: ChangeFn) {
    this.prefix = prefix;
    if (onChange) this.listeners.add(onChange);
  }

  /** Hears the etcd keys of every change applied, and all of them on becoming ready. */
  subscribe(fn: ChangeFn): () => void {
    this.listeners.add(fn);
    return () => {
      this.listeners.delete(fn);
    };
  }

  /**
   * Whole as of a list and followed since. False before it, in a rebuild and while the watch is
   * cut off from etcd (the map may be behind): readers then read etcd or wait for `onChange`.
   */
  get ready(): boolean {
    return this.attached;
  }

  entries(): ReadonlyMap<string, string> {
    return this.map;
  }

  values(): string[] {
    return [...this.map.values()];
  }

  /**
   * Lists and watches on `client`, dropping a former client's watch; on the same client, nothing.
   * Settles once the list is done or failed (retried until it works or the cache is stopped).
   */
  start(client: Etcd3): Promise<void> {
    if (this.client === client || this.stopped) return Promise.resolve();
    this.client = client;
    return this.rebuild();
  }

  /** For good: a later start() does nothing (a pass or a join racing the shutdown). */
  stop(): void {
    this.stopped = true;
    this.client = null;
    this.drop();
  }

  /**
   * Drops the watch: its events are ignored from now on. It is not canceled: etcd3 ends the
   * stream of a watch canceled last on it and counts that as a failure of the host (it resets the
   * host's gRPC clients and, three in a row, opens its circuit breaker: every call of the client
   * refused for 5 s, a shutdown's resign and lease revoke too). The watch goes with its client,
   * which its owner closes (at shutdown, or when it makes a new one).
   */
  private drop(): void {
    this.epoch++;
    this.attached = false;
    clearTimeout(this.timer ?? undefined);
    this.timer = null;
  }

  private async rebuild(): Promise<void> {
    this.drop();
    const epoch = this.epoch;
    const client = this.client;
    if (!client) return;
    try {
      const res = await client.getAll().prefix(this.prefix).exec();
      if (epoch !== this.epoch) return;
      this.retryMs = RETRY_MS;
      for (const k of this.map.keys()) this.dropped.add(k);
      this.map = new Map(res.kvs.map((kv) => [kv.key.toString(), kv.value.toString()]));
      const w = prefixWatcher(client, this.prefix, (BigInt(res.header.revision) + 1n).toString());
      const current = () => epoch === this.epoch;
      w.on('put', (kv) => current() && this.changed([kv.key.toString()], () => this.map.set(kv.key.toString(), kv.value.toString())));
      w.on('delete', (kv) => current() && this.changed([kv.key.toString()], () => this.map.delete(kv.key.toString())));
      w.on('connected', () => current() && !this.attached && this.becameReady());
      w.on('disconnected', () => current() && (this.attached = false));
      // etcd3 emits a watcher's 'error' only when etcd canceled it (see
      // ./etcd-watch.ts): the client never makes it again, so the cache lists and watches anew.
      w.on('error', () => current() && this.retry(epoch));
    } catch {
      if (epoch !== this.epoch) return;
      this.retry(epoch);
      this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
    }
  }

  private retry(epoch: number): void {
    this.attached = false;
    if (this.timer || epoch !== this.epoch) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (epoch === this.epoch) void this.rebuild();
    }, this.retryMs);
    this.timer.unref();
  }

  private changed(keys: readonly string[], apply: () => unknown): void {
    apply();
    for (const fn of this.listeners) fn(keys);
  }

  /** Listed and attached: every key held and every one a rebuild dropped may have changed. */
  private becameReady(): void {
    const keys = new Set([...this.dropped, ...this.map.keys()]);
    this.dropped = new Set();
    this.changed([...keys], () => (this.attached = true));
  }
}

/** A controller's source of the etcd keys under a cache's prefix that changed (controllers/source.ts). */
export function etcdPrefix(cache: PrefixCache): Source<string> {
  return {
    subscribe: (fn) =>
      cache.subscribe((keys) => {
        for (const k of keys) fn(k);
      }),
  };
}
