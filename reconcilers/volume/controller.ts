// What wakes the volume reconciler: every change of a volume record. A volume being removed while a
// container still names it waits on the machine's timer (requeue), not on container watches.
import { controller } from '../../controllers/builder.ts';
import { Volumes } from '../../store/kinds/volume.ts';

export const volumeController = controller('volume').for(Volumes).workers(2);
