// The node's swarm (the reference's swarm mode) on etcd: `swarm init` makes the cluster's CA and
// this node's certificate, starts the managed etcd member (drivers/swarm/etcd-member.ts; none with
// --cluster-store, whose etcd holds the swarm) and joins the cluster membership of (3 of 21) on it
// (cmd/components/cluster.ts's ClusterHolder: one cluster implementation), then writes the cluster
// object (./objects.ts); `swarm join` enters the swarm in --cluster-store's etcd with a join token;
// `swarm leave` undoes either. The node's part is kept under <data-root>/swarm (./state.ts): at
// daemon start its member and membership start again in the background (the node answers
// `pending` meanwhile, `error` with the reason while they cannot).
import { networkInterfaces } from 'node:os';
import type { Logger } from 'pino';
import type { Etcd3 } from 'etcd3';
import { issueNodeCert, makeRootCa } from '../../drivers/swarm/ca.ts';
import { EtcdMember, SWARM_ETCD_CLIENT_PORT, SWARM_ETCD_PEER_PORT } from '../../drivers/swarm/etcd-member.ts';
import { conflict, EngineError, internal, invalidArgument, notImplemented, unavailable } from '../../lib/errors.ts';
import { resolveListenAddr as listenEndpoint, type Interfaces } from '../../lib/swarm/addresses.ts';
import { SwarmListener } from '../../drivers/swarm/listener.ts';
import { initSpec, replacedSpec, type ClusterRecord, type SwarmSpec } from '../../lib/swarm/cluster-object.ts';
import { caDigest, makeJoinToken, parseJoinToken } from '../../lib/swarm/join-token.ts';
import { etcdClient } from '../../reconcilers/node/etcd-client.ts';
import type { ClusterStore } from '../../lib/cluster/store-url.ts';
import { DEFAULT_DISCOVERY_TTL } from '../../lib/cluster/store-url.ts';
import type { SwarmInitRequest, SwarmJoinRequest, SwarmPort, SwarmUpdate } from '../../api/swarm/port.ts';
import type { LocalNodeState } from '../../api/nodes/views.ts';
import type { ClusterHolder } from '../components/cluster.ts';
import type { NodeAvailability, NodeSpec } from '../../lib/swarm/node-spec.ts';
import { bounded, storedSwarm, SWARM_IN_STORE, SwarmObjects, type StoredCluster } from './objects.ts';
import { certHosts, checkDataPathPort, checkPool, newSwarmId, nodeAddresses, type NodeAddresses } from './requests.ts';
import { SwarmFiles, type SwarmState } from './state.ts';

export const ALREADY_IN_SWARM = 'This node is already part of a swarm. Use "docker swarm leave" to leave this swarm and join another one.';
export const NOT_IN_SWARM = 'This node is not part of a swarm';
const LAST_MANAGER =
  'You are attempting to leave the swarm on a node that is participating as a manager. Removing the last manager erases all current state of the swarm. Use `--force` to ignore this message. ';
const OTHER_MANAGERS = 'You are attempting to leave the swarm on a node that is participating as a manager. Use `--force` to suppress this message.';
const NO_AUTOLOCK = 'autolock is not supported yet: manager autolock comes with joining nodes';
const INVALID_TOKEN = 'rpc error: code = InvalidArgument desc = A valid join token is necessary to join this cluster';
const JOIN_OVER_NETWORK = 'joining a swarm through a manager\'s address is not supported yet: a node started with --cluster-store joins the swarm in that etcd';
const NO_SWARM_IN_STORE = 'the cluster store holds no swarm: run "docker swarm init" on a node first';
const RETRY_MS = 5000;

