// This daemon as a node of the cluster (--cluster-store etcd://…), through the etcd3 client:
// a record under a lease the client keeps alive (`/engine/nodes/<id>`), a campaign in the
// leader election, and a watch of every node's record and of the leader, cached for the API.
// etcd decides who leads; nothing here votes.
//
// Level-triggered like a reconciler: `sync()` brings etcd to what this node should be (lease
// granted, record written as the node is now, campaign running) and is run again on every cause —
// start, a lost lease, a failed campaign, new labels — and after a back-off when etcd does not
// answer. Local work never waits for it: the daemon serves while the node is not joined.
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { Election, type Campaign, type Etcd3, type Lease, type Watcher } from 'etcd3';
import { isWatchCanceled, watchPrefix } from './etcd-watch.ts';
import { type LeaderTerm, termOf } from './fence.ts';
import { LEADER_ELECTION, MEMBERS_PREFIX, memberKey, NODES_PREFIX, nodeKey, parseRecord, type NodeRecord } from '../../lib/cluster/node-record.ts';
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
  private election: Election | null = null;
  private campaign: Campaign | null = null;
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
    if (this.campaign) await bounded(this.campaign.resign());
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
        this.joined = false;
        this.enqueue();
      });
      if (observer) {
        lease.on('keepaliveFired', () => this.lease === lease && observer.keepaliveSent());
        lease.on('keepaliveSucceeded', () => this.lease === lease && observer.keepaliveAnswered());
        lease.on('keepaliveFailed', () => this.lease === lease && observer.keepaliveBroken());
      }
      await lease.grant();
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
    this.campaignOnce(client);
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
    // Who leads: the oldest key of the election (etcd's rule), read again on every change there.
    const election = `${Election.prefix}/${LEADER_ELECTION}/`;
    const watcher = await watchPrefix(client, election);
    watcher.on('put', () => void this.readLeader(client, election));
    watcher.on('delete', () => void this.readLeader(client, election));
    this.onWatchError(watcher, election);
    this.watchers.push(watcher);
    await this.readLeader(client, election);
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

  private async readLeader(client: Etcd3, election: string): Promise<void> {
    const read = ++this.leaderReads;
    const res = await client.getAll().prefix(election).sort('Create', 'Ascend').limit(1).exec().catch(() => undefined);
    if (!res || read !== this.leaderReads || this.stopped) return;
    const leader = res.kvs[0]?.value.toString();
    this.leader = leader;
    if (leader !== this.nodeId && this.leading) this.setLeading(false);
  }

  /** Drops every watch (one was canceled) and lists and watches again on the next sync. */
  private rewatch(): void {
    this.dropWatches();
    this.enqueue();
  }

  private dropWatches(): void {
    const old = this.watchers;
    this.watchers = [];
    for (const w of old) void w.cancel().catch(() => {});
  }

  /** The campaign for leadership, once; a failed one (its lease lost with etcd) starts again. */
  private campaignOnce(client: Etcd3): void {
    if (this.campaign) return;
    this.election ??= client.election(LEADER_ELECTION, this.opts.store.ttlSeconds);
    const campaign = this.election.campaign(this.nodeId);
    this.campaign = campaign;
    campaign.on('elected', () => {
      if (this.campaign !== campaign) return;
      // Leading starts with a term: the election key and its create revision fence every write.
      void campaign
        .getCampaignKey()
        .then((key) => termOf(client, key, this.nodeId))
        .then((term) => {
          if (this.campaign !== campaign || this.stopped) return;
          if (!term) throw new Error('the election key is gone');
          this.term = term;
          this.log.info({ nodeId: this.nodeId, term: term.revision }, 'elected cluster leader');
          this.setLeading(true);
          this.leader = this.nodeId;
        })
        .catch((err: unknown) => this.deposed(`reading the leader term failed: ${err instanceof Error ? err.message : String(err)}`));
    });
    campaign.on('error', (err: Error) => {
      if (this.campaign !== campaign || this.stopped) return;
      this.log.warn({ err: err.message }, 'leader campaign failed; campaigning again');
      this.campaign = null;
      // Its lease would keep renewing (and its timers keep the process alive) until etcd says it
      // expired: it is let go now.
      void campaign.resign().catch(() => {});
      this.setLeading(false);
      this.enqueue(this.backoffMs);
    });
  }

  /**
   * A fenced write was refused (or the term could not be read): this node is not the leader,
   * whatever it believed. It stops acting as one, lets go of its campaign and campaigns again.
   */
  deposed(reason: string): void {
    if (this.stopped) return;
    this.log.warn({ reason, term: this.term?.revision }, 'no longer the cluster leader');
    this.setLeading(false);
    const campaign = this.campaign;
    this.campaign = null;
    if (campaign) void campaign.resign().catch(() => {});
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
