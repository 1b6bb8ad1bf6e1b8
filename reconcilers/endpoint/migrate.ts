// Containers written before endpoints were records kept every network they were on in the
// EndpointsConfig of their spec (and the plugged ones in status.extraEndpoints). Rewritten once at
// start-up, before the controllers start: each network becomes an endpoint record (the NetworkMode
// one marked primary; the others leave the spec and are plugged into the running container by the
// endpoint reconciler); the old status field goes.
import { EMPTY_ENDPOINT_STATUS, ENDPOINT_KIND, endpointName, endpointsFromCreate, type EndpointSpec, type EndpointStatus } from '../../store/endpoint-types.ts';
import type { ContainerSpec, ContainerStatus } from '../../store/types.ts';
import { KIND } from '../../store/types.ts';
import { findUserNetwork } from '../network/attacher.ts';
import type { NetworkStore } from '../network/deps.ts';

const DONE = 'endpoint-records';

/** Answers how many containers it rewrote. */
export function migrateEndpoints(store: Pick<NetworkStore, 'list' | 'get' | 'byIndex' | 'create' | 'updateSpec' | 'updateStatus' | 'transaction'>): number {
  const find = (ref: string) => {
    try {
      return findUserNetwork(store, ref);
    } catch {
      return undefined;
    }
  };
  // Once: afterwards a container without a record of its NetworkMode network was disconnected from it.
  if (store.get(KIND.migration, DONE)) return 0;
  let n = 0;
  for (const c of store.list<ContainerSpec, ContainerStatus & { extraEndpoints?: unknown }>(KIND.container)) {
    const split = endpointsFromCreate(c.spec.hostConfig.NetworkMode, c.spec.networkingConfig, find);
    const stale = c.status.extraEndpoints !== undefined;
    const wanted = [...(split.primary ? [{ ...split.primary, primary: true }] : []), ...split.extras.map((x) => ({ ...x, primary: false }))];
    const missing = wanted.filter((w) => !store.get(ENDPOINT_KIND, endpointName(c.name, w.net.spec.id)));
    if (!missing.length && !stale) continue;
    store.transaction(() => {
      for (const { net, config, primary } of missing) {
        const name = endpointName(c.name, net.spec.id);
        const spec: EndpointSpec = { containerId: c.name, networkId: net.spec.id, networkName: net.spec.name, config, ...(primary ? { primary } : {}), desired: 'present' };
        store.create<EndpointSpec, EndpointStatus>(ENDPOINT_KIND, name, spec, EMPTY_ENDPOINT_STATUS);
      }
      if (split.extras.length && missing.length) store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, c.name, (sp) => ({ ...sp, networkingConfig: split.networkingConfig }));
      if (stale) {
        store.updateStatus<ContainerSpec, ContainerStatus & { extraEndpoints?: unknown }>(KIND.container, c.name, (s) => {
          const { extraEndpoints: _gone, ...rest } = s;
          return rest;
        });
      }
    });
    n++;
  }
  store.create(KIND.migration, DONE, { at: new Date().toISOString() }, {});
  return n;
}
