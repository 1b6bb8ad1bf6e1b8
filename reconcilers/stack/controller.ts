// What wakes the stack reconciler: a change of a stack record (PUT, DELETE), and a change of a
// container a stack owns (its owner label names the stack): removed, stopped or killed out of band.
import { controller } from '../../controllers/builder.ts';
import { LABEL } from '../../lib/compose/normalize.ts';
import { Containers } from '../../store/kinds/container.ts';
import { Stacks } from '../../store/kinds/stack.ts';

export const stackController = controller('stack')
  .for(Stacks, { specChangesOnly: true })
  .owns(Containers, (c) => c.spec.config.Labels?.[LABEL.owner])
  .workers(2);
