// The endpoints of the swarm's overlay networks, one etcd key per address taken:
// `/engine/swarm/endpoints/<network id>/<ip>` = what is there (the node, its VTEP, the MAC, the task
// or container and, for a task, its service), written by the node that runs it under its lease in a
// transaction that makes the key only when it is not there — so an address is taken once for the
// cluster, and goes with the node (a node that lost its lease has stopped its tasks). The other
// nodes read the same keys to program their VXLAN devices and to answer names (reconcilers/node/overlay.ts).
import { formatIpv4, parseCidr } from '../cidr.ts';
import { SWARM_PREFIX } from './keys.ts';

export const ENDPOINTS_PREFIX = `${SWARM_PREFIX}endpoints/`;
export const networkEndpointsPrefix = (network: string) => `${ENDPOINTS_PREFIX}${network}/`;
export const endpointKey = (network: string, ip: string) => `${networkEndpointsPrefix(network)}${ip}`;

/** The data path's UDP port (the reference's default, `--data-path-port`). */
export const DATA_PATH_PORT = 4789;

export interface SwarmEndpoint {
  Network: string;
  /** The address, no prefix. */
  IP: string;
  Mac: string;
  Node: string;
  /** The node's VTEP (its data path address). */
  Vtep: string;
  /** The task (or the container, for one `docker run --network` put there). */
  Owner: string;
  ServiceID?: string;
  ServiceName?: string;
  /** The names it answers to besides the service's (a task's network aliases, a container's name). */
  Aliases?: string[];
  /** A service's virtual IP (no node: it is the manager's, for as long as the service is). */
  Vip?: boolean;
  /** A virtual IP on the ingress network: the ports the routing mesh publishes on every node for it. */
  Ports?: Array<{ Protocol: string; TargetPort?: number; PublishedPort?: number }>;
  /** A node's own address on the ingress network (the routing mesh's source towards the tasks). */
  Mesh?: boolean;
  /** A task or container running (and healthy, with a healthcheck): its name answers with it. */
  Up?: boolean;
}

/** The endpoint a key holds (undefined: not one). */
export function parseEndpoint(v: string | undefined): SwarmEndpoint | undefined {
  if (!v) return undefined;
  try {
    const e = JSON.parse(v) as SwarmEndpoint;
    return typeof e.IP === 'string' && typeof e.Node === 'string' ? e : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The addresses of `subnet` to try for a new endpoint, in order: the hosts after the gateway, from
 * a point that moves with `seed` (two nodes asking at once rarely want the same one), none taken.
 */
export function freeAddresses(subnet: string, gateway: string, taken: ReadonlySet<string>, seed = 0, max = 8): string[] {
  const c = parseCidr(subnet);
  const first = c.network + 1;
  const last = c.broadcast - 1;
  const size = last - first + 1;
  if (size <= 0) return [];
  const out: string[] = [];
  const start = seed % size;
  for (let i = 0; i < size && out.length < max; i++) {
    const ip = formatIpv4(first + ((start + i) % size));
    if (ip !== gateway && !taken.has(ip)) out.push(ip);
  }
  return out;
}
