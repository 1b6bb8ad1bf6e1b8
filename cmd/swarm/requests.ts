// What `swarm init` and `swarm join` ask for, checked before anything changes: the addresses (as
// moby resolves them, lib/swarm/addresses.ts), the default address pool and subnet size, the data
// path port; the names a node certificate carries.
import ipaddr from 'ipaddr.js';
import { invalidArgument } from '../../lib/errors.ts';
import { normaliseAddr, resolveAdvertiseAddr, resolveDataPathAddr, resolveListenAddr, SwarmAddressError, type Interfaces } from '../../lib/swarm/addresses.ts';

const DEFAULT_POOL = ['10.0.0.0/8'];
const DEFAULT_SUBNET_SIZE = 24;
const DEFAULT_DATA_PATH_PORT = 4789;


export interface NodeAddresses {
  /** host:port, normalised. */
  listenAddr: string;
  advertiseHost: string;
  advertisePort: string;
  dataPathAddr: string;
}

/** ListenAddr, AdvertiseAddr and DataPathAddr of an init or a join, refused in the reference's words. */
export function nodeAddresses(req: { ListenAddr?: string; AdvertiseAddr?: string; DataPathAddr?: string }, defaultAdvertiseAddr: string, ifaces: Interfaces): NodeAddresses {
  try {
    const listenAddr = normaliseAddr(req.ListenAddr || '0.0.0.0:2377');
    const listen = resolveListenAddr(listenAddr, ifaces);
    const adv = resolveAdvertiseAddr({ advertiseAddr: req.AdvertiseAddr ?? '', listenPort: listen.port, defaultAdvertiseAddr, ifaces });
    return { listenAddr, advertiseHost: adv.host, advertisePort: adv.port, dataPathAddr: resolveDataPathAddr(req.DataPathAddr ?? '', ifaces) };
  } catch (err) {
    if (err instanceof SwarmAddressError) throw invalidArgument(err.message);
    throw err;
  }
}

/** The names a node certificate carries: the advertise and listen hosts (not unspecified ones). */
export function certHosts(a: NodeAddresses): string[] {
  const listenHost = a.listenAddr.replace(/:\d*$/, '').replace(/^\[|\]$/g, '');
  const hosts = new Set([a.advertiseHost]);
  if (ipaddr.isValid(listenHost) && ipaddr.parse(listenHost).range() !== 'unspecified') hosts.add(ipaddr.parse(listenHost).toString());
  return [...hosts];
}

/** DefaultAddrPool and SubnetSize: CIDRs, and a subnet size that fits in each. */
export function checkPool(pool: string[] | null | undefined, size: number | undefined): { pool: string[]; subnetSize: number } {
  const p = pool?.length ? pool : DEFAULT_POOL;
  const subnetSize = size || DEFAULT_SUBNET_SIZE;
  for (const c of p) {
    let bits: number;
    try {
      bits = ipaddr.parseCIDR(c)[1];
    } catch {
      throw invalidArgument(`invalid default address pool ${JSON.stringify(c)}: invalid CIDR address: ${c}`);
    }
    if (subnetSize < bits || subnetSize > 32) throw invalidArgument(`invalid subnet size ${subnetSize} for the default address pool ${c}`);
  }
  return { pool: [...p], subnetSize };
}

/** DataPathPort: 0 for the default (4789), else within 1024–49151, as the reference. */
export function checkDataPathPort(port: number | undefined): number {
  if (!port) return DEFAULT_DATA_PATH_PORT;
  if (!Number.isInteger(port) || port < 1024 || port > 49151) throw invalidArgument(`data path port ${port} is out of range: valid ports are 1024 to 49151`);
  return port;
}
