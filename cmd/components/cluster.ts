// Cluster membership (on the swarm's etcd: cmd/swarm/node.ts starts it): the node's record, lease and leader campaign
// (reconcilers/node/membership.ts), with the facts it advertises — hostname, the advertise
// address, engine version, the daemon's labels (they follow a reload), CPUs, memory and
// --node-generic-resource. Until the node enters a swarm the holder holds none and nothing changes.
import type { CdiRegistry } from '../../drivers/cdi/registry.ts';
import type { RegistryAuth } from '../../lib/ports/registry.ts';
import { cpus, hostname, machine, totalmem } from 'node:os';
import type { ClusterStore } from '../../lib/cluster/store-url.ts';
import type { ControllerFamilies } from '../../controllers/metrics.ts';
import type { SupervisorClient } from '../../drivers/supervisor/client.ts';
import type { Store } from '../../store/store.ts';
import { parseGenericResources } from '../../lib/generic-resources.ts';
import { Gated } from '../../controllers/gate.ts';
import { Manager } from '../../controllers/manager.ts';
import { orchestratorController, overlayController, taskRunnerController } from '../../reconcilers/node/controllers.ts';
import { SwarmOrchestrator } from '../../reconcilers/node/orchestrator.ts';
import { TaskRunner } from '../../reconcilers/node/task-runner.ts';
import { OverlayNetworks, type OverlayOptions } from '../../reconcilers/node/overlay.ts';
import { admitOverlayInstance } from '../../admission/networks/overlay-instance.ts';
import type { NetworkAdmissionDeps } from '../../admission/networks/admit.ts';
import { DATA_PATH_PORT } from '../../lib/swarm/endpoints.ts';
import { join } from 'node:path';
import { TaskFiles, taskObjectRefs, type TaskObjectKind } from '../../drivers/swarm/task-files.ts';
import { admitContainer, type AdmissionDeps } from '../../admission/containers/admit.ts';
import { swarmTaskOwner } from '../../store/kinds/container.ts';
import { ClusterCompactor, COMPACT_EVERY_MS } from '../../reconcilers/node/compactor.ts';
import { ClusterMembership, type NodeFacts } from '../../reconcilers/node/membership.ts';
import { FencerLink } from '../../reconcilers/node/fencer-link.ts';
import { SelfFence } from '../../reconcilers/node/self-fence.ts';
import { component } from './registry.ts';
import { ENGINE_VERSION } from '../version.ts';
import type { DaemonEnv } from './env.ts';

/** The daemon's `--label KEY=VALUE` list as a map (what placement constraints and node records read). */
export function labelMap(labels: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of labels) {
    const i = l.indexOf('=');
    if (i > 0) out[l.slice(0, i)] = l.slice(i + 1);
  }
  return out;
}

/** The cluster parts: membership, the fences, the leader's orchestrator, this node's tasks and overlay networks. */
export interface Cluster {
  membership: ClusterMembership;
  compactor: ClusterCompactor;
  fence: SelfFence;
  fencer: FencerLink;
  /** The leader's swarm orchestrator, and this node's swarm tasks as containers. */
  orchestrator: SwarmOrchestrator;
  runner: TaskRunner;
  /** This node's part of the overlay networks. */
  overlay: OverlayNetworks;
  /** Runs membership, the orchestrator (while leading), the task runner and the overlay networks: started in that order, stopped in reverse. */
  loops: Manager;
}

/** What the cluster parts are made from: the daemon's configuration and its local parts. */
export interface ClusterDeps {
  cfg: DaemonEnv['cfg'];
  log: DaemonEnv['log'];
  store: Store;
  execRoot: string;
  supervisor: SupervisorClient;
  /** The container create route's admission (a swarm task's container is made through it). */
  containers: AdmissionDeps;
  /** The network create's admission (the node's instances of overlay networks are made through it). */
  networks: NetworkAdmissionDeps;
  /** The overlay data path's devices and rules (the bridge driver's). */
  dataPath: Pick<OverlayOptions, 'syncPeers' | 'applyVipRules' | 'applyIngress'>;
  /** A task's secret or config, from a manager (set by the swarm: cmd/swarm/task-objects.ts). */
  taskObjects?: () => ((taskId: string, kind: TaskObjectKind, id: string) => Promise<Buffer>) | undefined;
  /** Where the embedded DNS asks for the swarm's names on overlay networks (set while in a swarm). */
  swarmNames?: (lookup: ((networkId: string, name: string) => string[] | null) | undefined) => void;
  metrics: ControllerFamilies | undefined;
  /** The credentials the next run of a pull uses (a task's image, pulled with its service's). */
  pullCredentials?: (pull: string, auth: RegistryAuth | undefined) => void;
  /** The node's CDI devices (features.cdi on), which tasks' generic resources may name. */
  cdiDevices?: () => string[];
}

