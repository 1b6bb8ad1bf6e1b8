// The network side of a container's runs: the endpoint a start plugs in as eth0, the run's own
// namespace (made by path before its task, reference-style), the interface and published ports
// plumbed into it, and all of it taken away again when the run ends or the endpoint leaves.
import { join } from 'node:path';
import type { ContainerEndpoint, ContainerSpec, PublishedPort } from '../../store/kinds/container.ts';
import { endpointName, primaryEndpoint, Endpoints } from '../../store/kinds/endpoint.ts';
import { IpamAllocations } from '../../store/kinds/ipam-allocation.ts';
import type { ReconcilerStore } from '../store-like.ts';
import type { ContainerReconcilerDeps } from './deps.ts';
import { primaryRequest } from './endpoint-config.ts';
import { renameHostsEntry } from './links.ts';
import type { StagedStatus } from './staged-status.ts';

export class RunNetwork {
  private readonly store: ReconcilerStore;
  private readonly deps: ContainerReconcilerDeps;
  private readonly status: StagedStatus;

  constructor(store: ReconcilerStore, deps: ContainerReconcilerDeps, status: StagedStatus) {
    this.store = store;
    this.deps = deps;
    this.status = status;
  }

  /**
   * The endpoint the start step plugs in as eth0: the NetworkMode network's, while its primary
   * endpoint record is wanted (a container disconnected from it runs without it). Its address is
   * claimed at create; one connected again after a disconnect claims it here.
   */
  async primaryEndpointOf(id: string, spec: ContainerSpec): Promise<ContainerEndpoint | null> {
    const have = this.status.get(id).endpoint ?? null;
    const rec = primaryEndpoint(this.store, id);
    if (!rec) {
      // Host, none and container: have no record (and no endpoint); a bridge network's was disconnected.
      if (have) this.status.stage(id, (s) => ({ ...s, endpoint: null }));
      return null;
    }
    // The address claimed at create, unless a disconnect (while stopped) let it go since.
    if (have?.NetworkID === rec.spec.networkId && this.store.get(IpamAllocations, `${have.NetworkID}/${have.IPAddress}`)?.spec.containerId === id) return have;
    const ep = (await this.deps.network?.allocate(id, spec.hostConfig.NetworkMode, primaryRequest(spec, rec))) ?? null;
    if (ep && have?.IPAddress && have.IPAddress !== ep.IPAddress) renameHostsEntry(this.status.get(id).hostsPath, have.IPAddress, ep.IPAddress);
    this.status.stage(id, (s) => ({ ...s, endpoint: ep }));
    return ep;
  }

  /**
   * While it runs: a primary endpoint disconnected (its record marked removed or gone) takes what
   * the start step did for it away (published ports, link rules, status.endpoint); the endpoint
   * reconciler unplugs it and frees the address.
   */
  async leavePrimary(id: string): Promise<void> {
    const ep = this.status.get(id).endpoint;
    // Its record is named by the network it is on: one lookup on every reconcile of a running container.
    const rec = ep?.IPAddress ? this.store.get(Endpoints, endpointName(id, ep.NetworkID)) : undefined;
    if (!ep?.IPAddress || (rec?.spec.primary && rec.spec.desired === 'present')) return;
    await this.deps.ports?.unpublish(id).catch((err) => this.deps.log.warn({ err, id }, 'releasing published ports failed'));
    await this.deps.links?.revoke(id).catch((err) => this.deps.log.warn({ err, id }, 'revoking link rules failed'));
    this.status.stage(id, (s) => ({ ...s, endpoint: null, ports: [] }));
  }

  /**
   * The run's network, once `after` (the task's creation asked for): the interface plugged into
   * namespace `ns` (a mounted namespace or a pid) and the host ports published, side by side (the
   * ports need only the address). Settles only once both have: a failure leaves nothing under
   * way for the caller's clean-up to race.
   */
  async plumb(id: string, spec: ContainerSpec, ep: ContainerEndpoint, ns: string | number, after: Promise<void>): Promise<PublishedPort[]> {
    await after;
    // Both settle before either's failure is thrown: a publish refused while the attach is under
    // way has its handler from the start (not an unhandled rejection) and nothing is left running.
    const [published, attached] = await Promise.allSettled([
      this.deps.ports ? this.publishPorts(id, spec, ep) : Promise.resolve([]),
      Promise.resolve(this.deps.network?.attach(id, ns, ep)),
    ]);
    if (attached.status === 'rejected') throw attached.reason;
    if (published.status === 'rejected') throw published.reason;
    return published.value;
  }

  /** Where the namespace of a container's run is mounted while it runs. */
  netnsPath(id: string): string {
    return join(this.deps.execRoot, 'netns', id);
  }

  private publishPorts(id: string, spec: ContainerSpec, ep: ContainerEndpoint) {
    return this.deps.ports!.publish({
      containerId: id,
      containerName: spec.name.replace(/^\//, ''),
      endpoint: ep,
      portBindings: spec.hostConfig.PortBindings,
      publishAll: !!spec.hostConfig.PublishAllPorts,
      exposedPorts: spec.config.ExposedPorts,
    });
  }

  /** The run's own network namespace, if it had one (the kernel takes its interface with it). */
  releaseNetns(id: string): Promise<void> {
    return this.deps.netns?.remove(this.netnsPath(id)) ?? Promise.resolve();
  }

  /** A run's network taken down: its own namespace, then the host end of its interface. */
  async unplug(id: string): Promise<void> {
    await this.releaseNetns(id).catch((err) => this.deps.log.warn({ err, id }, 'releasing the network namespace failed'));
    await this.deps.network?.detach(id);
  }
}
