// The node's swarm (the reference's swarm mode) on etcd: `swarm init` makes the cluster's CA and
// this node's certificate, starts the managed etcd member (drivers/swarm/etcd-member.ts) and joins
// the cluster membership of (3 of 21) on it (cmd/components/cluster.ts's ClusterHolder: one
// cluster implementation), then writes the cluster object; `swarm leave` undoes all of it. The
// node's part is kept under <data-root>/swarm (./state.ts): at daemon start a manager's member and
// membership start again in the background (the node answers `pending` meanwhile, `error` with the
// reason if they cannot). The cluster object lives at /engine/swarm/cluster; its version is that
// key's etcd mod revision, so an update names the revision it read and etcd refuses a stale one.
import { randomBytes } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { Logger } from 'pino';
import type { Etcd3 } from 'etcd3';
import ipaddr from 'ipaddr.js';
import { issueNodeCert, makeRootCa, type KeyPair } from '../../drivers/swarm/ca.ts';
import { EtcdMember, SWARM_ETCD_CLIENT_PORT, SWARM_ETCD_PEER_PORT } from '../../drivers/swarm/etcd-member.ts';
import { EngineError, internal, invalidArgument, unavailable } from '../../lib/errors.ts';
import { normaliseAddr, resolveAdvertiseAddr, resolveDataPathAddr, resolveListenAddr, SwarmAddressError, type Interfaces } from '../../lib/swarm/addresses.ts';
import { initSpec, replacedSpec, type ClusterRecord, type SwarmSpec } from '../../lib/swarm/cluster-object.ts';
import { makeJoinToken } from '../../lib/swarm/join-token.ts';
import type { ClusterStore } from '../../lib/cluster/store-url.ts';
import { DEFAULT_DISCOVERY_TTL } from '../../lib/cluster/store-url.ts';
import type { SwarmInitRequest, SwarmPort, SwarmUpdate } from '../../api/swarm/port.ts';
import type { LocalNodeState } from '../../api/nodes/views.ts';
import type { ClusterHolder } from '../components/cluster.ts';
import type { NodeAvailability, NodeSpec } from '../../lib/swarm/node-spec.ts';
import { NodeSpecs } from './node-specs.ts';
import { SwarmFiles, type SwarmState } from './state.ts';

export const CLUSTER_KEY = '/engine/swarm/cluster';
export const CA_KEY = '/engine/swarm/ca';

export const ALREADY_IN_SWARM = 'This node is already part of a swarm. Use "docker swarm leave" to leave this swarm and join another one.';
export const NOT_IN_SWARM = 'This node is not part of a swarm';
const LAST_MANAGER =
  'You are attempting to leave the swarm on a node that is participating as a manager. Removing the last manager erases all current state of the swarm. Use `--force` to ignore this message. ';
const OUT_OF_SEQUENCE = 'rpc error: code = Unknown desc = update out of sequence';
const NO_AUTOLOCK = 'autolock is not supported yet: manager autolock comes with joining nodes';
const DEFAULT_POOL = ['10.0.0.0/8'];
const DEFAULT_SUBNET_SIZE = 24;
const DEFAULT_DATA_PATH_PORT = 4789;
const RETRY_MS = 5000;

/** A swarm id (node or cluster): 25 characters of [a-z0-9], as swarmkit's identity.NewID. */
export function newSwarmId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(25)].map((b) => alphabet[b % alphabet.length]).join('');
}

/** The cluster object as stored: ClusterRecord without its version (the key's mod revision). */
type StoredCluster = Omit<ClusterRecord, 'version'>;

export interface SwarmNodeDeps {
  dataRoot: string;
  execRoot: string;
  /** --cluster-default-advertise-addr. */
  defaultAdvertiseAddr: string;
  holder: ClusterHolder;
  log: Logger;
  /** Interfaces and their addresses (tests pass a table). */
  interfaces?: () => Interfaces;
  etcdBinary?: string;
}

