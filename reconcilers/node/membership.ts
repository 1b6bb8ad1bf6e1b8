// This daemon as a node of the cluster (--cluster-store etcd://…), through the etcd3 client:
// a record under a lease the client keeps alive (`/engine/nodes/<id>`), a candidacy for the
// leadership under the same lease (./campaign.ts), and watch-fed caches (./prefix-cache.ts) of
// every node's record, every member's and the candidates: the API's nodes, and who leads (read again
// on every change among the candidates). etcd decides who leads; nothing here votes.
//
// A reconciler on the controller runner (the `cluster-membership` controller, ./controllers.ts, of
// one key: this node): `sync()` brings etcd to what this node should be (lease granted, record
// written as the node is now, candidacy standing) and is run again on every cause — start, a lost
// lease, its own record deleted, a deposed term, new labels — and after the work queue's back-off
// when etcd does not answer. Local work never waits for it: the daemon serves while the node is
// not joined.
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Etcd3, Lease } from 'etcd3';
import type { Controller, ReconcileResult, Reconciler } from '../../controllers/controller.ts';
import type { ControllerFamilies } from '../../controllers/metrics.ts';
import { KeySource } from '../../controllers/source.ts';
import { LeaderCampaign } from './campaign.ts';
import { PrefixCache } from './prefix-cache.ts';
import type { LeaderTerm } from './fence.ts';
import { ELECTION_PREFIX, MEMBERS_PREFIX, memberKey, NODES_PREFIX, nodeKey, parseRecord, type NodeRecord } from '../../lib/cluster/node-record.ts';
import type { ClusterStore } from '../../lib/cluster/store-url.ts';
import { membershipController, MEMBERSHIP_KEY } from './controllers.ts';
import { etcdClient } from './etcd-client.ts';

/** The facts of this node a record is written from (read again at every write). */
export type NodeFacts = Omit<NodeRecord, 'id' | 'state' | 'createdAt' | 'updatedAt' | 'version'>;

export type MembershipState = 'pending' | 'active' | 'error';

const DEPOSED_RETRY_MS = 500;

/** The node records a cache holds, by id. */
function records(cache: PrefixCache): Map<string, NodeRecord> {
  const out = new Map<string, NodeRecord>();
  for (const v of cache.values()) {
    const r = nodeRecord(v);
    if (r) out.set(r.id, r);
  }
  return out;
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
  /** The controller-runtime families its controller records (none by default). */
  metrics?: ControllerFamilies;
  /** Stands for the leadership (default true): a swarm worker does not. */
  candidate?: boolean;
}

/** What the self-fence hears of the lease. Times are monotonic (performance.now()). */
export interface LeaseObserver {
  granted(sentAt: number): void;
  keepaliveSent(): void;
  keepaliveAnswered(): void;
  keepaliveBroken(): void;
  lost(): void;
}

