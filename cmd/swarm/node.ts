// The node's swarm (the reference's swarm mode) on etcd: `swarm init` makes the cluster's CA and
// this node's certificate, starts the node's parts (./node-parts.ts: a manager's listener and managed
// etcd member, none with --cluster-store, whose etcd holds the swarm; the cluster membership of
// (3 of 21) on it) and writes the cluster object (./objects.ts); `swarm join` enters a swarm with a
// join token, through a manager's address (./remote-join.ts, answered by ./admission.ts) or through
// --cluster-store's etcd; `swarm leave` undoes either. The node's part is kept under
// <data-root>/swarm (./state.ts): at daemon start its parts start again in the background (the node
// answers `pending` meanwhile, `error` with the reason while they cannot).
import { networkInterfaces } from 'node:os';
import type { Logger } from 'pino';
import type { Etcd3 } from 'etcd3';
import { issueNodeCert, makeRootCa } from '../../drivers/swarm/ca.ts';
import { SWARM_ETCD_CLIENT_PORT, SWARM_ETCD_PEER_PORT } from '../../drivers/swarm/etcd-member.ts';
import { conflict, EngineError, internal, invalidArgument, unavailable } from '../../lib/errors.ts';
import type { Interfaces } from '../../lib/swarm/addresses.ts';
import { initSpec, replacedSpec, type ClusterRecord, type SwarmSpec } from '../../lib/swarm/cluster-object.ts';
import { caDigest, makeJoinToken, parseJoinToken, type ParsedJoinToken } from '../../lib/swarm/join-token.ts';
import type { ClusterStore } from '../../lib/cluster/store-url.ts';
import type { SwarmInitRequest, SwarmJoinRequest, SwarmPort, SwarmUpdate } from '../../api/swarm/port.ts';
import type { LocalNodeState } from '../../api/nodes/views.ts';
import type { ClusterHolder } from '../components/cluster.ts';
import type { NodeAvailability, NodeSpec } from '../../lib/swarm/node-spec.ts';
import { bounded, roleOfToken, storedSwarm, SWARM_IN_STORE, SwarmObjects, withStore, type StoredCluster } from './objects.ts';
import { certHosts, checkDataPathPort, checkPool, nodeAddresses, type NodeAddresses } from './requests.ts';
import { newSwarmId } from '../../lib/swarm/ids.ts';
import { SwarmFiles, SwarmLockedError, type SwarmState } from './state.ts';
import { makeDataKey, makeUnlockKey, parseUnlockKey } from '../../lib/swarm/unlock-key.ts';
import { LockReconciler } from './lock.ts';
import { AccessReconciler } from './access.ts';
import type { SwarmObjectsPort } from '../../api/secrets/port.ts';
import type { SwarmNetworksPort } from '../../api/networks/swarm-port.ts';
import type { TaskLogsDeps } from './task-logs.ts';
import { SwarmStores } from './stores.ts';
import type { ClusterStacksPort } from '../../api/stacks/routes.ts';
import type { ServicesPort } from '../../api/services/port.ts';
import { grantNode } from '../../drivers/swarm/etcd-access.ts';
import { Admission, INVALID_TOKEN } from './admission.ts';
import { NodeParts } from './node-parts.ts';
import { admitted, requestForget } from './remote-join.ts';
import { RoleReconciler } from './role.ts';
import { A_WORKER, ALREADY_IN_SWARM, managerLeaving, NO_LEADER, SWARM_LOCKED, NO_SWARM_IN_STORE, NOT_A_MANAGER, NOT_IN_SWARM } from './refusals.ts';

const RETRY_MS = 5000;
const LOOK_EVERY_MS = 2000;

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
  /** Where the swarm's task logs are read on this node (its task containers and their log reader). */
  logs?: Pick<TaskLogsDeps, 'store' | 'reader'>;
}

