// The API side of endpoint records (store/kinds/endpoint.ts): a container on a network beside its
// NetworkMode one. Connect writes the record (desired present), disconnect marks it removed; the
// endpoint reconciler plugs and unplugs. The waits here are how a request answers once the
// reconciler has done it (or 503 when it has not in time).
import { unavailable } from '../../lib/errors.ts';
import { endpointName, endpointsOfContainer, isAttachedTo, newEndpoint, type EndpointConfig, type EndpointNet, Endpoints, type EndpointResource } from '../../store/kinds/endpoint.ts';
import { Containers, type ContainerResource } from '../../store/kinds/container.ts';
import type { ApiStore } from '../containers/store.ts';
import { settle, waitUntil } from '../write-and-wait.ts';

type Net = EndpointNet;

/** The container's endpoint record on `net` that is not being removed, if any. */
export function endpointOn(store: Pick<ApiStore, 'get'>, containerId: string, networkId: string): EndpointResource | undefined {
  const r = store.get(Endpoints, endpointName(containerId, networkId));
  return r && r.spec.desired === 'present' ? r : undefined;
}

/** The container's endpoints that are wanted (not being removed), its NetworkMode one included. */
export function wantedEndpoints(store: Pick<ApiStore, 'byIndex'>, containerId: string): EndpointResource[] {
  return endpointsOfContainer(store, containerId).filter((e) => e.spec.desired === 'present');
}

/** Connect: the record is written (after a removal of an earlier one has finished). */
export async function connectEndpoint(store: ApiStore, containerId: string, net: Net, config: EndpointConfig, timeoutMs: number | undefined, primary = false): Promise<void> {
  const name = endpointName(containerId, net.spec.id);
  const leaving = await settle(store, Endpoints, name, (r) => !r || r.spec.desired === 'present', { timeoutMs });
  if (leaving) throw unavailable(`container ${containerId} is still being disconnected from network ${net.spec.name}`);
  const e = newEndpoint(containerId, net, config, primary);
  store.create(Endpoints, e.name, e.spec, e.status);
}

/** Disconnect: the record is marked removed; the reconciler unplugs it and deletes it. */
export function disconnectEndpoint(store: ApiStore, r: EndpointResource): void {
  store.updateSpec(Endpoints, r.name, (sp) => ({ ...sp, desired: 'removed' }));
}

const runningPid = (c: ContainerResource | undefined) =>
  c && (c.status.phase === 'running' || c.status.phase === 'paused') ? c.status.pid : 0;

/**
 * Waits until the endpoint is plugged into the container's run (`present`), or gone (`!present`);
 * a container that is not running needs neither. 503 when the reconciler has not done it in time.
 */
export async function waitEndpoint(store: ApiStore, containerId: string, net: Net, present: boolean, timeoutMs: number | undefined): Promise<void> {
  const name = endpointName(containerId, net.spec.id);
  const done = (r: EndpointResource) => {
    const pid = runningPid(store.get(Containers, containerId));
    if (!pid) return true;
    return present ? r.spec.desired !== 'present' || isAttachedTo(r.status, pid) || r.status.phase === 'failed' : false;
  };
  const notInTime = (r: EndpointResource | undefined) => {
    const why = r?.status.error ? `: ${r.status.error}` : '';
    return unavailable(`container ${containerId} was not ${present ? 'connected to' : 'disconnected from'} network ${net.spec.name} in time${why}`);
  };
  const r = await waitUntil(store, Endpoints, name, done, { timeoutMs, timedOut: notInTime });
  if (present && r?.status.phase === 'failed') throw notInTime(r);
}

/** After a start: waits (bounded) until the container's networks are plugged into (or adopted by) the new run. */
export async function waitEndpointsPlugged(store: ApiStore, containerId: string, timeoutMs: number): Promise<void> {
  for (const e of wantedEndpoints(store, containerId)) {
    await settle(
      store,
      Endpoints,
      e.name,
      (r) => {
        const pid = runningPid(store.get(Containers, containerId));
        return !r || !pid || r.spec.desired !== 'present' || r.status.phase === 'failed' || (r.status.phase === 'detached' && r.status.observedGeneration >= r.generation && r.status.conditions[0]?.reason === 'NetworkNotFound') || isAttachedTo(r.status, pid);
      },
      { timeoutMs },
    );
  }
}
