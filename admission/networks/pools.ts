// Address pools for networks created without a subnet: the first subnet of the configured pools
// (--default-address-pool, else the reference daemon's defaults) that overlaps neither another
// network nor a route of the host. Pure: the caller says what is taken.
import { formatIpv4, overlaps, parseCidr, type Ipv4Cidr } from '../../lib/cidr.ts';
import { permissionDenied } from '../../lib/errors.ts';

export interface AddressPool {
  /** "172.18.0.0/16" */
  base: string;
  /** Prefix length of the subnets cut from it. */
  size: number;
}

/** The reference daemon's local-scope defaults (172.17-31 in /16s, then 192.168 in /20s). */
export const DEFAULT_POOLS: readonly AddressPool[] = [
  { base: '172.17.0.0/16', size: 16 },
  { base: '172.18.0.0/16', size: 16 },
  { base: '172.19.0.0/16', size: 16 },
  { base: '172.20.0.0/14', size: 16 },
  { base: '172.24.0.0/14', size: 16 },
  { base: '172.28.0.0/14', size: 16 },
  { base: '192.168.0.0/16', size: 20 },
];

export { overlaps };

/** The first free subnet of `pools`; 403 as the reference when all are used. */
export function pickSubnet(pools: readonly AddressPool[], taken: readonly Ipv4Cidr[]): string {
  for (const pool of pools.length ? pools : DEFAULT_POOLS) {
    const base = parseCidr(pool.base);
    if (pool.size < base.prefixLen || pool.size > 30) continue;
    const step = 2 ** (32 - pool.size);
    for (let net = base.network; net <= base.broadcast; net += step) {
      const cand = parseCidr(`${formatIpv4(net)}/${pool.size}`);
      if (!taken.some((t) => overlaps(t, cand))) return `${formatIpv4(cand.network)}/${cand.prefixLen}`;
    }
  }
  throw permissionDenied('could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network');
}
