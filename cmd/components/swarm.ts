// The node's swarm (cmd/swarm/node.ts): made by `swarm init` (on a managed etcd member, or in
// --cluster-store's etcd) or `swarm join`, brought back at start while the node is in one (in the
// background: the daemon does not wait for its etcd), its member and membership stopped at shutdown.
import { parseClusterStore } from '../../lib/cluster/store-url.ts';
import { SwarmNode } from '../swarm/node.ts';
import { component } from './registry.ts';
import type { DaemonEnv } from './env.ts';

export function swarmComponent({ cfg, log }: DaemonEnv) {
  return component({
    id: 'swarm',
    requires: ['paths', 'cluster', 'store', 'log-reader'],
    init: async (ctx) => {
      const node = new SwarmNode({
        dataRoot: cfg.dataRoot,
        execRoot: ctx.get('paths').execRoot,
        defaultAdvertiseAddr: cfg.clusterDefaultAdvertiseAddr,
        holder: ctx.get('cluster'),
        ...(cfg.clusterStore ? { clusterStore: parseClusterStore(cfg.clusterStore, cfg.clusterStoreOpts) } : {}),
        log: log.child({ component: 'swarm' }),
        logs: { store: ctx.get('store'), reader: ctx.get('log-reader') },
      });
      await node.resume();
      return node;
    },
    close: (node) => node.close(),
  });
}
