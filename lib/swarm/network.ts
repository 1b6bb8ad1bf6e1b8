// A swarm-scoped (overlay) network as the reference keeps and shows it (docs/reference-overlay.md):
// made on a manager, its subnet cut from the swarm's DefaultAddrPool (SubnetSize, gateway the first
// host) and its VXLAN id counted up from 4096, each taken once for the cluster in etcd:
// - `/engine/swarm/networks/<id>`: the network;
// - `/engine/swarm/network-names/<name>`: the id a name belongs to;
// - `/engine/swarm/subnets/<a.b.c.d-len>`, `/engine/swarm/vnis/<n>`: what it took.
import { formatIpv4, overlaps, parseCidr, type Ipv4Cidr } from '../cidr.ts';
import { SWARM_PREFIX } from './keys.ts';

export const NETWORKS_PREFIX = `${SWARM_PREFIX}networks/`;
export const NETWORK_NAMES_PREFIX = `${SWARM_PREFIX}network-names/`;
export const SUBNETS_PREFIX = `${SWARM_PREFIX}subnets/`;
export const VNIS_PREFIX = `${SWARM_PREFIX}vnis/`;
export const networkKey = (id: string) => `${NETWORKS_PREFIX}${id}`;
export const networkNameKey = (name: string) => `${NETWORK_NAMES_PREFIX}${name}`;
export const subnetKey = (cidr: string) => `${SUBNETS_PREFIX}${cidr.replace('/', '-')}`;
export const vniKey = (vni: number) => `${VNIS_PREFIX}${vni}`;

/** The first VXLAN id the reference gives (its ingress network's). */
export const FIRST_VNI = 4096;
export const VXLANID_OPTION = 'com.docker.network.driver.overlay.vxlanid_list';

export interface SwarmNetworkRecord {
  ID: string;
  Name: string;
  Created: string;
  Labels?: Record<string, string>;
  /** The options the client gave (the VXLAN id is shown beside them). */
  Options: Record<string, string>;
  Attachable: boolean;
  Internal: boolean;
  EnableIPv6: boolean;
  Ingress: boolean;
  IPAM: { Driver: string; Options: Record<string, string> | null; Config: Array<{ Subnet: string; Gateway: string }> };
  VNI: number;
}

/** The network as GET /networks shows a swarm network this node has no instance of. */
export function swarmNetworkView(n: SwarmNetworkRecord): Record<string, unknown> {
  return {
    Name: n.Name,
    Id: n.ID,
    Created: n.Created,
    Scope: 'swarm',
    Driver: 'overlay',
    EnableIPv6: n.EnableIPv6,
    IPAM: n.IPAM,
    Internal: n.Internal,
    Attachable: n.Attachable,
    Ingress: n.Ingress,
    ConfigFrom: { Network: '' },
    ConfigOnly: false,
    Containers: null,
    Options: { [VXLANID_OPTION]: String(n.VNI), ...n.Options },
    Labels: n.Labels ?? null,
  };
}

/** The first /size of the pools no network of the swarm has (undefined: all taken). */
export function nextSubnet(pools: readonly string[], size: number, taken: readonly string[]): string | undefined {
  const used: Ipv4Cidr[] = taken.map((t) => parseCidr(t));
  for (const p of pools) {
    const base = parseCidr(p);
    if (size < base.prefixLen || size > 30) continue;
    const step = 2 ** (32 - size);
    for (let net = base.network; net <= base.broadcast; net += step) {
      const cand = parseCidr(`${formatIpv4(net)}/${size}`);
      if (!used.some((u) => overlaps(u, cand))) return `${formatIpv4(cand.network)}/${size}`;
    }
  }
  return undefined;
}

/** The subnet's first host, the gateway the reference gives an overlay. */
export const gatewayOf = (cidr: string) => formatIpv4(parseCidr(cidr).network + 1);

/** The lowest VXLAN id from 4096 no network has. */
export function nextVni(taken: readonly number[]): number {
  const set = new Set(taken);
  let v = FIRST_VNI;
  while (set.has(v)) v++;
  return v;
}
