// What wakes the network reconciler: every change of a network record. One worker: networks share
// the host's iptables chains and bridges, and their reconciles are short.
import { controller } from '../../controllers/builder.ts';
import { Networks } from '../../store/kinds/network.ts';

export const networkController = controller('network').for(Networks).workers(1);
