import type { RestartPolicy } from '../../store/kinds/container.ts';

/** Whether a container that just exited should be restarted (the reference daemon's rules). */
export function decideRestart(policy: RestartPolicy, exitCode: number, restartCount: number, manuallyStopped: boolean): boolean {
  if (manuallyStopped) return false;
  switch (policy.Name) {
    case 'always':
    case 'unless-stopped':
      return true;
    case 'on-failure':
      return exitCode !== 0 && (policy.MaximumRetryCount <= 0 || restartCount < policy.MaximumRetryCount);
    default:
      return false;
  }
}
