// What wakes the stack reconciler: a change of a stack record (PUT, DELETE), and a change of a
// container a stack owns (its owner reference names the stack): made, removed, stopped or killed.
import { controller } from '../../controllers/builder.ts';
import { Containers } from '../../store/kinds/container.ts';
import { Stacks } from '../../store/kinds/stack.ts';
import { stackOf } from '../../store/kinds/stack.ts';

export const stackController = controller('stack')
  .for(Stacks, { specChangesOnly: true })
  .owns(Containers, (c) => stackOf(c.spec, c.spec.config.Labels))
  .workers(2);
