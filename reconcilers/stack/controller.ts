// What wakes the stack reconciler: a change of a stack record (PUT, DELETE, its own status).
import { controller } from '../../controllers/builder.ts';
import { Stacks } from '../../store/kinds/stack.ts';

export const stackController = controller('stack').for(Stacks, { specChangesOnly: true }).workers(1);
