// What wakes the cluster's loops, declared beside them (controllers/builder.ts): each is a
// controller of one key on the runner — the work queue's back-off on a failed pass, the
// controller-runtime metrics — fed by its etcd prefixes' watch-fed caches (`etcdPrefix`) and the
// wakes its owner emits. The orchestrator runs only while this node leads (controllers/gate.ts,
// wired in cmd/components/cluster.ts).
import { controller } from '../../controllers/builder.ts';
import type { ClusterMembership } from './membership.ts';
import type { SwarmOrchestrator } from './orchestrator.ts';
import type { TaskRunner } from './task-runner.ts';
import { OVERLAY_KEY, type OverlayNetworks } from './overlay.ts';
import { etcdPrefix } from './prefix-cache.ts';

/** Back-off of a failed pass: etcd away is retried within seconds, never hammered. */
const CLUSTER_BACKOFF = { baseDelayMs: 500, maxDelayMs: 5000, stopTimeoutMs: 2000 };

export const MEMBERSHIP_KEY = 'membership';
export const ORCHESTRATOR_KEY = 'orchestration';
export const TASKS_KEY = 'tasks';

/** This node's record, lease and candidacy: woken by a lost lease, a deposed term, new facts, a canceled watch. */
export function membershipController(m: ClusterMembership) {
  return controller('cluster-membership')
    .forKeys([MEMBERSHIP_KEY])
    .source(m.wakes)
    .workers(1)
    .withOptions({ ...CLUSTER_BACKOFF, quietRetries: true });
}

/** The leader's swarm orchestrator: woken by any change of services, tasks, reports, node specs, and by the nodes'. */
export function orchestratorController(o: SwarmOrchestrator) {
  const b = controller('swarm-orchestrator').forKeys([ORCHESTRATOR_KEY]).source(o.wakes).workers(1).withOptions(CLUSTER_BACKOFF);
  for (const c of o.caches) b.source(etcdPrefix(c), () => ORCHESTRATOR_KEY);
  return b;
}

/** This node's swarm tasks run as containers: woken by any change under its node-task prefix, by its containers' changes, by a release. */
export function taskRunnerController(r: TaskRunner) {
  return controller('swarm-tasks')
    .forKeys([TASKS_KEY])
    .source(etcdPrefix(r.assigned), () => TASKS_KEY)
    .source(r.wakes)
    .workers(1)
    .withOptions({ ...CLUSTER_BACKOFF, quietRetries: true });
}

/** This node's part of the overlay networks: woken by any node's endpoint keys, its own claims and instances. */
export function overlayController(o: OverlayNetworks) {
  return controller('swarm-overlay')
    .forKeys([OVERLAY_KEY])
    .source(etcdPrefix(o.endpoints), () => OVERLAY_KEY)
    .source(o.wakes)
    .workers(1)
    .withOptions({ ...CLUSTER_BACKOFF, quietRetries: true });
}
