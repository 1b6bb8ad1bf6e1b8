// IPv4 address arithmetic for networks, IPAM and address pools: parsing, subnet ranges, and the
// reference daemon's IP-derived MAC addresses. Pure functions, no I/O.
import { invalidArgument } from './errors.ts';

export interface Ipv4Cidr {
  /** The address as written (may be a host address inside the subnet, e.g. a --bip). */
  address: number;
  prefixLen: number;
  /** The subnet's network address. */
  network: number;
  broadcast: number;
}

export function parseIpv4(text: string): number {
  const parts = text.trim().split('.');
  if (parts.length !== 4) throw invalidArgument(`invalid IPv4 address: ${text}`);
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) throw invalidArgument(`invalid IPv4 address: ${text}`);
    const v = Number(p);
    if (v > 255) throw invalidArgument(`invalid IPv4 address: ${text}`);
    n = n * 256 + v;
  }
  return n;
}

export function formatIpv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export function maskOf(prefixLen: number): number {
  return prefixLen === 0 ? 0 : (0xffffffff << (32 - prefixLen)) >>> 0;
}

export function parseCidr(text: string): Ipv4Cidr {
  const m = /^([^/]+)\/(\d{1,2})$/.exec(text.trim());
  if (!m) throw invalidArgument(`invalid CIDR address: ${text}`);
  const prefixLen = Number(m[2]);
  if (prefixLen > 32) throw invalidArgument(`invalid CIDR address: ${text}`);
  const address = parseIpv4(m[1]!);
  const mask = maskOf(prefixLen);
  const network = (address & mask) >>> 0;
  const broadcast = (network | (~mask >>> 0)) >>> 0;
  return { address, prefixLen, network, broadcast };
}

/** "172.17.0.0/16" for "172.17.0.1/16". */
export function subnetOf(text: string): string {
  const c = parseCidr(text);
  return `${formatIpv4(c.network)}/${c.prefixLen}`;
}

export function contains(subnet: Ipv4Cidr, ip: number): boolean {
  return ((ip & maskOf(subnet.prefixLen)) >>> 0) === subnet.network;
}

/** The first usable host address of a subnet (the reference daemon's default gateway). */
export function firstHost(subnet: Ipv4Cidr): number {
  return subnet.prefixLen >= 31 ? subnet.network : subnet.network + 1;
}

/**
 * The MAC the reference daemon gives an endpoint: 02:42 followed by the four IPv4 octets
 * (172.17.0.2 -> 02:42:ac:11:00:02), so a re-created endpoint keeps its MAC.
 */
export function macFromIpv4(ip: string | number): string {
  const n = typeof ip === 'number' ? ip : parseIpv4(ip);
  const bytes = [0x02, 0x42, n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}