export class ClusterMembership extends EventEmitter<{ nodes: []; joined: []; leader: [boolean] }> implements Reconciler {
  readonly name = 'cluster-membership';
  readonly nodeId: string;
  private readonly opts: MembershipOptions;
  private readonly log: Logger;
  private client: Etcd3 | null = null;
  private lease: Lease | null = null;
  private leaseId = '';
  private readonly campaign: LeaderCampaign;
  /** Deposed: the candidacy is withdrawn (its key deleted) before standing again. */
  private resignPending = false;
  /** Every node's live record, every member's lasting one and the candidates: watch-fed (./prefix-cache.ts). */
  private readonly nodesCache = new PrefixCache(NODES_PREFIX, (keys) => this.nodesChanged(keys));
  private readonly membersCache = new PrefixCache(MEMBERS_PREFIX, () => this.emit('nodes'));
  private readonly candidates = new PrefixCache(ELECTION_PREFIX, () => this.client && void this.readLeader(this.client));
  /** This node's record as last written (shown while the watch has not caught up with the write). */
  private own: NodeRecord | undefined;
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
  /** Wakes the controller's one key. */
  readonly wakes = new KeySource();
  private controller: Controller | null = null;

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
    const out = records(this.nodesCache);
    const own = this.own;
    if (own && !((out.get(own.id)?.version ?? 0) >= own.version)) out.set(own.id, own);
    for (const [id, r] of records(this.membersCache)) if (!out.has(id)) out.set(id, { ...r, state: 'down' });
    return [...out.values()].sort((a, b) => a.hostname.localeCompare(b.hostname) || a.id.localeCompare(b.id));
  }
  self(): NodeRecord | undefined {
    return this.nodes().find((n) => n.id === this.nodeId && n.state !== 'down');
  }

  // ---- lifecycle ---------------------------------------------------------------------------------

  /** Connects in the background: etcd answering or not, the daemon goes on starting. */
  async start(): Promise<void> {
    this.client = await etcdClient(this.opts.store);
    this.controller = membershipController(this).build({ reconciler: this, log: this.log, metrics: this.opts.metrics });
    await this.controller.start();
  }

  /** Labels (or other facts) changed: the record is written again. */
  refresh(): void {
    this.enqueue();
  }

  /** Leaves the cluster: the campaign resigned, the lease revoked (the record goes with it). */
  async stop(): Promise<void> {
    this.stopped = true;
    // A pass waiting on an etcd that does not answer does not hold the stop (the controller's stop
    // lets it run 2 s).
    await this.controller?.stop();
    this.controller = null;
    const bounded = <T>(p: Promise<T>) => Promise.race([p.catch(() => undefined), new Promise<undefined>((r) => setTimeout(() => r(undefined), 2000).unref())]);
    if (this.client && this.campaign.standing) await bounded(this.campaign.resign(this.client));
    this.setLeading(false);
    if (this.lease) await bounded(this.lease.revoke());
    for (const c of [this.nodesCache, this.membersCache, this.candidates]) c.stop();
    this.client?.close();
    this.client = null;
  }

  // ---- the loop ----------------------------------------------------------------------------------

  private enqueue(): void {
    if (!this.stopped) this.wakes.emit(MEMBERSHIP_KEY);
  }

  /** One pass; a failure is reported here once per cause and retried with the queue's back-off. */
  async reconcile(): Promise<ReconcileResult> {
    try {
      await this.sync();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (message !== this.lastError || this.joined) this.log.warn({ err: message }, 'cluster store unreachable; the node serves locally and joins when it answers');
      this.lastError = message;
      this.joined = false;
      throw err;
    }
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
        this.own = undefined;
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
    this.own = record;
    // Listed and followed from now on (a no-op once they follow this client); a watch etcd cancels
    // is listed and made again by its cache.
    await Promise.all([this.nodesCache, this.membersCache, this.candidates].map((c) => c.start(client)));
    if (this.resignPending) {
      await this.campaign.resign(client);
      this.resignPending = false;
    }
    if (this.opts.candidate !== false) await this.campaign.stand(client, this.lease, this.leaseId);
    await this.readLeader(client);
    const first = !this.joined;
    if (first) this.log.info({ nodeId: this.nodeId, endpoints: this.opts.store.endpoints, ttl }, 'joined the cluster');
    this.joined = true;
    this.lastError = '';
    if (first) this.emit('joined');
  }

  /** A node's live record changed: this node's own gone while it runs (a lease revoked from outside) is written again. */
  private nodesChanged(keys: readonly string[]): void {
    this.emit('nodes');
    const own = nodeKey(this.nodeId);
    if (!this.own || this.stopped || !keys.includes(own) || this.nodesCache.entries().has(own)) return;
    this.opts.lease?.lost();
    this.lease = null;
    this.own = undefined;
    this.campaign.forget();
    this.enqueue();
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

  /**
   * A fenced write was refused (or the term could not be read): this node is not the leader,
   * whatever it believed. It stops acting as one, lets go of its campaign and campaigns again.
   */
  deposed(reason: string): void {
    if (this.stopped) return;
    this.log.warn({ reason, term: this.term?.revision }, 'no longer the cluster leader');
    this.setLeading(false);
    this.resignPending = true;
    // Not at once: a half-second between resigning terms keeps a confused pair from flapping.
    setTimeout(() => this.enqueue(), DEPOSED_RETRY_MS).unref();
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

  /**
   * Makes `key` under this node's lease only if nobody has it: 'created', or what the key holds
   * (someone has it); false while not joined.
   */
  async createLeased(key: string, value: string): Promise<'created' | { held: string } | false> {
    const client = this.client;
    if (!client || !this.lease || !this.joined || !this.leaseId) return false;
    const r = await client.if(key, 'Create', '==', 0).then(client.put(key).value(value).lease(this.leaseId)).else(client.get(key)).commit();
    if (r.succeeded) return 'created';
    const kv = r.responses[0]?.response_range?.kvs[0];
    return { held: kv ? kv.value.toString() : '' };
  }

  /** Writes `key` under this node's lease (it goes with the node); false while not joined. */
  async putLeased(key: string, value: string): Promise<boolean> {
    const lease = this.lease;
    if (!lease || !this.joined) return false;
    await lease.put(key).value(value);
    return true;
  }
}
