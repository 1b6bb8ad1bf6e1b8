// IPAM of the network kind: every write and read of the ipam-allocation records (one record per
// claimed address, named `<networkId>/<address>`; its existence is the claim). Which address a
// container gets is the pure arithmetic of drivers/network/ipam-math.ts; this module turns its
// choice into records. Callers: the attacher (claim on allocate/attach, release on disconnect and
// removal) and the network reconciler (a removed network's claims, claims of gone containers).
import { invalidArgument, unavailable } from '../../lib/errors.ts';
import { type AddressChoice, type AddressRequest, pickIpv4, pickIpv6 } from '../../drivers/network/ipam-math.ts';
import { Containers } from '../../store/kinds/container.ts';
import { type IpamAllocationSpec, IpamAllocations, type IpamAllocationResource } from '../../store/kinds/ipam-allocation.ts';
import { ipv4Pool, ipv6Pool, type IpamPoolConfig, type NetworkResource } from '../../store/kinds/network.ts';
import type { NetworkStore } from './deps.ts';

/** One claimed address (an ipam-allocation record). */
export type Allocation = IpamAllocationResource;

/** The slice of the store IPAM uses. */
export type IpamStore = Pick<NetworkStore, 'get' | 'list' | 'create' | 'delete' | 'transaction'>;

const isV6 = (address: string) => address.includes(':');

/** Every claim in the store. */
export function allAllocations(store: Pick<IpamStore, 'list'>): Allocation[] {
  return store.list(IpamAllocations);
}

/** The claims on one network. */
export function allocationsOf(store: Pick<IpamStore, 'list'>, networkId: string): Allocation[] {
  return allAllocations(store).filter((a) => a.spec.networkId === networkId);
}

/** Inside a store transaction: the container's valid IPv4 claim on `net`, or a new one on the lowest free address (or `preferred`). */
export function claimAddress(store: IpamStore, net: NetworkResource, containerId: string, preferred?: string): Allocation {
  const pool = ipv4Pool(net.spec);
  if (!pool) throw unavailable(`network ${net.spec.name} has no address pool`);
  return claimFrom(store, net, containerId, pool, preferred, false);
}

/** Inside a store transaction: the IPv6 twin of claimAddress; null on a network without an IPv6 pool (where `preferred` is refused). */
export function claimAddress6(store: IpamStore, net: NetworkResource, containerId: string, preferred?: string): Allocation | null {
  const pool = ipv6Pool(net.spec);
  if (!pool) {
    if (preferred) throw invalidArgument(`invalid address ${preferred}: network ${net.spec.name} has no IPv6 subnet`);
    return null;
  }
  return claimFrom(store, net, containerId, pool, preferred, true);
}

/** The container's IPv4 and IPv6 claims on `net` (static ones when asked for), in one transaction. */
export function claimAddresses(
  store: IpamStore,
  net: NetworkResource,
  containerId: string,
  opts: { ipv4?: string; ipv6?: string } = {},
): readonly [Allocation, Allocation | null] {
  return store.transaction(() => [claimAddress(store, net, containerId, opts.ipv4), claimAddress6(store, net, containerId, opts.ipv6)] as const);
}

/** Apply the arithmetic's choice for one family: let stale claims go, keep the valid one or create the new one. */
function claimFrom(store: IpamStore, net: NetworkResource, containerId: string, pool: IpamPoolConfig, preferred: string | undefined, v6: boolean): Allocation {
  const held = allAllocations(store).filter((a) => a.spec.networkId === net.spec.id && isV6(a.spec.address) === v6);
  const req: AddressRequest = { pool, held: held.map((a) => a.spec), containerId, want: preferred, network: { name: net.spec.name, id: net.spec.id } };
  const choice: AddressChoice = v6 ? pickIpv6(req) : pickIpv4(req);
  // Claimed under an older --bip or --fixed-cidr, or another static address: let it go.
  for (const i of choice.release) store.delete(IpamAllocations, held[i]!.name);
  if (choice.keep !== undefined) return held[choice.keep]!;
  const spec: IpamAllocationSpec = { networkId: net.spec.id, address: choice.address, prefixLen: choice.prefixLen, containerId, allocatedAt: new Date().toISOString() };
  return store.create(IpamAllocations, `${net.spec.id}/${choice.address}`, spec, {});
}

/** Delete the given claims in one transaction; answers them. */
function releaseAll(store: Pick<IpamStore, 'delete' | 'transaction'>, claims: Allocation[]): Allocation[] {
  if (claims.length === 0) return claims;
  store.transaction(() => {
    for (const a of claims) store.delete(IpamAllocations, a.name);
  });
  return claims;
}

/** Free every address of the container (on removal); answers the claims let go. */
export function releaseContainer(store: IpamStore, containerId: string): Allocation[] {
  return releaseAll(store, allAllocations(store).filter((a) => a.spec.containerId === containerId));
}

/** Free the container's addresses on one network (it left that network); answers the claims let go. */
export function releaseOn(store: IpamStore, containerId: string, networkId: string): Allocation[] {
  return releaseAll(store, allAllocations(store).filter((a) => a.spec.containerId === containerId && a.spec.networkId === networkId));
}

/** Free every address of a network (it is being removed; call it in the transaction that deletes the record). */
export function releaseNetwork(store: IpamStore, networkId: string): Allocation[] {
  return releaseAll(store, allocationsOf(store, networkId));
}

/** Free the network's addresses whose container record is gone (a crash between removal and release); answers them. */
export function releaseOrphans(store: IpamStore, networkId: string): Allocation[] {
  return releaseAll(store, allocationsOf(store, networkId).filter((a) => !store.get(Containers, a.spec.containerId)));
}