export class SwarmNode implements SwarmPort {
  private readonly d: SwarmNodeDeps;
  private readonly files: SwarmFiles;
  private state: SwarmState | undefined;
  private readonly parts: NodeParts;
  private readonly admission: Admission;
  private readonly role: RoleReconciler;
  private readonly lock: LockReconciler;
  private readonly access: AccessReconciler;
  private readonly stores: SwarmStores;
  private looks: NodeJS.Timeout | undefined;
  private readonly objects: SwarmObjects;
  /** Bringing the node back at daemon start (member, membership) or after a failure. */
  private resuming = false;
  /** A manager started with its key sealed (autolock): nothing of the swarm runs until it is unlocked. */
  private locked = false;
  private resumeError = '';
  private resumeTimer: NodeJS.Timeout | undefined;
  /** One init, leave or update at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(d: SwarmNodeDeps) {
    this.d = d;
    this.files = new SwarmFiles(d.dataRoot, d.execRoot);
    this.objects = new SwarmObjects(() => this.etcd());
    this.admission = new Admission({
      etcd: () => this.etcd(),
      grant: async (id, role) => {
        if (this.state?.store === 'managed') await grantNode(this.etcd(), id, role);
      },
      memberClient: () => this.parts.client(),
      dataKey: () => this.files.readDataKey(),
      specs: this.objects.specs,
      log: d.log,
    });
    const stores = new SwarmStores({
      etcd: () => this.etcd(),
      dataKey: () => this.files.readDataKey(),
      pool: () => {
        const c = this.objects.cached();
        return { defaultAddrPool: c?.defaultAddrPool ?? [], subnetSize: c?.subnetSize ?? 24 };
      },
      self: async () => (this.state ? { nodeId: this.state.nodeId, manager: this.state.role === 'manager', tls: await this.files.readCerts() } : undefined),
      nodes: () => this.d.holder.current?.membership.nodes() ?? [],
      ...(d.logs ? { logs: d.logs } : {}),
    });
    this.stores = stores;
    d.holder.useTaskObjects((task, kind, id) => stores.taskObjects.fetch(task, kind, id));
    const localTaskLog = stores.localTaskLog();
    this.parts = new NodeParts({
      files: this.files,
      execRoot: d.execRoot,
      holder: d.holder,
      clusterStore: d.clusterStore,
      log: d.log,
      ifaces: () => this.ifaces(),
      etcdBinary: d.etcdBinary,
      admit: (body) => this.admission.admit(body),
      forget: (id) => this.admission.forget(id),
      promote: (id, body) => this.admission.promote(id, body),
      taskObject: (node, task, kind, id) => stores.taskObjects.serve(node, task, kind, id),
      ...(localTaskLog ? { taskLogs: localTaskLog } : {}),
    });
    this.role = new RoleReconciler({
      state: () => (this.resuming || this.resumeError ? undefined : this.state),
      setState: async (s) => {
        await this.files.write(s);
        this.state = s;
      },
      spec: (id) => this.objects.specs.get(id),
      records: () => this.d.holder.current?.membership.nodes() ?? [],
      managers: async () => ((await this.etcd().cluster.memberList({})).members ?? []).filter((m) => !m.isLearner).flatMap((m) => m.clientURLs),
      parts: this.parts,
      files: this.files,
      serial: (fn) => this.serial(fn),
      log: d.log,
    });
    this.access = new AccessReconciler({
      state: () => (this.resuming || this.resumeError || this.locked ? undefined : this.state),
      leading: () => this.d.holder.current?.membership.isLeader ?? false,
      etcd: () => this.etcd(),
      specs: () => this.objects.specs.list(),
      log: d.log,
    });
    this.lock = new LockReconciler({
      state: () => (this.resuming || this.resumeError || this.locked ? undefined : this.state),
      unlockKey: () => this.objects.unlockKey(),
      files: this.files,
      serial: (fn) => this.serial(fn),
      log: d.log,
    });
  }

  get inSwarm(): boolean {
    return !!this.state;
  }

  local(): { state: LocalNodeState; error: string; manager: boolean } {
    if (!this.state) return { state: 'inactive', error: '', manager: false };
    const manager = this.state.role === 'manager';
    if (this.locked) return { state: 'locked', error: '', manager };
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
    // Promotions, demotions and the autolock seal are looked for while the daemon runs (no-ops while in no swarm).
    this.looks ??= setInterval(() => {
      void this.role.look();
      void this.lock.look();
      void this.access.look();
    }, LOOK_EVERY_MS).unref();
    const { state, error } = await this.files.read();
    if (error) this.d.log.warn({ error }, 'the swarm state cannot be read: the node is in no swarm');
    if (!state) return;
    this.state = state;
    if (await this.files.keySealed()) {
      // Autolock: nothing of the swarm starts until `swarm unlock` gives the key.
      this.locked = true;
      this.d.log.info({ nodeId: state.nodeId }, 'the swarm is locked: docker swarm unlock gives its key');
      return;
    }
    this.resuming = true;
    void this.bringBack();
  }

  unlock(key: string): Promise<void> {
    return this.serial(async () => {
      if (!this.state) throw unavailable(NOT_A_MANAGER);
      if (!this.locked) throw invalidArgument('swarm is not locked');
      const k = parseUnlockKey(key);
      if (!k) throw invalidArgument('invalid key string');
      this.files.useUnlockKey(k);
      try {
        await this.files.readCerts();
      } catch (err) {
        this.files.useUnlockKey(undefined);
        if (err instanceof SwarmLockedError) throw invalidArgument('swarm could not be unlocked: invalid key provided');
        throw err;
      }
      this.locked = false;
      this.resuming = true;
      this.d.log.info({ nodeId: this.state.nodeId }, 'the swarm is unlocked');
      void this.bringBack();
    });
  }

  async unlockKey(): Promise<string> {
    this.manager();
    return (await this.objects.unlockKey()) ?? '';
  }

  /** Stops the membership, the listener and the member (the node stays in its swarm: the next start resumes it). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.looks);
    clearTimeout(this.resumeTimer);
    await this.serial(() => this.parts.stop(false));
  }

  init(req: SwarmInitRequest): Promise<string> {
    return this.serial(async () => {
      if (this.state || this.d.holder.current) {
        if (req.ForceNewCluster && this.state?.role === 'manager' && this.parts.hasMember) return await this.forceNewCluster();
        throw unavailable(ALREADY_IN_SWARM);
      }
      const spec = initSpec(req.Spec ?? undefined);
      if (req.AutoLockManagers) spec.EncryptionConfig.AutoLockManagers = true;
      const pool = checkPool(req.DefaultAddrPool, req.SubnetSize);
      const dataPathPort = checkDataPathPort(req.DataPathPort);
      const addrs = this.addresses(req);
      const external = !!this.d.clusterStore;
      if (external) await withStore(this.d.clusterStore!, async (etcd) => {
        if (await storedSwarm(etcd)) throw conflict(SWARM_IN_STORE);
      });
      const state: SwarmState = {
        nodeId: newSwarmId(),
        clusterId: newSwarmId(),
        role: 'manager',
        ...addrs,
        store: external ? 'external' : 'managed',
        ...(external ? {} : { member: { clientPort: SWARM_ETCD_CLIENT_PORT, peerPort: SWARM_ETCD_PEER_PORT }, heartbeatNs: spec.Dispatcher.HeartbeatPeriod }),
      };
      return await this.enter(state, async () => {
        const ca = await makeRootCa();
        await this.files.writeCerts(ca.certPem, await issueNodeCert(ca, { nodeId: state.nodeId, clusterId: state.clusterId, role: 'swarm-manager', hosts: certHosts(state) }));
        await this.files.writeDataKey(makeDataKey());
        await this.parts.start(state);
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
        await bounded(this.stores.networks.createIngress({ defaultAddrPool: pool.pool, subnetSize: pool.subnetSize }));
        if (spec.EncryptionConfig.AutoLockManagers) {
          const key = makeUnlockKey();
          await this.objects.setUnlockKey(key);
          await this.files.sealWith(parseUnlockKey(key));
        }
      });
    });
  }

  /**
   * Joins a swarm with one of its join tokens (its CA digest must be the swarm's, its secret the
   * worker's or the manager's: the role it joins as): through a manager's address (RemoteAddrs,
   * ./remote-join.ts), or, for a node started with --cluster-store, through that etcd.
   */
  join(req: SwarmJoinRequest): Promise<void> {
    return this.serial(async () => {
      if (this.state || this.d.holder.current) throw unavailable(ALREADY_IN_SWARM);
      const token = parseJoinToken(req.JoinToken ?? '');
      // The reference's words for a token not in the format (it answers 500 for it).
      if (!token) throw invalidArgument('invalid join token');
      const addrs = this.addresses(req);
      if (this.d.clusterStore) return await this.joinThroughStore(req, token, addrs);
      const { state, answer, keyPem, join } = await admitted(req, token, addrs);
      await this.enter(state, async () => {
        await this.files.writeCerts(answer.RootCA, { certPem: answer.Certificate, keyPem });
        if (state.role === 'manager') await this.files.writeDataKey(answer.DataKey);
        await this.parts.start(state, { join });
      });
    });
  }

