// The stack reconciler's wiring: it writes its containers, networks and volumes through admission
// (reconcilers/stack/engine.ts: the create routes' checks and defaults, no HTTP request), and runs
// under the Manager after the container controller's first pass.
import { cpus, hostname, machine, totalmem } from 'node:os';
import { join } from 'node:path';
import type { NodeFacts } from '../../lib/compose/placement.ts';
import { engineId } from '../system-info.ts';
import { stackController } from '../../reconcilers/stack/controller.ts';
import { checkNetworkRemovable } from '../../api/networks/views.ts';
import { storeEngine } from '../../reconcilers/stack/engine.ts';
import { StackReconciler } from '../../reconcilers/stack/reconciler.ts';
import { component } from './registry.ts';
import type { DaemonEnv } from './env.ts';
import { labelMap } from './cluster.ts';

/** The longest the stack controller waits for the container controller's first pass (then starts anyway). */
const SYNC_WAIT_MS = 30_000;

/** This daemon as a node, for a stack's placement constraints and reservations. */
function nodeFacts(cfg: DaemonEnv['cfg'], id: string): NodeFacts {
  return { id, hostname: hostname(), role: 'manager', os: 'linux', arch: machine(), labels: labelMap(cfg.labels ?? []), cpus: cpus().length, memoryBytes: totalmem() };
}

export function stacksComponent({ cfg, log }: DaemonEnv) {
  return component({
    id: 'stacks',
    requires: ['admission', 'store', 'paths', 'metrics', 'controllers'],
    init: async (ctx) => {
      const store = ctx.get('store');
      const id = engineId(cfg.dataRoot);
      // A network's removal is refused as DELETE /networks/{id} refuses it.
      const engine = storeEngine({ ...ctx.get('admission'), checkNetworkRemovable: (net) => checkNetworkRemovable(store, net) });
      const reconciler = new StackReconciler(store, { engine, filesRoot: join(ctx.get('paths').dataRoot, 'stacks'), node: () => nodeFacts(cfg, id) });
      const controller = stackController.build({ store, reconciler, log: log.child({ component: 'stacks' }), metrics: ctx.get('metrics').controllers });
      // Stacks read their containers' status: started once the container controller has looked at
      // each container once (after a restart or a kill -9 the store still says what the last run saw).
      const { manager, containers } = ctx.get('controllers');
      manager.add(controller, { after: [containers], waitMs: SYNC_WAIT_MS });
      return { controller, manager };
    },
    close: ({ controller, manager }) => manager.remove(controller),
  });
}
