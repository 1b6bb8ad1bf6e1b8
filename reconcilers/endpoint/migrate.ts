// Containers written before endpoints were records kept every network they were on in the
// EndpointsConfig of their spec (and the plugged ones in status.extraEndpoints). Rewritten once at
// start-up, before the controllers start: each network becomes an endpoint record (the NetworkMode
// one marked primary; the others leave the spec and are plugged into the running container by the
// endpoint reconciler); the old status field goes.
import { EMPTY_ENDPOINT_STATUS, endpointName, endpointsFromCreate, type EndpointSpec, Endpoints } from '../../store/kinds/endpoint.ts';
import { type ContainerSpec, type ContainerStatus, Containers } from '../../store/kinds/container.ts';
import type { Resource } from '../../store/types.ts';
import type { Store } from '../../store/store.ts';
import { findNetwork, isBridged } from '../../store/kinds/network.ts';
import { Migrations } from '../../store/kinds/migration.ts';

const DONE = 'endpoint-records';

/** Answers how many containers it rewrote. */
export function migrateEndpoints(store: Pick<Store, 'list' | 'get' | 'byIndex' | 'create' | 'updateSpec' | 'updateStatus' | 'transaction'>): number {
  // A user-defined (bridge) network by id, name or id prefix; undefined for anything else.
  const find = (ref: string) => {
    try {
      const net = findNetwork(store, ref);
      // As the attacher's findUserNetwork: a network of another driver is not found.
      return isBridged(net.spec) ? net : undefined;
    } catch {
      return undefined;
    }
  };
  // Once: afterwards a container without a record of its NetworkMode network was disconnected from it.
  if (store.get(Migrations, DONE)) return 0;
  let n = 0;
  for (const c of store.list(Containers) as Array<Resource<ContainerSpec, ContainerStatus & { extraEndpoints?: unknown }>>) {
    const split = endpointsFromCreate(c.spec.hostConfig.NetworkMode, c.spec.networkingConfig, find);
    const stale = c.status.extraEndpoints !== undefined;
    const wanted = [...(split.primary ? [{ ...split.primary, primary: true }] : []), ...split.extras.map((x) => ({ ...x, primary: false }))];
    const missing = wanted.filter((w) => !store.get(Endpoints, endpointName(c.name, w.net.spec.id)));
    if (!missing.length && !stale) continue;
    store.transaction(() => {
      for (const { net, config, primary } of missing) {
        const name = endpointName(c.name, net.spec.id);
        const spec: EndpointSpec = { containerId: c.name, networkId: net.spec.id, networkName: net.spec.name, config, ...(primary ? { primary } : {}), desired: 'present' };
        store.create(Endpoints, name, spec, EMPTY_ENDPOINT_STATUS);
      }
      if (split.extras.length && missing.length) store.updateSpec(Containers, c.name, (sp) => ({ ...sp, networkingConfig: split.networkingConfig }));
      if (stale) {
        store.updateStatus(Containers, c.name, (s: ContainerStatus & { extraEndpoints?: unknown }) => {
          const { extraEndpoints: _gone, ...rest } = s;
          return rest;
        });
      }
    });
    n++;
  }
  store.create(Migrations, DONE, { at: new Date().toISOString() }, {});
  return n;
}