export interface SwarmNodeDeps {
  dataRoot: string;
  execRoot: string;
  /** --cluster-default-advertise-addr. */
  defaultAdvertiseAddr: string;
  holder: ClusterHolder;
  /** --cluster-store's etcd: the swarm lives there (no managed member). */
  clusterStore?: ClusterStore;
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
  private listener: SwarmListener | undefined;
  private readonly objects: SwarmObjects;
  /** Bringing the node back at daemon start (member, membership) or after a failure. */
  private resuming = false;
  private resumeError = '';
  private resumeTimer: NodeJS.Timeout | undefined;
  /** One init, leave or update at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(d: SwarmNodeDeps) {
    this.d = d;
    this.files = new SwarmFiles(d.dataRoot);
    this.objects = new SwarmObjects(() => this.etcd());
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
    return this.objects.cached();
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

  /** Stops the membership, the listener and the member (the node stays in its swarm: the next start resumes it). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.resumeTimer);
    await this.serial(() => this.stopNode(false));
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
      const external = !!this.d.clusterStore;
      if (external) await this.withStore(async (etcd) => {
        if (await storedSwarm(etcd)) throw conflict(SWARM_IN_STORE);
      });
      const state: SwarmState = {
        nodeId: newSwarmId(),
        clusterId: newSwarmId(),
        role: 'manager',
        ...addrs,
        store: external ? 'external' : 'managed',
        ...(external ? {} : { member: { clientPort: SWARM_ETCD_CLIENT_PORT, peerPort: SWARM_ETCD_PEER_PORT } }),
      };
      return await this.enter(state, async () => {
        const ca = await makeRootCa();
        await this.files.writeCerts(ca.certPem, await issueNodeCert(ca, { nodeId: state.nodeId, clusterId: state.clusterId, role: 'swarm-manager', hosts: certHosts(state) }));
        await this.startNode(state);
        const now = new Date().toISOString();
        const stored: StoredCluster = {
          id: state.clusterId,
          createdAt: now,
          updatedAt: now,
          spec,
          rootCaPem: ca.certPem,
          tokens: { worker: makeJoinToken(ca.certPem), manager: makeJoinToken(ca.certPem) },
          defaultAddrPool: pool.pool,
          subnetSize: pool.subnetSize,
          dataPathPort,
        };
        // Only where no swarm is yet (another node's init may have won since the check above).
        await this.objects.create(stored, ca);
        await bounded(this.objects.specs.put(state.nodeId, { Labels: {}, Role: 'manager', Availability: (req.Availability || 'active') as NodeAvailability }));
      });
    });
  }

  /**
   * Joins the swarm in --cluster-store's etcd with one of its join tokens: its CA digest must be the
   * swarm's, its secret the worker's or the manager's (the role it joins as). Joining over the
   * network (a manager's listen address) is (5 of 21)'s.
   */
  join(req: SwarmJoinRequest): Promise<void> {
    return this.serial(async () => {
      if (this.state || this.d.holder.current) throw unavailable(ALREADY_IN_SWARM);
      const token = parseJoinToken(req.JoinToken ?? '');
      if (!token) throw invalidArgument(INVALID_TOKEN);
      if (!this.d.clusterStore) throw notImplemented(JOIN_OVER_NETWORK);
      const addrs = this.addresses(req);
      const found = await this.withStore(storedSwarm);
      if (!found?.ca) throw unavailable(NO_SWARM_IN_STORE);
      const { stored, ca } = found;
      if (token.digest !== caDigest(stored.rootCaPem)) throw invalidArgument(`${INVALID_TOKEN}: its CA digest is not this swarm's root CA's`);
      const role = token.secret === parseJoinToken(stored.tokens.manager)?.secret ? 'manager' : token.secret === parseJoinToken(stored.tokens.worker)?.secret ? 'worker' : undefined;
      if (!role) throw invalidArgument(INVALID_TOKEN);
      const state: SwarmState = { nodeId: newSwarmId(), clusterId: stored.id, role, ...addrs, store: 'external' };
      await this.enter(state, async () => {
        const hosts = certHosts(state);
        await this.files.writeCerts(ca.certPem, await issueNodeCert(ca, { nodeId: state.nodeId, clusterId: state.clusterId, role: role === 'manager' ? 'swarm-manager' : 'swarm-worker', hosts }));
        await this.startNode(state);
        await bounded(this.objects.specs.put(state.nodeId, { Labels: {}, Role: role, Availability: (req.Availability || 'active') as NodeAvailability }));
      });
    });
  }

  leave(force: boolean): Promise<void> {
    return this.serial(async () => {
      const state = this.state;
      if (!state) throw unavailable(NOT_IN_SWARM);
      const managers = state.role === 'manager' ? await this.objects.managerCount() : 0;
      if (state.role === 'manager' && !force) throw unavailable(managers <= 1 ? LAST_MANAGER : OTHER_MANAGERS);
      clearTimeout(this.resumeTimer);
      this.resuming = false;
      this.resumeError = '';
      if (state.store === 'external') {
        // Its spec and lasting record go; the last manager takes the swarm with it.
        await this.objects.forget(state.nodeId, state.role === 'manager' && managers <= 1).catch((err: Error) => this.d.log.warn({ err: err.message }, 'could not remove the node from the cluster store'));
      }
      await this.stopNode(true);
      await this.files.removeAll();
      this.d.log.info({ nodeId: state.nodeId }, 'left the swarm');
      this.state = undefined;
      this.objects.clear();
    });
  }

  async inspect(): Promise<ClusterRecord> {
    this.manager();
    return await this.objects.read();
  }

  update(u: SwarmUpdate): Promise<void> {
    return this.serial(async () => {
      this.manager();
      const spec: SwarmSpec = replacedSpec(u.spec ?? {});
      if (spec.EncryptionConfig.AutoLockManagers) throw invalidArgument(NO_AUTOLOCK);
      await this.objects.update(u.version, spec, { worker: u.rotateWorkerToken, manager: u.rotateManagerToken });
    });
  }

  async nodeSpecs(): Promise<Map<string, { spec: NodeSpec; version: number }>> {
    this.manager();
    return await this.objects.specs.list();
  }

  updateNode(id: string, version: bigint, spec: NodeSpec): Promise<void> {
    return this.serial(async () => {
      this.manager();
      await this.objects.specs.update(id, version, spec);
    });
  }

