// What wakes the container reconciler: its records' spec changes; a primary endpoint of its being
// disconnected (the reconciler takes back what the start step did for that network: published
// ports, link rules, status.endpoint); a run's end (supervisor exit event or Wait); a healthcheck
// probe's end.
import { controller, type MapFn } from '../../controllers/builder.ts';
import { Containers } from '../../store/kinds/container.ts';
import { Endpoints } from '../../store/kinds/endpoint.ts';
import type { ContainerReconciler } from './reconciler.ts';
import type { RunRegistry } from './runs.ts';

/** The container whose primary endpoint was disconnected (marked removed, or gone). */
export const disconnectedPrimary: MapFn<typeof Endpoints> = (e, { type }) =>
  e.spec.primary && (type === 'delete' || e.spec.desired === 'removed') ? e.spec.containerId : undefined;

export function containerController(runs: Pick<RunRegistry, 'exits'>, reconciler: Pick<ContainerReconciler, 'probeEnds'>) {
  return controller('container')
    .for(Containers, { specChangesOnly: true })
    .owns(Endpoints, disconnectedPrimary)
    .source(runs.exits)
    .source(reconciler.probeEnds)
    .workers(16);
}
