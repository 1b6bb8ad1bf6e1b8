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
import { ClusterMembership, loadNodeId, type NodeFacts } from '../../reconcilers/node/membership.ts';
import { component } from '../components.ts';
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

const labelMap = (labels: readonly string[]) => Object.fromEntries(labels.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

export function clusterComponent({ cfg, log }: DaemonEnv) {
  return component<ClusterMembership | null>({
    id: 'cluster',
    requires: ['paths'],
    init: async () => {
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
      const membership = new ClusterMembership({ store, nodeId: loadNodeId(join(cfg.dataRoot, 'cluster', 'node-id')), facts, log: log.child({ component: 'cluster' }) });
      await membership.start();
      return membership;
    },
    close: async (m) => {
      await m?.stop();
    },
  });
}