  removeNode(id: string, o: { force: boolean; down: boolean }): Promise<void> {
    return this.serial(async () => {
      this.manager();
      await this.objects.specs.remove(id, o);
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

  private ifaces(): Interfaces {
    return this.d.interfaces?.() ?? (networkInterfaces() as Interfaces);
  }

  private addresses(req: { ListenAddr?: string; AdvertiseAddr?: string; DataPathAddr?: string }): NodeAddresses {
    return nodeAddresses(req, this.d.defaultAdvertiseAddr, this.ifaces());
  }

  /**
   * The node enters the swarm in `state`: `steps` make its certificates, start it and write what the
   * swarm keeps of it; then the state file, and the answer once the membership has joined. Whatever
   * fails undoes all of it (the node is in no swarm, as before).
   */
  private async enter(state: SwarmState, steps: () => Promise<void>): Promise<string> {
    // What a failed init or a crash in one left is not this swarm's.
    await this.files.removeAll();
    try {
      await steps();
      await this.files.write(state);
      this.state = state;
      if (state.role === 'manager') await this.objects.read();
      await this.joined();
      this.d.log.info({ nodeId: state.nodeId, clusterId: state.clusterId, role: state.role, store: state.store, advertise: `${state.advertiseHost}:${state.advertisePort}` }, 'entered the swarm');
      return state.nodeId;
    } catch (err) {
      if (state.store === 'external' && this.d.holder.current) await this.objects.forget(state.nodeId, false).catch(() => {});
      await this.stopNode(true).catch(() => {});
      await this.files.removeAll().catch(() => {});
      this.state = undefined;
      this.objects.clear();
      if (err instanceof EngineError && ['InvalidArgument', 'Unavailable', 'Conflict', 'FailedPrecondition'].includes(err.code)) throw err;
      throw internal(`could not enter the swarm: ${err instanceof Error ? err.message : String(err)}`, err);
    }
  }

  /** A short-lived client of --cluster-store's etcd (before the node is in its swarm). */
  private async withStore<T>(fn: (etcd: Etcd3) => Promise<T>): Promise<T> {
    const client = await etcdClient(this.d.clusterStore!);
    try {
      return await bounded(fn(client));
    } catch (err) {
      if (err instanceof EngineError) throw err;
      throw unavailable(`The swarm's etcd does not answer: ${err instanceof Error ? err.message : String(err)}`, err);
    } finally {
      client.close();
    }
  }

  /**
   * Starts the node's part: a manager's listener (first: a listen address in use refuses at once),
   * the managed member (a manager of a managed swarm), then the membership.
   */
  private async startNode(state: SwarmState, forceNewCluster = false): Promise<void> {
    if (state.role === 'manager') {
      const { host, port } = listenEndpoint(state.listenAddr, this.ifaces());
      const listener = new SwarmListener({
        host,
        port: Number(port),
        tls: await this.files.readCerts(),
        self: { nodeId: state.nodeId, clusterId: state.clusterId, role: state.role },
        log: this.d.log,
      });
      await listener.start();
      this.listener = listener;
    }
    let spec: ClusterStore;
    if (state.store === 'external') {
      if (!this.d.clusterStore) throw new Error('the node is in a swarm on an external etcd and the daemon was started without --cluster-store');
      spec = this.d.clusterStore;
    } else {
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
      spec = {
        endpoints: [member.clientUrl],
        tls: { caFile: this.files.cert('swarm-root-ca.crt'), certFile: this.files.cert('swarm-node.crt'), keyFile: this.files.cert('swarm-node.key') },
        ttlSeconds: DEFAULT_DISCOVERY_TTL,
        fenceMarginSeconds: 2,
      };
    }
    await this.d.holder.start(spec, { nodeId: state.nodeId, addr: state.advertiseHost, role: state.role, port: Number(state.advertisePort) || undefined });
  }

  /** Stops the node's part: the membership, the listener, the member (removed with its data when leaving). */
  private async stopNode(removeMember: boolean): Promise<void> {
    await this.d.holder.stop();
    await this.listener?.stop();
    this.listener = undefined;
    if (removeMember) await this.member?.remove();
    else await this.member?.stop();
    this.member = undefined;
  }

  /** Waits (a while) for the membership to have joined: init answers once /info says active, as the reference's. */
  private async joined(timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.d.holder.current?.membership.state !== 'active' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }

  /** `swarm init --force-new-cluster` on a manager: its member restarted as a cluster of one from its data. */
  private async forceNewCluster(): Promise<string> {
    const state = this.state!;
    await this.stopNode(false);
    await this.startNode(state, true);
    await this.objects.read();
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
        await this.startNode(state);
        if (state.role === 'manager') await this.objects.read().catch(() => undefined);
      });
      this.resumeError = '';
      this.resuming = false;
    } catch (err) {
      this.resumeError = err instanceof Error ? err.message : String(err);
      this.d.log.warn({ err: this.resumeError }, 'the swarm could not be started again; retrying');
      await this.stopNode(false).catch(() => {});
      if (!this.closed) this.resumeTimer = setTimeout(() => void this.bringBack(), RETRY_MS);
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }
}
