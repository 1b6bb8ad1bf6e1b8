// What wakes the endpoint reconciler: its records' spec changes; a change of an endpoint's container
// (its run started or ended, it was removed) and of its network (it appeared or went).
import { controller, type MapFn } from '../../controllers/builder.ts';
import { Containers } from '../../store/kinds/container.ts';
import { ENDPOINTS_BY_CONTAINER, Endpoints } from '../../store/kinds/endpoint.ts';
import { Networks } from '../../store/kinds/network.ts';

/** The endpoints of the container (by the store's index: a container's status moves often). */
export const endpointsOfContainer: MapFn<typeof Containers> = (c, { store }) => store.byIndex(ENDPOINTS_BY_CONTAINER, c.name).map((e) => e.name);

/** The endpoints on the network. */
export const endpointsOnNetwork: MapFn<typeof Networks> = (n, { store }) =>
  store
    .list(Endpoints)
    .filter((e) => e.spec.networkId === n.name)
    .map((e) => e.name);

export const endpointController = controller('endpoint')
  .for(Endpoints, { specChangesOnly: true })
  .watches(Containers, endpointsOfContainer)
  .watches(Networks, endpointsOnNetwork)
  .workers(4);
