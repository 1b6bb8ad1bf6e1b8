// What wakes the runtime reconciler: every change of a runtime record, and a container's change
// when the runtime it names has no record any more (its wrapper goes once no container runs on it).
import { controller, type MapContext } from '../../controllers/builder.ts';
import type { ContainerResource } from '../../store/kinds/container.ts';
import { Containers } from '../../store/kinds/container.ts';
import { Runtimes } from '../../store/kinds/runtime.ts';

/** A container wakes its runtime only when that runtime's record is gone. */
export function removedRuntimeOf(c: ContainerResource, { store }: MapContext): string | null {
  const rt = c.spec.hostConfig.Runtime;
  return rt && !store.get(Runtimes, rt) ? rt : null;
}

export const runtimeController = controller('runtime').for(Runtimes).watches(Containers, removedRuntimeOf).workers(1);