  /** Joins the swarm in --cluster-store's etcd: this node checks the token and writes its own spec. */
  private async joinThroughStore(req: SwarmJoinRequest, token: ParsedJoinToken, addrs: NodeAddresses): Promise<void> {
    const found = await withStore(this.d.clusterStore!, storedSwarm);
    if (!found?.ca) throw unavailable(NO_SWARM_IN_STORE);
    const { stored, ca } = found;
    if (token.digest !== caDigest(stored.rootCaPem)) throw invalidArgument(`${INVALID_TOKEN}: its CA digest is not this swarm's root CA's`);
    const role = roleOfToken(stored, token);
    if (!role) throw invalidArgument(INVALID_TOKEN);
    const state: SwarmState = { nodeId: newSwarmId(), clusterId: stored.id, role, ...addrs, store: 'external' };
    await this.enter(state, async () => {
      const hosts = certHosts(state);
      await this.files.writeCerts(ca.certPem, await issueNodeCert(ca, { nodeId: state.nodeId, clusterId: state.clusterId, role: role === 'manager' ? 'swarm-manager' : 'swarm-worker', hosts }));
      await this.parts.start(state);
      await bounded(this.objects.specs.put(state.nodeId, { Labels: {}, Role: role, Availability: (req.Availability || 'active') as NodeAvailability }));
    });
  }

