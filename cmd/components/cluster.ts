// Cluster membership (--cluster-store etcd://…): the node's record, lease and leader campaign
// (reconcilers/node/membership.ts), with the facts it advertises — hostname, the advertise
// address, engine version, the daemon's labels (they follow a reload), CPUs, memory and
// --node-generic-resource. Without a cluster store the component is null and nothing changes.
import { cpus, hostname, machine, networkInterfaces, totalmem } from 'node:os';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { parseClusterStore } from '../../lib/cluster/store-url.ts';
import { parseGenericResources } from '../../lib/generic-resources.ts';
import { invalidArgument } from '../../lib/errors.ts';
import { Gated } from '../../controllers/gate.ts';
import { Manager } from '../../controllers/manager.ts';
import { NodeAgent } from '../../reconcilers/node/agent.ts';
import { agentController, placerController } from '../../reconcilers/node/controllers.ts';
import { ClusterCompactor, COMPACT_EVERY_MS } from '../../reconcilers/node/compactor.ts';
import { ClusterStacks } from '../../reconcilers/node/cluster-stacks.ts';
import { ClusterMembership, loadNodeId, type NodeFacts } from '../../reconcilers/node/membership.ts';
import { FencerLink } from '../../reconcilers/node/fencer-link.ts';
import { ClusterPlacer } from '../../reconcilers/node/placer.ts';
import { SelfFence } from '../../reconcilers/node/self-fence.ts';
import { component } from './registry.ts';
import { ENGINE_VERSION } from '../version.ts';
import type { DaemonEnv } from './env.ts';

/** The address other nodes reach this one at: --cluster-default-advertise-addr (an IP or an interface), else the first external IPv4. */
export function advertiseAddress(setting: string): string {
  const ifaces = networkInterfaces();
  if (setting) {
    if (isIP(setting)) return setting;
    const addrs = ifaces[setting];
    if (!addrs) throw invalidArgument(`invalid --cluster-default-advertise-addr ${setting}: not an IP address and no interface of that name`);
    const v4 = addrs.find((a) => a.family === 'IPv4') ?? addrs[0];
    if (!v4) throw invalidArgument(`invalid --cluster-default-advertise-addr ${setting}: the interface has no address`);
    return v4.address;
  }
  for (const addrs of Object.values(ifaces)) {
    const a = addrs?.find((x) => x.family === 'IPv4' && !x.internal);
    if (a) return a.address;
  }
  return '127.0.0.1';
}

/** The daemon's `--label KEY=VALUE` list as a map (what placement constraints and node records read). */
export function labelMap(labels: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of labels) {
    const i = l.indexOf('=');
    if (i > 0) out[l.slice(0, i)] = l.slice(i + 1);
  }
  return out;
}

/** The cluster parts: membership, the cluster stacks the API reads and writes, the node agent, the leader's placer. */
export interface Cluster {
  membership: ClusterMembership;
  stacks: ClusterStacks;
  agent: NodeAgent;
  compactor: ClusterCompactor;
  fence: SelfFence;
  fencer: FencerLink;
  placer: ClusterPlacer;
  /** Runs membership, the agent and the placer (while leading): started in that order, stopped in reverse. */
  loops: Manager;
}

export function clusterComponent({ cfg, log }: DaemonEnv) {
  return component({
    id: 'cluster',
    requires: ['paths', 'store', 'supervisor-client', 'metrics'],
    init: async (ctx) => {
      if (!cfg.clusterStore) return null;
      const store = parseClusterStore(cfg.clusterStore, cfg.clusterStoreOpts);
      const addr = advertiseAddress(cfg.clusterDefaultAdvertiseAddr);
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
      });
      const clog = log.child({ component: 'cluster' });
      // The agent is made below; the fence's callbacks reach it once it exists.
      let agent: NodeAgent | undefined;
      const fence = new SelfFence({
        ttlMs: store.ttlSeconds * 1000,
        marginMs: store.fenceMarginSeconds * 1000,
        onFence: (killAt) => agent?.fence(killAt),
        onDeadline: () => agent?.deadline(),
        onRelease: () => agent?.release(),
      });
      const metrics = ctx.get('metrics').controllers;
      const membership = new ClusterMembership({ store, nodeId: loadNodeId(join(cfg.dataRoot, 'cluster', 'node-id')), facts, log: clog, lease: fence, metrics });
      const etcd = () => membership.etcd;
      const supervisor = ctx.get('supervisor-client');
      agent = new NodeAgent({
        store: ctx.get('store'),
        nodeId: membership.nodeId,
        etcd,
        putLeased: (k, v) => membership.putLeased(k, v),
        log: clog.child({ part: 'agent' }),
        fence: { startsAllowed: () => fence.startsAllowed, assignmentsRead: () => fence.assignmentsRead() },
        kill: (id) => supervisor.killTask(id, 9, { all: true }),
      });
      // Should the daemon die, its cluster containers still go by the fence deadline (cmd/fencer.ts).
      const fencer = new FencerLink({
        execRoot: ctx.get('paths').execRoot,
        store: ctx.get('store'),
        deadline: () => fence.leaseAtLeastUntil - store.fenceMarginSeconds * 1000,
        log: clog.child({ part: 'fencer' }),
      });
      const placer = new ClusterPlacer({ etcd, nodes: () => membership.nodes(), term: () => membership.leaderTerm, deposed: (why) => membership.deposed(why), log: clog.child({ part: 'placer' }) });
      membership.on('joined', () => {
        void agent.watch().catch(() => {});
        void placer.watch().catch(() => {});
        agent.rejoined();
        agent.kick();
        placer.kick();
      });
      const compactor = new ClusterCompactor({ etcd, leading: () => membership.isLeader, log: clog.child({ part: 'compactor' }), everyMs: compactEveryMs() });
      membership.on('nodes', () => placer.kick());
      const loops = new Manager({ log: clog });
      loops.add(membership);
      loops.add(agentController(agent).build({ reconciler: agent, log: clog.child({ part: 'agent' }), metrics }));
      // The placer runs only while this node leads: a controller built for each term.
      loops.add(
        new Gated({
          name: 'cluster-placer',
          isOpen: () => membership.isLeader,
          changes: { subscribe: (fn) => (membership.on('leader', fn), () => membership.off('leader', fn)) },
          build: () => placerController(placer).build({ reconciler: placer, log: clog.child({ part: 'placer' }), metrics }),
        }),
      );
      agent.start();
      compactor.start();
      fencer.start();
      await loops.start();
      return { membership, stacks: new ClusterStacks(etcd, () => membership.nodes(), () => placer.assignmentRecords()), agent, placer, compactor, fence, fencer, loops };
    },
    close: async (c) => {
      if (!c) return;
      c.compactor.stop();
      c.fence.stop();
      c.fencer.stop();
      await c.loops.stop();
      c.placer.stop();
      await c.agent.stop();
    },
  });
}

/** The compaction interval: ENGINE_CLUSTER_COMPACT_MS (tests) or five minutes. */
function compactEveryMs(): number {
  const v = Number(process.env.ENGINE_CLUSTER_COMPACT_MS);
  return Number.isInteger(v) && v >= 1000 ? v : COMPACT_EVERY_MS;
}
