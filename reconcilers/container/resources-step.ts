// `docker update` of a running container: the HostConfig's cgroup limits differ from what the
// task has (status.appliedResources, set at each start), so the task gets them. Not a lifecycle
// state: a step of the reconcile while the container runs or is paused. A failure is recorded for
// the API (which puts the old limits back), not retried; a task that ended as it was updated (its
// exit not yet collected) is no failure: its next run starts with the spec's limits, as the
// reference updates a stopped container.
import { isCode } from '../../lib/errors.ts';
import type { ContainerSpec } from '../../store/kinds/container.ts';
import type { ContainerReconcilerDeps } from './deps.ts';
import type { StagedStatus } from './staged-status.ts';

type Deps = Pick<ContainerReconcilerDeps, 'spec' | 'supervisor'>;

export async function applyResources(id: string, spec: ContainerSpec, deps: Deps, status: StagedStatus): Promise<void> {
  const want = JSON.stringify(deps.spec.updateResources(spec.hostConfig));
  const { appliedResources: applied, updateError } = status.get(id);
  if (applied === want) {
    if (updateError) status.stage(id, (s) => ({ ...s, updateError: '' }));
    return;
  }
  if (applied === undefined) {
    // A run started before limits were recorded: what it started with is the spec's.
    status.stage(id, (s) => ({ ...s, appliedResources: want }));
    return;
  }
  try {
    await deps.supervisor.updateTask(id, JSON.parse(want) as object);
    status.stage(id, (s) => ({ ...s, appliedResources: want, updateError: '' }));
  } catch (err) {
    if (await taskEnded(id, deps)) status.stage(id, (s) => ({ ...s, appliedResources: want, updateError: '' }));
    else status.stage(id, (s) => ({ ...s, updateError: err instanceof Error ? err.message : String(err) }));
  }
}

async function taskEnded(id: string, deps: Deps): Promise<boolean> {
  try {
    return (await deps.supervisor.getTask(id)).status === 'STOPPED';
  } catch (err) {
    return isCode(err, 'NotFound');
  }
}
