// What wakes the image and pull reconcilers. Images: every change of an image record (its status
// included: a verification that failed is retried by the back-off). Pulls: a pull record's spec
// change, and the end of its download job (the reconcile that follows records the outcome); each
// pull is a job beside the reconcile, so two workers never wait on the network.
import { controller } from '../../controllers/builder.ts';
import { Images } from '../../store/kinds/image.ts';
import { Pulls } from '../../store/kinds/pull.ts';
import type { PullReconciler } from './pull-reconciler.ts';

export const imageController = controller('image').for(Images).workers(2);

export function pullController(pulls: Pick<PullReconciler, 'jobEnds'>) {
  return controller('pull').for(Pulls, { specChangesOnly: true }).source(pulls.jobEnds).workers(2);
}
