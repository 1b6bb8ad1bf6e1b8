// Where a container's files are: its directory under the data root (/etc files, logs, a
// shareable /dev/shm) and its FIFOs under the exec root. One place, as every step finds them.
import { join } from 'node:path';
import type { ContainerReconcilerDeps } from './deps.ts';

export class ContainerPaths {
  private readonly deps: Pick<ContainerReconcilerDeps, 'dataRoot' | 'execRoot'>;

  constructor(deps: Pick<ContainerReconcilerDeps, 'dataRoot' | 'execRoot'>) {
    this.deps = deps;
  }

  containerDir(id: string): string {
    return join(this.deps.dataRoot, 'containers', id);
  }

  /** The host-side /dev/shm of an IPC-shareable container. */
  shmDir(id: string): string {
    return join(this.containerDir(id), 'shm');
  }

  fifoDir(id: string): string {
    return join(this.deps.execRoot, 'supervisor', id);
  }
}