export class SwarmNode implements SwarmPort {
  private readonly d: SwarmNodeDeps;
  private readonly files: SwarmFiles;
  private state: SwarmState | undefined;
  private member: EtcdMember | undefined;
  private record: ClusterRecord | undefined;
  /** Bringing the node back at daemon start (member, membership) or after a failure. */
  private resuming = false;
  private resumeError = '';
  private resumeTimer: NodeJS.Timeout | undefined;
  /** One init, leave or update at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly specs: NodeSpecs;

  constructor(d: SwarmNodeDeps) {
    this.d = d;
    this.files = new SwarmFiles(d.dataRoot);
    this.specs = new NodeSpecs(() => this.etcd());
  }

  get inSwarm(): boolean {
    return !!this.state;
  }

  local(): { state: LocalNodeState; error: string; manager: boolean } {
    if (!this.state) return { state: 'inactive', error: '', manager: false };
    const manager = this.state.role === 'manager';
    if (this.resumeError) return { state: 'error', error: this.resumeError, manager };
    const m = this.d.holder.current?.membership;
    if (this.resuming || !m) return { state: 'pending', error: '', manager };
    return { state: m.state, error: m.error, manager };
  }

  cached(): ClusterRecord | undefined {
    return this.record;
  }

  /** At daemon start: a node that was in a swarm is brought back (in the background). */
  async resume(): Promise<void> {
    const { state, error } = await this.files.read();
    if (error) this.d.log.warn({ error }, 'the swarm state cannot be read: the node is in no swarm');
    if (!state) return;
    this.state = state;
    this.resuming = true;
    void this.bringBack();
  }

  /** Stops the member and the membership (the node stays in its swarm: the next start resumes it). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.resumeTimer);
    await this.serial(async () => {
      await this.d.holder.stop();
      await this.member?.stop();
    });
  }

  init(req: SwarmInitRequest): Promise<string> {
    return this.serial(async () => {
      if (this.state || this.d.holder.current) {
        if (req.ForceNewCluster && this.state?.role === 'manager' && this.member) return await this.forceNewCluster();
        throw unavailable(ALREADY_IN_SWARM);
      }
      const spec = initSpec(req.Spec ?? undefined);
      if (req.AutoLockManagers || spec.EncryptionConfig.AutoLockManagers) throw invalidArgument(NO_AUTOLOCK);
      const pool = checkPool(req.DefaultAddrPool, req.SubnetSize);
      const dataPathPort = checkDataPathPort(req.DataPathPort);
      const addrs = this.addresses(req);
      const nodeId = newSwarmId();
      const clusterId = newSwarmId();
      const state: SwarmState = {
        nodeId,
        clusterId,
        role: 'manager',
        ...addrs,
        member: { clientPort: SWARM_ETCD_CLIENT_PORT, peerPort: SWARM_ETCD_PEER_PORT },
      };
      // What a failed init or a crash in one left is not this swarm's.
      await this.files.removeAll();
      try {
        const ca = await makeRootCa();
        const cert = await issueNodeCert(ca, { nodeId, clusterId, role: 'swarm-manager', hosts: certHosts(state) });
        await this.files.writeCerts(ca.certPem, cert);
        await this.startManager(state, false);
        const now = new Date().toISOString();
        const stored: StoredCluster = {
          id: clusterId,
          createdAt: now,
          updatedAt: now,
          spec,
          rootCaPem: ca.certPem,
          tokens: { worker: makeJoinToken(ca.certPem), manager: makeJoinToken(ca.certPem) },
          defaultAddrPool: pool.pool,
          subnetSize: pool.subnetSize,
          dataPathPort,
        };
        const etcd = this.etcd();
        await etcd.put(CA_KEY).value(JSON.stringify(ca satisfies KeyPair));
        await etcd.put(CLUSTER_KEY).value(JSON.stringify(stored));
        await this.specs.put(nodeId, { Labels: {}, Role: 'manager', Availability: (req.Availability || 'active') as NodeAvailability });
        await this.files.write(state);
        this.state = state;
        await this.readRecord();
        await this.joined();
        this.d.log.info({ nodeId, clusterId, advertise: `${state.advertiseHost}:${state.advertisePort}` }, 'swarm initialised');
        return nodeId;
      } catch (err) {
        await this.d.holder.stop().catch(() => {});
        await this.member?.remove().catch(() => {});
        this.member = undefined;
        await this.files.removeAll().catch(() => {});
        this.state = undefined;
        this.record = undefined;
        if (err instanceof EngineError && (err.code === 'InvalidArgument' || err.code === 'Unavailable')) throw err;
        throw internal(`could not initialise the swarm: ${err instanceof Error ? err.message : String(err)}`, err);
      }
    });
  }

  leave(force: boolean): Promise<void> {
    return this.serial(async () => {
      if (!this.state) throw unavailable(NOT_IN_SWARM);
      // This node is its swarm's only manager until nodes join ((5 of 21)).
      if (this.state.role === 'manager' && !force) throw unavailable(LAST_MANAGER);
      clearTimeout(this.resumeTimer);
      this.resuming = false;
      this.resumeError = '';
      await this.d.holder.stop();
      await this.member?.remove();
      this.member = undefined;
      await this.files.removeAll();
      this.d.log.info({ nodeId: this.state.nodeId }, 'left the swarm');
      this.state = undefined;
      this.record = undefined;
    });
  }

  async inspect(): Promise<ClusterRecord> {
    this.manager();
    return await this.readRecord();
  }

  update(u: SwarmUpdate): Promise<void> {
    return this.serial(async () => {
      this.manager();
      const spec: SwarmSpec = replacedSpec(u.spec ?? {});
      if (spec.EncryptionConfig.AutoLockManagers) throw invalidArgument(NO_AUTOLOCK);
      const cur = await this.readRecord();
      if (BigInt(cur.version) !== u.version) throw internal(OUT_OF_SEQUENCE);
      const { version: _v, ...rest } = cur;
      const next: StoredCluster = {
        ...rest,
        spec,
        updatedAt: new Date().toISOString(),
        tokens: {
          worker: u.rotateWorkerToken ? makeJoinToken(cur.rootCaPem) : cur.tokens.worker,
          manager: u.rotateManagerToken ? makeJoinToken(cur.rootCaPem) : cur.tokens.manager,
        },
      };
      const etcd = this.etcd();
      const r = await etcd.if(CLUSTER_KEY, 'Mod', '==', String(u.version)).then(etcd.put(CLUSTER_KEY).value(JSON.stringify(next))).commit();
      if (!r.succeeded) throw internal(OUT_OF_SEQUENCE);
      await this.readRecord();
    });
  }

  async nodeSpecs(): Promise<Map<string, { spec: NodeSpec; version: number }>> {
    this.manager();
    return await this.specs.list();
  }

  updateNode(id: string, version: bigint, spec: NodeSpec): Promise<void> {
    return this.serial(async () => {
      this.manager();
      await this.specs.update(id, version, spec);
    });
  }

  removeNode(id: string, o: { force: boolean; down: boolean }): Promise<void> {
    return this.serial(async () => {
      this.manager();
      await this.specs.remove(id, o);
    });
  }

  // ---- parts -------------------------------------------------------------------------------------

  /** Only an active manager answers for the cluster (the reference's 503 otherwise). */
  private manager(): void {
    const l = this.local();
    if (!this.state) throw unavailable('This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.');
    if (!l.manager) throw unavailable('This node is not a swarm manager. Worker nodes can\'t be used to view or modify cluster state. Please run this command on a manager node or promote the current node to a manager.');
    if (l.state === 'error' && this.resumeError) throw unavailable(`The swarm is not reachable from this node: ${l.error}`);
  }

