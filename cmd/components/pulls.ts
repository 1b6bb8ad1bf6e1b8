// Pulls as desired state: the pull reconciler (kind 'pull') under its controller (declared in
// reconcilers/image/controller.ts), started with
// the others by 'running'. Its close aborts the downloads still under way: their records stay
// wanted, and the next start resumes them.
import { component } from './registry.ts';
import type { DaemonEnv } from './env.ts';
import { PullReconciler } from '../../reconcilers/image/pull-reconciler.ts';
import { pullController } from '../../reconcilers/image/controller.ts';


export function pullComponent({ log }: DaemonEnv) {
  return component({
    id: 'pulls',
    requires: ['store', 'distribution', 'controllers', 'metrics'],
    init: (ctx) => {
      const store = ctx.get('store');
      const pulls = new PullReconciler(store, ctx.get('distribution'), { log: log.child({ component: 'pulls' }) });
      // As many pulls at once as the registry limits allow; each is a job, so a worker is never held.
      ctx.get('controllers').manager.add(pullController(pulls).build({ store, reconciler: pulls, log, metrics: ctx.get('metrics').controllers }));
      return pulls;
    },
    close: (pulls) => pulls.shutdown(),
  });
}
