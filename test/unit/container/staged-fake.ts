// A StagedStatus over one in-memory status, for the tests of reconcile steps that stage changes.
import type { StagedStatus } from '../../../reconcilers/container/staged-status.ts';
import type { ContainerStatus } from '../../../store/kinds/container.ts';

export function stagedFake(initial: Partial<ContainerStatus>): StagedStatus & { cur: ContainerStatus } {
  const box = { cur: initial as ContainerStatus };
  return Object.assign(box, {
    get: () => box.cur,
    stage: (_id: string, fn: (s: ContainerStatus) => ContainerStatus) => {
      box.cur = fn(box.cur);
    },
  }) as unknown as StagedStatus & { cur: ContainerStatus };
}