  private etcd(): Etcd3 {
    const e = this.d.holder.current?.membership.etcd;
    if (!e) throw unavailable('The swarm is not reachable from this node');
    return e;
  }

  private async readRecord(): Promise<ClusterRecord> {
    let kv;
    try {
      kv = (await this.etcd().get(CLUSTER_KEY).exec()).kvs[0];
    } catch (err) {
      throw unavailable(`The swarm does not answer: ${err instanceof Error ? err.message : String(err)}`, err);
    }
    if (!kv) throw unavailable('The swarm has no cluster object');
    const stored = JSON.parse(kv.value.toString()) as StoredCluster;
    this.record = { ...stored, version: Number(kv.mod_revision) };
    return this.record;
  }

  private addresses(req: SwarmInitRequest): Pick<SwarmState, 'listenAddr' | 'advertiseHost' | 'advertisePort' | 'dataPathAddr'> {
    const ifaces = this.d.interfaces?.() ?? (networkInterfaces() as Interfaces);
    try {
      const listenAddr = normaliseAddr(req.ListenAddr || '0.0.0.0:2377');
      const listen = resolveListenAddr(listenAddr, ifaces);
      const adv = resolveAdvertiseAddr({ advertiseAddr: req.AdvertiseAddr ?? '', listenPort: listen.port, defaultAdvertiseAddr: this.d.defaultAdvertiseAddr, ifaces });
      return { listenAddr, advertiseHost: adv.host, advertisePort: adv.port, dataPathAddr: resolveDataPathAddr(req.DataPathAddr ?? '', ifaces) };
    } catch (err) {
      if (err instanceof SwarmAddressError) throw invalidArgument(err.message);
      throw err;
    }
  }

