// The node's swarm (cmd/swarm/node.ts): made by `swarm init`, brought back at start while the node
// is in one (in the background: the daemon does not wait for its etcd member), its member and
// membership stopped at shutdown.
import { SwarmNode } from '../swarm/node.ts';
import { component } from './registry.ts';
import type { DaemonEnv } from './env.ts';

export function swarmComponent({ cfg, log }: DaemonEnv) {
  return component({
    id: 'swarm',
    requires: ['paths', 'cluster'],
    init: async (ctx) => {
      const node = new SwarmNode({
        dataRoot: cfg.dataRoot,
        execRoot: ctx.get('paths').execRoot,
        defaultAdvertiseAddr: cfg.clusterDefaultAdvertiseAddr,
        holder: ctx.get('cluster'),
        log: log.child({ component: 'swarm' }),
      });
      // A node on --cluster-store's etcd is in that cluster already (docs/cluster.md).
      if (!cfg.clusterStore) await node.resume();
      return node;
    },
    close: (node) => node.close(),
  });
}