/** Who the node is in the swarm it made or joined: its id, advertise address and role. */
export interface ClusterIdentity {
  nodeId: string;
  addr: string;
  /** A worker does not stand for the leadership (its orchestrator never runs). */
  role: 'manager' | 'worker';
  /** The advertised port of its listener. */
  port?: number;
  /** Its VTEP: the data path address (DataPathAddr), else the advertise address. */
  dataPathAddr?: string;
}

/** Joins the cluster in `spec` (etcd answering or not): membership, orchestrator, task runner, overlay, fences, compactor. */
export async function startCluster(d: ClusterDeps, spec: ClusterStore, who: ClusterIdentity): Promise<Cluster> {
  const { cfg, log, metrics } = d;
  const addr = who.addr;
  const generic = parseGenericResources(cfg.nodeGenericResources);
  const arch = machine();
  const facts = (): NodeFacts => ({
    hostname: hostname(),
    addr,
    engineVersion: ENGINE_VERSION,
    labels: labelMap(cfg.labels),
    os: 'linux',
    arch,
    nanoCpus: cpus().length * 1e9,
    memoryBytes: totalmem(),
    genericResources: generic,
    role: who.role,
    ...(who.port ? { port: who.port } : {}),
  });
  const clog = log.child({ component: 'cluster' });
  // The task runner is made below; the fence's callbacks reach it once it exists.
  let runner: TaskRunner | undefined;
  const fence = new SelfFence({
    ttlMs: spec.ttlSeconds * 1000,
    marginMs: spec.fenceMarginSeconds * 1000,
    onFence: (killAt) => runner?.fence(killAt),
    onDeadline: () => runner?.deadline(),
    onRelease: () => runner?.release(),
  });
  const membership = new ClusterMembership({
    store: spec,
    nodeId: who.nodeId,
    facts,
    log: clog,
    lease: fence,
    metrics,
    candidate: who.role !== 'worker',
  });
  const etcd = () => membership.etcd;
  // Should the daemon die, its cluster containers still go by the fence deadline (cmd/fencer.ts).
  const fencer = new FencerLink({
    execRoot: d.execRoot,
    store: d.store,
    deadline: () => fence.leaseAtLeastUntil - spec.fenceMarginSeconds * 1000,
    log: clog.child({ part: 'fencer' }),
  });
  const overlay = new OverlayNetworks({
    store: d.store,
    nodeId: membership.nodeId,
    vtep: who.dataPathAddr || addr,
    etcd,
    instance: (n) => admitOverlayInstance(d.networks, n, { vtep: who.dataPathAddr || addr, port: DATA_PATH_PORT }),
    createLeased: (k, v) => membership.createLeased(k, v),
    putLeased: (k, v) => membership.putLeased(k, v),
    syncPeers: d.dataPath.syncPeers,
    applyVipRules: d.dataPath.applyVipRules,
    applyIngress: d.dataPath.applyIngress,
    log: clog.child({ part: 'overlay' }),
  });
  d.swarmNames?.((net, name) => overlay.lookup(net, name));
  const taskFiles = new TaskFiles({
    dir: join(d.execRoot, 'swarm', 'tasks'),
    fetch: (task, kind, id) => {
      const fetch = d.taskObjects?.();
      if (!fetch) throw new Error('this node gets no secrets or configs: it is in no swarm');
      return fetch(task, kind, id);
    },
    log: clog.child({ part: 'task-files' }),
  });
  runner = new TaskRunner({
    store: d.store,
    nodeId: membership.nodeId,
    etcd,
    putLeased: (k, v) => membership.putLeased(k, v),
    run: (taskId, name, body, start) => void admitContainer(d.containers, body, { name, ownerRef: swarmTaskOwner(taskId), start }),
    fence: { startsAllowed: () => fence.startsAllowed, tasksRead: () => fence.tasksRead() },
    kill: (id) => d.supervisor.killTask(id, 9, { all: true }),
    networks: (t) => overlay.prepare(t),
    files: (t) => taskFiles.prepare(t.ID, taskObjectRefs((t.Spec['ContainerSpec'] as Record<string, unknown> | undefined) ?? {})),
    collectFiles: (keep) => taskFiles.collect(keep),
    networksDone: (id) => overlay.forget(id),
    ...(d.pullCredentials ? { credentials: d.pullCredentials } : {}),
    ...(d.cdiDevices ? { cdiDevices: d.cdiDevices } : {}),
    log: clog.child({ part: 'tasks' }),
  });
  const tasks = runner;
  const orchestrator = new SwarmOrchestrator({ etcd, nodes: () => membership.nodes(), term: () => membership.leaderTerm, deposed: (why) => membership.deposed(why), log: clog.child({ part: 'orchestrator' }) });
  membership.on('joined', () => {
    void tasks.watch().catch(() => {});
    void orchestrator.watch().catch(() => {});
    tasks.rejoined();
    void overlay.watch().catch(() => {});
    overlay.rejoined();
    orchestrator.kick();
  });
  const compactor = new ClusterCompactor({ etcd, leading: () => membership.isLeader, log: clog.child({ part: 'compactor' }), everyMs: compactEveryMs() });
  membership.on('nodes', () => orchestrator.kick());
  const loops = new Manager({ log: clog });
  loops.add(membership);
  // The orchestrator runs only while this node leads: a controller built for each term.
  const whileLeading = (name: string, build: () => ReturnType<ReturnType<typeof orchestratorController>['build']>) =>
    new Gated({ name, isOpen: () => membership.isLeader, changes: { subscribe: (fn) => (membership.on('leader', fn), () => membership.off('leader', fn)) }, build });
  loops.add(whileLeading('swarm-orchestrator', () => orchestratorController(orchestrator).build({ reconciler: orchestrator, log: clog.child({ part: 'orchestrator' }), metrics })));
  loops.add(taskRunnerController(tasks).build({ reconciler: tasks, log: clog.child({ part: 'tasks' }), metrics }));
  loops.add(overlayController(overlay).build({ reconciler: overlay, log: clog.child({ part: 'overlay' }), metrics }));
  tasks.start();
  overlay.start();
  compactor.start();
  fencer.start();
  await loops.start();
  return { membership, orchestrator, runner: tasks, overlay, compactor, fence, fencer, loops };
}

