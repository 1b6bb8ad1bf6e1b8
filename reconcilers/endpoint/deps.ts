// What the endpoint reconciler needs: the store and the network attacher's extra-endpoint half
// (reconcilers/network/attacher.ts), behind narrow interfaces that cmd fills.
import type { EndpointAddresses } from '../../store/kinds/endpoint.ts';
import type { ReconcilerStore } from '../store-like.ts';

export type EndpointStore = ReconcilerStore;

export interface EndpointNetworkPort {
  /**
   * Plug the run of `pid` into the network as `eth<index>`, its address claimed (reused when held);
   * with `dns`, the run's 127.0.0.11 goes to this network's embedded DNS from now on.
   */
  attachExtra(
    containerId: string,
    pid: number,
    networkId: string,
    index: number,
    opts: { ipv4?: string; ipv6?: string; mac?: string; dns?: boolean },
  ): Promise<{ ifName: string; hostVeth: string; addresses: EndpointAddresses }>;
  /** Take the host end of the veth away (the container's end goes with it). */
  unplugExtra(hostVeth: string): Promise<void>;
  /** Free the container's addresses on the network. */
  releaseOn(containerId: string, networkId: string): void;
}