  leave(force: boolean): Promise<void> {
    return this.serial(async () => {
      const state = this.state;
      if (!state) throw unavailable(NOT_IN_SWARM);
      const managers = state.role === 'manager' ? await this.objects.managerCount() : 0;
      if (state.role === 'manager' && !force) throw unavailable(managerLeaving(managers, 0));
      clearTimeout(this.resumeTimer);
      this.resuming = false;
      this.resumeError = '';
      this.locked = false;
      if (state.store === 'external') {
        // Its spec and lasting record go; the last manager takes the swarm with it.
        await this.objects.forget(state.nodeId, state.role === 'manager' && managers <= 1).catch((err: Error) => this.d.log.warn({ err: err.message }, 'could not remove the node from the cluster store'));
      } else if (state.role === 'manager' && managers > 1) {
        // A manager of a managed swarm with others: its spec, record and etcd member go (the others keep their quorum).
        await this.admission.forget(state.nodeId).catch((err: Error) => this.d.log.warn({ error: err.message }, 'could not remove the node from the swarm'));
      }
      // Its task containers go with it (the reference's leave removes them).
      const cluster = this.d.holder.current;
      cluster?.runner.removeAll();
      await this.parts.stop(true);
      // Again once its loops have stopped: no pass of theirs makes a task container, an overlay
      // instance or a routing mesh rule after this.
      cluster?.runner.removeAll();
      await cluster?.overlay.removeAll();
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
      await this.objects.update(u.version, spec, { worker: u.rotateWorkerToken, manager: u.rotateManagerToken });
      // Autolock: the unlock key made, replaced or dropped; every manager seals its key under it (./lock.ts).
      const had = await this.objects.unlockKey();
      const autolock = spec.EncryptionConfig.AutoLockManagers;
      const next = !autolock ? undefined : !had || u.rotateManagerUnlockKey ? makeUnlockKey() : had;
      if (next !== had) await this.objects.setUnlockKey(next);
      const want = next ? parseUnlockKey(next) : undefined;
      if (this.state?.role === 'manager') await this.files.sealWith(want);
    });
  }