/** Leaves the cluster: every part stopped, the lease revoked. */
export async function stopCluster(c: Cluster, d?: Pick<ClusterDeps, 'swarmNames'>): Promise<void> {
  c.compactor.stop();
  c.fence.stop();
  c.fencer.stop();
  await c.loops.stop();
  c.orchestrator.stop();
  c.runner.stop();
  c.overlay.stop();
  d?.swarmNames?.(undefined);
}

/**
 * The cluster this node is in now, if any: what the API and the reload read (through getters, as
 * the node joins and leaves while the daemon runs).
 */
export class ClusterHolder {
  private readonly deps: ClusterDeps;
  private cluster: Cluster | null = null;
  private taskObjects: ((taskId: string, kind: TaskObjectKind, id: string) => Promise<Buffer>) | undefined;

  constructor(deps: ClusterDeps) {
    this.deps = { ...deps, taskObjects: () => this.taskObjects };
  }

  /** Where the cluster's nodes get their tasks' secrets and configs (the swarm's managers). */
  useTaskObjects(fn: (taskId: string, kind: TaskObjectKind, id: string) => Promise<Buffer>): void {
    this.taskObjects = fn;
  }

  get current(): Cluster | null {
    return this.cluster;
  }

  async start(spec: ClusterStore, who: ClusterIdentity): Promise<Cluster> {
    if (this.cluster) throw new Error('this node is in a cluster already');
    this.cluster = await startCluster(this.deps, spec, who);
    return this.cluster;
  }

  async stop(): Promise<void> {
    const c = this.cluster;
    this.cluster = null;
    if (c) await stopCluster(c, this.deps);
  }
}

/** The CDI devices of the registry for the task runner (none without features.cdi). */
function cdiDevicesOf(registry: CdiRegistry | undefined): Pick<ClusterDeps, 'cdiDevices'> {
  return registry ? { cdiDevices: () => registry.listDevices() } : {};
}

export function clusterComponent({ cfg, log }: DaemonEnv) {
  return component({
    id: 'cluster',
    requires: ['paths', 'store', 'supervisor-client', 'metrics', 'admission', 'pulls', 'bridge', 'dns', 'cdi'],
    init: async (ctx) => {
      // The node enters a cluster by `swarm init` or `swarm join` (cmd/swarm/node.ts), whichever store it uses.
      return new ClusterHolder({ cfg, log, store: ctx.get('store'), execRoot: ctx.get('paths').execRoot, supervisor: ctx.get('supervisor-client'), metrics: ctx.get('metrics').controllers, containers: ctx.get('admission').containers, networks: ctx.get('admission').networks, dataPath: { syncPeers: (vx, peers, signal) => ctx.get('bridge').syncPeers(vx, peers, signal), applyVipRules: (pid, rules, signal) => ctx.get('bridge').applyVipRules(pid, rules, signal), applyIngress: (cfg, prefix, signal) => ctx.get('bridge').applyIngress(cfg, prefix, signal) }, swarmNames: (fn) => ctx.get('dns').useSwarmNames(fn), pullCredentials: (name, auth) => ctx.get('pulls').setCredentials(name, auth), ...cdiDevicesOf(ctx.get('cdi').registry) });
    },
    close: (holder) => holder.stop(),
  });
}

/** The compaction interval: ENGINE_CLUSTER_COMPACT_MS (tests) or five minutes. */
function compactEveryMs(): number {
  const v = Number(process.env.ENGINE_CLUSTER_COMPACT_MS);
  return Number.isInteger(v) && v >= 1000 ? v : COMPACT_EVERY_MS;
}
