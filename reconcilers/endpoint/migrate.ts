// Containers written before endpoints were records kept every network they were on in the
// EndpointsConfig of their spec (and the plugged ones in status.extraEndpoints). Rewritten once at
// start-up, before the controllers start: each network beside the NetworkMode one becomes an
// endpoint record (plugged into the running container by the endpoint reconciler), and leaves the
// spec; the old status field goes.
import { EMPTY_ENDPOINT_STATUS, ENDPOINT_KIND, endpointName, splitEndpointsConfig, type EndpointSpec, type EndpointStatus } from '../../store/endpoint-types.ts';
import type { ContainerSpec, ContainerStatus } from '../../store/types.ts';
import { KIND } from '../../store/types.ts';
import { findUserNetwork } from '../network/attacher.ts';
import type { NetworkStore } from '../network/deps.ts';

/** Answers how many containers it rewrote. */
export function migrateEndpoints(store: Pick<NetworkStore, 'list' | 'get' | 'create' | 'updateSpec' | 'updateStatus' | 'transaction'>): number {
  const find = (ref: string) => {
    try {
      return findUserNetwork(store, ref);
    } catch {
      return undefined;
    }
  };
  let n = 0;
  for (const c of store.list<ContainerSpec, ContainerStatus & { extraEndpoints?: unknown }>(KIND.container)) {
    const split = splitEndpointsConfig(c.spec.hostConfig.NetworkMode, c.spec.networkingConfig, find);
    const stale = c.status.extraEndpoints !== undefined;
    if (!split.extras.length && !stale) continue;
    store.transaction(() => {
      for (const { net, config } of split.extras) {
        const name = endpointName(c.name, net.spec.id);
        if (store.get(ENDPOINT_KIND, name)) continue;
        const spec: EndpointSpec = { containerId: c.name, networkId: net.spec.id, networkName: net.spec.name, config, desired: 'present' };
        store.create<EndpointSpec, EndpointStatus>(ENDPOINT_KIND, name, spec, EMPTY_ENDPOINT_STATUS);
      }
      if (split.extras.length) store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, c.name, (sp) => ({ ...sp, networkingConfig: split.networkingConfig }));
      if (stale) {
        store.updateStatus<ContainerSpec, ContainerStatus & { extraEndpoints?: unknown }>(KIND.container, c.name, (s) => {
          const { extraEndpoints: _gone, ...rest } = s;
          return rest;
        });
      }
    });
    n++;
  }
  return n;
}