  async nodeSpecs(): Promise<Map<string, { spec: NodeSpec; version: number }>> {
    this.manager();
    return await bounded(this.objects.specs.list(), undefined, NO_LEADER);
  }

  updateNode(id: string, version: bigint, spec: NodeSpec): Promise<void> {
    return this.serial(async () => {
      this.manager();
      const before = await bounded(this.objects.specs.get(id));
      await this.objects.specs.update(id, version, spec);
      // A manager demoted while down cannot remove its own member (./role.ts): this manager does.
      if (before?.Role === 'manager' && spec.Role === 'worker' && this.isDown(id)) await this.admission.removeMember(id);
    });
  }

  removeNode(id: string, o: { force: boolean; down: boolean }): Promise<void> {
    return this.serial(async () => {
      this.manager();
      const spec = await bounded(this.objects.specs.get(id));
      // Beyond the reference (which wants a demotion first): a manager that is down goes with --force, its member too.
      if (spec?.Role === 'manager' && o.force && o.down && this.state?.store === 'managed') return await this.admission.forget(id);
      await this.objects.specs.remove(id, o);
    });
  }

  private isDown(id: string): boolean {
    return this.d.holder.current?.membership.nodes().find((n) => n.id === id)?.state !== 'ready';
  }

  // ---- parts -------------------------------------------------------------------------------------

  /** Only an active manager answers for the cluster (the reference's 503 otherwise). */
  services(): ServicesPort {
    this.manager();
    return this.stores.services;
  }

  networks(): SwarmNetworksPort {
    this.manager();
    return this.stores.networks;
  }

  secrets(): SwarmObjectsPort {
    this.manager();
    return this.stores.secrets;
  }

  configs(): SwarmObjectsPort {
    this.manager();
    return this.stores.configs;
  }

  stacks(): ClusterStacksPort {
    this.manager();
    return this.stores.stacks;
  }

  private manager(): void {
    const l = this.local();
    if (!this.state) throw unavailable(NOT_A_MANAGER);
    if (this.locked) throw unavailable(SWARM_LOCKED);
    if (!l.manager) throw unavailable(A_WORKER);
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
      // Admitted by a manager, then failed: that manager forgets the node (its spec, its learner).
      if (state.joinedThrough) await this.files.readCerts().then((t) => requestForget(state.joinedThrough!, { ca: t.caPem, cert: t.certPem, key: t.keyPem })).catch((e: Error) => this.d.log.warn({ err: e.message }, 'the manager could not be asked to forget the node'));
      await this.parts.stop(true).catch(() => {});
      await this.files.removeAll().catch(() => {});
      this.state = undefined;
      this.objects.clear();
      if (err instanceof EngineError && ['InvalidArgument', 'Unavailable', 'Conflict', 'FailedPrecondition'].includes(err.code)) throw err;
      throw internal(`could not enter the swarm: ${err instanceof Error ? err.message : String(err)}`, err);
    }
  }



  /** Waits (a while) for the membership to have joined: init answers once /info says active, as the reference's. */
  private async joined(timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.d.holder.current?.membership.state !== 'active' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }

  /** `swarm init --force-new-cluster` on a manager: its member restarted as a cluster of one from its data. */
  private async forceNewCluster(): Promise<string> {
    const state = this.state!;
    await this.parts.stop(false);
    await this.parts.start(state, { forceNewCluster: true });
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
        await this.parts.start(state);
        if (state.role === 'manager') await this.objects.read().catch(() => undefined);
      });
      this.resumeError = '';
      this.resuming = false;
    } catch (err) {
      this.resumeError = err instanceof Error ? err.message : String(err);
      this.d.log.warn({ err: this.resumeError }, 'the swarm could not be started again; retrying');
      await this.parts.stop(false).catch(() => {});
      if (!this.closed) this.resumeTimer = setTimeout(() => void this.bringBack(), RETRY_MS);
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }
}
