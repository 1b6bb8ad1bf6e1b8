// What wakes the exec reconciler: its records' spec changes (create, a start asked for); a change
// of an exec's container (its run ended, it was removed: created execs go, and all of them with the
// container); an exec's process ending (the process registry's exits).
import { controller, type MapFn } from '../../controllers/builder.ts';
import type { Source } from '../../controllers/source.ts';
import { Containers } from '../../store/kinds/container.ts';
import { EXECS_BY_CONTAINER, Execs } from '../../store/kinds/exec.ts';

/** The execs of the container (by the store's index). */
export const execsOfChangedContainer: MapFn<typeof Containers> = (c, { store }) => store.byIndex(EXECS_BY_CONTAINER, c.name).map((e) => e.name);

export function execController(exits: Source) {
  return controller('exec').for(Execs, { specChangesOnly: true }).watches(Containers, execsOfChangedContainer).source(exits).workers(4);
}
