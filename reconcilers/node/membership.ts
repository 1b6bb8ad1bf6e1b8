// This daemon as a node of the cluster (--cluster-store etcd://…), through the etcd3 client:
// a record under a lease the client keeps alive (`/engine/nodes/<id>`), a candidacy for the
// leadership under the same lease (./campaign.ts), and watches of every node's record and of the
// candidates, cached for the API. etcd decides who leads; nothing here votes.
//
// Level-triggered like a reconciler: `sync()` brings etcd to what this node should be (lease
// granted, record written as the node is now, candidacy standing) and is run again on every cause
// — start, a lost lease, a deposed term, new labels, a watch etcd canceled — and after a back-off
// when etcd does not answer. Local work never waits for it: the daemon serves while the node is not joined.
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { Etcd3, Lease, Watcher } from 'etcd3';
import { ELECTION_PREFIX, LeaderCampaign } from './campaign.ts';
import { isWatchCanceled, watchPrefix } from './etcd-watch.ts';
import type { LeaderTerm } from './fence.ts';
import { MEMBERS_PREFIX, memberKey, NODES_PREFIX, nodeKey, parseRecord, type NodeRecord } from '../../lib/cluster/node-record.ts';
import type { ClusterStore } from '../../lib/cluster/store-url.ts';

/** The facts of this node a record is written from (read again at every write). */
export type NodeFacts = Omit<NodeRecord, 'id' | 'state' | 'createdAt' | 'updatedAt' | 'version'>;

export type MembershipState = 'pending' | 'active' | 'error';

const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 5000;

