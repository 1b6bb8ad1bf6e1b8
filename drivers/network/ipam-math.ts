// The address arithmetic of IPAM: given one pool of a network (subnet, optional range, the gateway
// and auxiliary addresses it reserves), the claims already held on it, and maybe a static address
// asked for (--ip, --ip6), which claim a container keeps or which address it gets: the lowest free
// one. Pure functions, no store and no I/O (reconcilers/network/ipam.ts writes the records).
import { conflict, invalidArgument, unavailable } from '../../lib/errors.ts';
import { contains, formatIpv4, parseCidr, parseIpv4 } from '../../lib/cidr.ts';
import { contains6, formatIpv6, parseCidr6, parseIpv6 } from '../../lib/cidr6.ts';

/** One address pool of a network, as its IPAM config holds it (store/kinds/network.ts IpamPoolConfig). */
export interface AddressPool {
  /** "172.17.0.0/16" or "fd00:1::/64" */
  Subnet: string;
  /** Reserved: never handed out. */
  Gateway: string;
  /** Handed-out addresses come only from here when set (--fixed-cidr). */
  IPRange?: string;
  /** Reserved too. */
  AuxiliaryAddresses?: Record<string, string>;
}

/** A claim held on the network, in the pool's family. */
export interface HeldAddress {
  address: string;
  prefixLen: number;
  containerId: string;
}

export interface AddressRequest {
  pool: AddressPool;
  /** Every claim on the network in this family, the container's own included. */
  held: readonly HeldAddress[];
  /** Whose address is asked for. */
  containerId: string;
  /** A static address (--ip, --ip6): it may lie anywhere in the subnet, not only the range. */
  want?: string;
  /** The network, for the error messages. */
  network: { name: string; id: string };
}

/**
 * What to do: keep the container's claim `held[keep]`, or claim `address` (under `prefixLen`).
 * `release`: indexes in `held` of the container's claims to let go first (made under an older
 * subnet, prefix or --fixed-cidr, or for another static address).
 */
export type AddressChoice = { keep: number; release: number[] } | { keep?: undefined; address: string; prefixLen: number; release: number[] };

/** How far an IPv6 search looks: a /64 has more addresses than anyone hands out. */
export const IPV6_SEARCH_LIMIT = 1_000_000;

/** The IPv4 choice: the container's valid claim, else the lowest free address of the range (or the static one). */
export function pickIpv4(req: AddressRequest): AddressChoice {
  const { pool, want: preferred } = req;
  const subnet = parseCidr(pool.Subnet);
  const range = pool.IPRange ? parseCidr(pool.IPRange) : subnet;
  const reserved = new Set<number>([subnet.network, subnet.broadcast, parseIpv4(pool.Gateway)]);
  for (const a of Object.values(pool.AuxiliaryAddresses ?? {})) reserved.add(parseIpv4(a));
  const want = preferred ? parseIpv4(preferred) : undefined;
  // A static address (--ip) may lie anywhere in the subnet; handed-out ones come from the range.
  const usable = (ip: number) => (want !== undefined ? ip === want : contains(range, ip)) && contains(subnet, ip) && !reserved.has(ip);
  if (want !== undefined && (!contains(subnet, want) || reserved.has(want))) {
    throw invalidArgument(`invalid address ${preferred}: it is not a free host address of subnet ${pool.Subnet}`);
  }

  const used = new Set<number>();
  const release: number[] = [];
  for (const [i, a] of req.held.entries()) {
    if (a.containerId !== req.containerId) {
      used.add(parseIpv4(a.address));
      continue;
    }
    if (usable(parseIpv4(a.address)) && a.prefixLen === subnet.prefixLen) return { keep: i, release };
    release.push(i);
  }
  if (want !== undefined && used.has(want)) throw conflict(`Address already in use: ${preferred} on network ${req.network.name}`);
  const first = want ?? Math.max(range.network, subnet.network + 1);
  const last = want ?? Math.min(range.broadcast, subnet.broadcast - 1);
  for (let ip = first; ip <= last; ip++) {
    if (used.has(ip) || !usable(ip)) continue;
    return { address: formatIpv4(ip), prefixLen: subnet.prefixLen, release };
  }
  throw unavailable(`no available IPv4 addresses on this network's address pools: ${req.network.name} (${req.network.id})`);
}

/** The IPv6 twin of pickIpv4; the search looks through the first IPV6_SEARCH_LIMIT addresses of the range. */
export function pickIpv6(req: AddressRequest): AddressChoice {
  const { pool, want: preferred } = req;
  const subnet = parseCidr6(pool.Subnet);
  const range = pool.IPRange ? parseCidr6(pool.IPRange) : subnet;
  const reserved = new Set<bigint>([subnet.network, parseIpv6(pool.Gateway)]);
  for (const a of Object.values(pool.AuxiliaryAddresses ?? {})) reserved.add(parseIpv6(a));
  const want = preferred ? parseIpv6(preferred) : undefined;
  if (want !== undefined && (!contains6(subnet, want) || reserved.has(want))) {
    throw invalidArgument(`invalid address ${preferred}: it is not a free host address of subnet ${pool.Subnet}`);
  }
  const usable = (ip: bigint) => (want !== undefined ? ip === want : contains6(range, ip)) && contains6(subnet, ip) && !reserved.has(ip);
  const used = new Set<bigint>();
  const release: number[] = [];
  for (const [i, a] of req.held.entries()) {
    const ip = parseIpv6(a.address);
    if (a.containerId !== req.containerId) {
      used.add(ip);
      continue;
    }
    if (usable(ip) && a.prefixLen === subnet.prefixLen) return { keep: i, release };
    release.push(i);
  }
  if (want !== undefined && used.has(want)) throw conflict(`Address already in use: ${preferred} on network ${req.network.name}`);
  const first = want ?? (range.network > subnet.network ? range.network : subnet.network + 1n);
  const last = want ?? (range.last < subnet.last ? range.last : subnet.last);
  for (let ip = first, n = 0; ip <= last && n < IPV6_SEARCH_LIMIT; ip++, n++) {
    if (used.has(ip) || !usable(ip)) continue;
    return { address: formatIpv6(ip), prefixLen: subnet.prefixLen, release };
  }
  throw unavailable(`no available IPv6 addresses on this network's address pools: ${req.network.name} (${req.network.id})`);
}