  /** Starts the member and joins the membership on it. */
  private async startManager(state: SwarmState, forceNewCluster: boolean): Promise<void> {
    const certs = await this.files.readCerts();
    const member = new EtcdMember({
      name: state.nodeId,
      dir: this.files.dir,
      runDir: this.d.execRoot,
      advertiseHost: state.advertiseHost,
      clientPort: state.member?.clientPort,
      peerPort: state.member?.peerPort,
      tls: certs,
      clusterToken: state.clusterId,
      forceNewCluster,
      log: this.d.log.child({ component: 'swarm-etcd' }),
      binary: this.d.etcdBinary,
    });
    this.member = member;
    await member.start();
    const spec: ClusterStore = {
      endpoints: [member.clientUrl],
      tls: { caFile: this.files.cert('swarm-root-ca.crt'), certFile: this.files.cert('swarm-node.crt'), keyFile: this.files.cert('swarm-node.key') },
      ttlSeconds: DEFAULT_DISCOVERY_TTL,
      fenceMarginSeconds: 2,
    };
    await this.d.holder.start(spec, { nodeId: state.nodeId, addr: state.advertiseHost });
  }

  /** Waits (a while) for the membership to have joined: init answers once /info says active, as the reference's. */
  private async joined(timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.d.holder.current?.membership.state !== 'active' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }

  /** `swarm init --force-new-cluster` on a manager: its member restarted as a cluster of one from its data. */
  private async forceNewCluster(): Promise<string> {
    const state = this.state!;
    await this.d.holder.stop();
    await this.member?.stop();
    await this.startManager(state, true);
    await this.readRecord();
    await this.joined();
    return state.nodeId;
  }

  /** The member and the membership of a manager that was in a swarm, tried again until they start. */
  private async bringBack(): Promise<void> {
    const state = this.state;
    if (!state || this.closed) return;
    try {
      await this.serial(async () => {
        if (this.state !== state || this.closed) return;
        if (state.role === 'manager') await this.startManager(state, false);
        await this.readRecord().catch(() => undefined);
      });
      this.resumeError = '';
      this.resuming = false;
    } catch (err) {
      this.resumeError = err instanceof Error ? err.message : String(err);
      this.d.log.warn({ err: this.resumeError }, 'the swarm could not be started again; retrying');
      await this.d.holder.stop().catch(() => {});
      await this.member?.stop().catch(() => {});
      if (!this.closed) this.resumeTimer = setTimeout(() => void this.bringBack(), RETRY_MS);
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }
}

/** The names a node certificate carries: the advertise and listen hosts (not unspecified ones). */
function certHosts(s: SwarmState): string[] {
  const listenHost = s.listenAddr.replace(/:\d*$/, '').replace(/^\[|\]$/g, '');
  const hosts = new Set([s.advertiseHost]);
  if (ipaddr.isValid(listenHost) && ipaddr.parse(listenHost).range() !== 'unspecified') hosts.add(ipaddr.parse(listenHost).toString());
  return [...hosts];
}

/** DefaultAddrPool and SubnetSize: CIDRs, and a subnet size that fits in each. */
function checkPool(pool: string[] | null | undefined, size: number | undefined): { pool: string[]; subnetSize: number } {
  const p = pool?.length ? pool : DEFAULT_POOL;
  const subnetSize = size || DEFAULT_SUBNET_SIZE;
  for (const c of p) {
    let bits: number;
    try {
      bits = ipaddr.parseCIDR(c)[1];
    } catch {
      throw invalidArgument(`invalid default address pool ${JSON.stringify(c)}: invalid CIDR address: ${c}`);
    }
    if (subnetSize < bits || subnetSize > 32) throw invalidArgument(`invalid subnet size ${subnetSize} for the default address pool ${c}`);
  }
  return { pool: [...p], subnetSize };
}

/** DataPathPort: 0 for the default (4789), else within 1024–49151, as the reference. */
function checkDataPathPort(port: number | undefined): number {
  if (!port) return DEFAULT_DATA_PATH_PORT;
  if (!Number.isInteger(port) || port < 1024 || port > 49151) throw invalidArgument(`data path port ${port} is out of range: valid ports are 1024 to 49151`);
  return port;
}