/** The node id kept in the data root (made once: 25 lower-case letters and digits, as swarm's). */
export function loadNodeId(file: string): string {
  try {
    const id = readFileSync(file, 'utf8').trim();
    if (/^[a-z0-9]{25}$/.test(id)) return id;
  } catch {
    // made below
  }
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const id = [...randomBytes(25)].map((b) => alphabet[b % alphabet.length]).join('');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${id}\n`, { mode: 0o600 });
  return id;
}

/**
 * How soon the client makes its watch stream again after it broke: doubling from 100 ms up to 2 s.
 * (The client's default grows to 30 s: after etcd came back, failover would wait that long, and
 * its pending timer keeps a stopped daemon's process alive as long.)
 */
function watchBackoff(ms = 100): { duration: number; next(): ReturnType<typeof watchBackoff> } {
  return { duration: ms, next: () => watchBackoff(Math.min(2000, ms * 2)) };
}

/** A node record read back from etcd (undefined for anything else). */
function nodeRecord(text: string): NodeRecord | undefined {
  const r = parseRecord<NodeRecord>(text);
  return typeof r?.id === 'string' ? r : undefined;
}

export interface MembershipOptions {
  store: ClusterStore;
  nodeId: string;
  facts: () => NodeFacts;
  log: Logger;
  /** Told when this node becomes or stops being the leader. */
  onLeadership?: (leader: boolean) => void;
  /** Told of the lease's life as etcd answers it: the self-fence's clock (./self-fence.ts). */
  lease?: LeaseObserver;
}

/** What the self-fence hears of the lease. Times are monotonic (performance.now()). */
export interface LeaseObserver {
  granted(sentAt: number): void;
  keepaliveSent(): void;
  keepaliveAnswered(): void;
  keepaliveBroken(): void;
  lost(): void;
}

export class ClusterMembership extends EventEmitter<{ nodes: []; joined: []; leader: [boolean] }> {
  readonly nodeId: string;
  private readonly opts: MembershipOptions;
  private readonly log: Logger;
  private client: Etcd3 | null = null;
  private lease: Lease | null = null;
  private leaseId = '';
  private readonly campaign: LeaderCampaign;
  /** Deposed: the candidacy is withdrawn (its key deleted) before standing again. */
  private resignPending = false;
  private watchers: Watcher[] = [];
  private readonly nodesCache = new Map<string, NodeRecord>();
  private readonly membersCache = new Map<string, NodeRecord>();
  private leader: string | undefined;
  private leading = false;
  private term: LeaderTerm | undefined;
  /** Reads of who leads, numbered: only the newest one's answer is kept. */
  private leaderReads = 0;
  private createdAt = '';
  private version = 0;
  private joined = false;
  private lastError = '';
  private stopped = false;
  private syncing: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private backoffMs = BACKOFF_MIN_MS;

  constructor(opts: MembershipOptions) {
    super();
    this.opts = opts;
    this.nodeId = opts.nodeId;
    this.log = opts.log;
    this.campaign = new LeaderCampaign(opts.nodeId);
  }

  // ---- what the API reads ------------------------------------------------------------------------

  get state(): MembershipState {
    return this.joined ? 'active' : this.lastError ? 'error' : 'pending';
  }
  get error(): string {
    return this.lastError;
  }
  get leaderId(): string | undefined {
    return this.joined ? this.leader : undefined;
  }
  get isLeader(): boolean {
    return this.leading;
  }
  /** Every node as last seen (this node's as written); one whose live record is gone is down. */
  nodes(): NodeRecord[] {
    const out = new Map(this.nodesCache);
    for (const [id, r] of this.membersCache) if (!out.has(id)) out.set(id, { ...r, state: 'down' });
    return [...out.values()].sort((a, b) => a.hostname.localeCompare(b.hostname) || a.id.localeCompare(b.id));
  }
  self(): NodeRecord | undefined {
    return this.nodesCache.get(this.nodeId);
  }

  // ---- lifecycle ---------------------------------------------------------------------------------

  /** Connects in the background: etcd answering or not, the daemon goes on starting. */
  async start(): Promise<void> {
    const { store } = this.opts;
    const tls = store.tls;
    // Loaded only with a cluster store (and outside the daemon's bundle: it reads its .proto files at run time).
    const { Etcd3 } = await import('etcd3');
    this.client = new Etcd3({
      hosts: store.endpoints,
      dialTimeout: 2000,
      faultHandling: { watchBackoff: watchBackoff() },
      // gRPC's own reconnect back-off grows to 120 s: after a partition or an etcd restart the
      // node would stay away (and its watches stale) that long. Bounded like the watch's.
      grpcOptions: { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 2000 },
      ...(tls
        ? {
            credentials: {
              rootCertificate: tls.caFile ? readFileSync(tls.caFile) : Buffer.alloc(0),
              ...(tls.certFile ? { certChain: readFileSync(tls.certFile) } : {}),
              ...(tls.keyFile ? { privateKey: readFileSync(tls.keyFile) } : {}),
            },
          }
        : {}),
    });
    this.enqueue();
  }

  /** Labels (or other facts) changed: the record is written again. */
  refresh(): void {
    this.enqueue();
  }

  /** Leaves the cluster: the campaign resigned, the lease revoked (the record goes with it). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const bounded = <T>(p: Promise<T>) => Promise.race([p.catch(() => undefined), new Promise<undefined>((r) => setTimeout(() => r(undefined), 2000).unref())]);
    // A pass waiting on an etcd that does not answer does not hold the stop.
    if (this.syncing) await bounded(this.syncing);
    if (this.client && this.campaign.standing) await bounded(this.campaign.resign(this.client));
    this.setLeading(false);
    if (this.lease) await bounded(this.lease.revoke());
    for (const w of this.watchers) await bounded(w.cancel());
    this.client?.close();
    this.client = null;
  }

  // ---- the loop ----------------------------------------------------------------------------------

  private enqueue(afterMs = 0): void {
    if (this.stopped) return;
    if (afterMs > 0) {
      if (this.timer) return;
      this.timer = setTimeout(() => {
        this.timer = null;
        this.enqueue();
      }, afterMs);
      this.timer.unref();
      return;
    }
    if (this.syncing) {
      this.again = true;
      return;
    }
    this.syncing = this.sync()
      .then(() => {
        this.backoffMs = BACKOFF_MIN_MS;
      })
      .catch((err: unknown) => {
        const message = err instanceof Error ? err.message : String(err);
        if (message !== this.lastError || this.joined) this.log.warn({ err: message, retryMs: this.backoffMs }, 'cluster store unreachable; the node serves locally and joins when it answers');
        this.lastError = message;
        this.joined = false;
        const wait = this.backoffMs;
        this.backoffMs = Math.min(BACKOFF_MAX_MS, this.backoffMs * 2);
        this.enqueue(wait);
      })
      .finally(() => {
        this.syncing = null;
        if (this.again && !this.stopped) {
          this.again = false;
          this.enqueue();
        }
      });
  }

  private async sync(): Promise<void> {
    const client = this.client;
    if (!client || this.stopped) return;
    const ttl = this.opts.store.ttlSeconds;
    if (!this.lease) {
      const observer = this.opts.lease;
      const sentAt = performance.now();
      const lease = client.lease(ttl, { autoKeepAlive: true });
      lease.on('lost', (err) => {
        if (this.lease !== lease || this.stopped) return;
        this.log.warn({ err: err.message }, 'cluster lease lost; joining again');
        observer?.lost();
        this.lease = null;
        this.campaign.forget();
        this.setLeading(false);
        this.joined = false;
        this.enqueue();
      });
      if (observer) {
        lease.on('keepaliveFired', () => this.lease === lease && observer.keepaliveSent());
        lease.on('keepaliveSucceeded', () => this.lease === lease && observer.keepaliveAnswered());
        lease.on('keepaliveFailed', () => this.lease === lease && observer.keepaliveBroken());
      }
      this.leaseId = await lease.grant();
      this.lease = lease;
      observer?.granted(sentAt);
    }
    const prev = this.createdAt ? undefined : await client.get(nodeKey(this.nodeId)).string();
    if (prev) {
      try {
        const old = JSON.parse(prev) as NodeRecord;
        this.createdAt = old.createdAt;
        this.version = old.version;
      } catch {
        // a record we cannot read is written over
      }
    }
    const now = new Date().toISOString();
    this.createdAt ||= now;
    const record: NodeRecord = { ...this.opts.facts(), id: this.nodeId, state: 'ready', createdAt: this.createdAt, updatedAt: now, version: ++this.version };
    await this.lease.put(nodeKey(this.nodeId)).value(JSON.stringify(record));
    await client.put(memberKey(this.nodeId)).value(JSON.stringify(record));
    this.nodesCache.set(this.nodeId, record);
    await this.watchNodes(client);
    if (this.resignPending) {
      await this.campaign.resign(client);
      this.resignPending = false;
    }
    await this.campaign.stand(client, this.lease, this.leaseId);
    await this.readLeader(client);
    const first = !this.joined;
    if (first) this.log.info({ nodeId: this.nodeId, endpoints: this.opts.store.endpoints, ttl }, 'joined the cluster');
    this.joined = true;
    this.lastError = '';
    if (first) this.emit('joined');
  }

  /**
   * Every node's record and every member's: listed, then followed. The client re-watches across
   * reconnects by itself; a watch etcd cancels (it resumed from a revision compacted meanwhile) is
   * dropped, and the next sync lists and watches again, the caches rebuilt from the list.
   */
  private async watchNodes(client: Etcd3): Promise<void> {
    if (this.watchers.length) return;
    try {
      await this.watchAll(client);
    } catch (err) {
      // Half a set is no set: the next sync (after the back-off) makes them all again.
      this.dropWatches();
      throw err;
    }
  }

  private async watchAll(client: Etcd3): Promise<void> {
    for (const [prefix, cache] of [[NODES_PREFIX, this.nodesCache], [MEMBERS_PREFIX, this.membersCache]] as const) {
      const watcher = await watchPrefix(client, prefix);
      watcher.on('put', (kv) => {
        const r = nodeRecord(kv.value.toString());
        if (r) cache.set(r.id, r);
        this.emit('nodes');
      });
      watcher.on('delete', (kv) => {
        const id = kv.key.toString().slice(prefix.length);
        cache.delete(id);
        this.emit('nodes');
        // Our own live record gone while we run (a lease revoked from outside): write it again.
        if (prefix === NODES_PREFIX && id === this.nodeId && !this.stopped) {
          this.opts.lease?.lost();
          this.lease = null;
          this.campaign.forget();
          this.enqueue();
        }
      });
      this.onWatchError(watcher, prefix);
      this.watchers.push(watcher);
      const listed = new Map<string, NodeRecord>();
      for (const v of Object.values(await client.getAll().prefix(prefix).strings())) {
        const r = nodeRecord(v);
        if (r) listed.set(r.id, r);
      }
      // This node's own record as written, also when the list raced its write.
      const own = prefix === NODES_PREFIX ? cache.get(this.nodeId) : undefined;
      cache.clear();
      for (const [id, r] of listed) cache.set(id, r);
      if (own && !cache.has(this.nodeId)) cache.set(this.nodeId, own);
      this.emit('nodes');
    }
    // Who leads: the oldest candidate (./campaign.ts), read again on every change there.
    const watcher = await watchPrefix(client, ELECTION_PREFIX);
    watcher.on('put', () => void this.readLeader(client));
    watcher.on('delete', () => void this.readLeader(client));
    this.onWatchError(watcher, ELECTION_PREFIX);
    this.watchers.push(watcher);
    await this.readLeader(client);
  }

  /** A watch etcd canceled: every watch is made again (and the caches listed again). */
  private onWatchError(watcher: Watcher, prefix: string): void {
    watcher.on('error', (err) => {
      if (!isWatchCanceled(err)) return this.log.debug({ err: err.message }, 'cluster watch error (it reconnects)');
      if (!this.watchers.includes(watcher) || this.stopped) return;
      this.log.warn({ err: err.message, prefix }, 'cluster watch canceled by etcd; listing and watching again');
      this.rewatch();
    });
  }

  /** Who leads, as etcd says now: this node starts or stops leading on it. */
  private async readLeader(client: Etcd3): Promise<void> {
    const read = ++this.leaderReads;
    const standing = await this.campaign.read(client).catch(() => undefined);
    if (!standing || read !== this.leaderReads || this.stopped) return;
    this.leader = standing.leader;
    const { term } = standing;
    if (term && !this.resignPending && term.revision !== this.term?.revision) {
      // Leading starts with a term: the candidate key and its create revision fence every write.
      this.setLeading(false);
      this.term = term;
      this.log.info({ nodeId: this.nodeId, term: term.revision }, 'elected cluster leader');
      this.setLeading(true);
    } else if ((!term || this.resignPending) && this.leading) {
      this.setLeading(false);
    }
  }

  /** Drops every watch (one was canceled) and lists and watches again on the next sync. */
  private rewatch(): void {
    this.dropWatches();
    this.enqueue();
  }

  /**
   * Lets go of every watch: each is canceled, one a second. With a stream per watch, the etcd3
   * client ends the stream of a canceled watch and counts that as a failure of the host; three in a
   * row open its circuit breaker (every call refused for 5 s). Spaced, the calls between them (the
   * sync that makes the watches again) close the count.
   */
  private dropWatches(): void {
    const old = this.watchers;
    this.watchers = [];
    // Ours only (the watcher listens to its own 'data' and 'connected').
    for (const w of old) w.removeAllListeners('put').removeAllListeners('delete').removeAllListeners('error').on('error', () => {});
    void (async () => {
      for (const w of old) {
        await w.cancel().catch(() => {});
        await new Promise((r) => setTimeout(r, 1000).unref());
      }
    })();
  }

  /**
   * A fenced write was refused (or the term could not be read): this node is not the leader,
   * whatever it believed. It stops acting as one, lets go of its campaign and campaigns again.
   */
  deposed(reason: string): void {
    if (this.stopped) return;
    this.log.warn({ reason, term: this.term?.revision }, 'no longer the cluster leader');
    this.setLeading(false);
    this.resignPending = true;
    this.enqueue(this.backoffMs);
  }

  /** The term this node leads in; undefined while it does not lead. */
  get leaderTerm(): LeaderTerm | undefined {
    return this.leading ? this.term : undefined;
  }

  private setLeading(leader: boolean): void {
    if (this.leading === leader) return;
    this.leading = leader;
    if (!leader) this.term = undefined;
    this.opts.onLeadership?.(leader);
    this.emit('leader', leader);
  }

  /** The etcd client once started (null before start and after stop). */
  get etcd(): Etcd3 | null {
    return this.client;
  }

  /** Writes `key` under this node's lease (it goes with the node); false while not joined. */
  async putLeased(key: string, value: string): Promise<boolean> {
    const lease = this.lease;
    if (!lease || !this.joined) return false;
    await lease.put(key).value(value);
    return true;
  }
}
