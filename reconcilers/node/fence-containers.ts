// What a node does to its cluster containers when its lease cannot be renewed (./self-fence.ts
// drives it): each running one stopped at once, with what is left until the fence deadline as its
// stop timeout; at the deadline, any that still has a process killed. The cluster stacks' agent
// (./agent.ts) and the swarm's task runner (./task-runner.ts) fence theirs with these.
import type { Logger } from 'pino';
import { Containers, type ContainerResource } from '../../store/kinds/container.ts';
import type { Store } from '../../store/store.ts';

/** Stops the running ones, SIGKILL by `killAt` (monotonic ms) whatever their grace; how many. */
export function stopForFence(store: Pick<Store, 'updateSpec'>, containers: Iterable<ContainerResource>, killAt: number): number {
  const timeout = Math.max(0, Math.floor((killAt - performance.now()) / 1000));
  let stopped = 0;
  for (const c of containers) {
    if (c.spec.desired !== 'running') continue;
    store.updateSpec(Containers, c.name, (sp) => ({ ...sp, desired: 'stopped', stopOptions: { timeout } }));
    stopped++;
  }
  return stopped;
}

/** The fence deadline: whichever still has a process is killed. */
export function killAtDeadline(containers: Iterable<ContainerResource>, kill: ((id: string) => Promise<void>) | undefined, log: Logger): void {
  for (const c of containers) {
    if (!c.status.pid) continue;
    log.warn({ container: c.name }, 'fence deadline: killing a cluster container still running');
    void kill?.(c.name).catch((err: unknown) => log.debug({ err: err instanceof Error ? err.message : String(err), container: c.name }, 'fence kill failed'));
  }
}
