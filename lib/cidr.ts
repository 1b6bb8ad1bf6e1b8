// IPv4 addresses for networks, IPAM and address pools, on ipaddr.js: parsing, subnet ranges, and
// the reference daemon's IP-derived MAC addresses. Addresses travel as unsigned 32-bit numbers
// (sets, +1 steps, comparisons); ipaddr.js does the parsing, masking, matching and formatting.
// Pure functions, no I/O.
import ipaddr from 'ipaddr.js';
import { invalidArgument } from './errors.ts';

export interface Ipv4Cidr {
  /** The address as written (may be a host address inside the subnet, e.g. a --bip). */
  address: number;
  prefixLen: number;
  /** The subnet's network address. */
  network: number;
  broadcast: number;
}

/**
 * The only IPv4 text accepted: four dot-separated decimal parts of one to three digits. ipaddr.js
 * alone would also take "10.1", "167772161", "0x0a.0.0.1" and octal "010.0.0.1" (= 8.0.0.1).
 */
const FOUR_PARTS = /^\d{1,3}(?:\.\d{1,3}){3}$/;

/** ipaddr.js's address for a 32-bit number. */
function ipv4Of(n: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
}

function numberOf(a: ipaddr.IPv4): number {
  const [b0, b1, b2, b3] = a.toByteArray() as [number, number, number, number];
  return b0 * 0x1000000 + ((b1 << 16) | (b2 << 8) | b3);
}

export function parseIpv4(text: string): number {
  const t = text.trim();
  const bad = () => invalidArgument(`invalid IPv4 address: ${text}`);
  if (!FOUR_PARTS.test(t)) throw bad();
  // A leading zero is decimal here, as it always was ("010" is 10), not ipaddr.js's octal.
  const decimal = t.replace(/(^|\.)0+(?=\d)/g, '$1');
  if (!ipaddr.IPv4.isValidFourPartDecimal(decimal)) throw bad();
  return numberOf(ipaddr.IPv4.parse(decimal));
}

export function formatIpv4(n: number): string {
  return ipv4Of(n).toString();
}

export function maskOf(prefixLen: number): number {
  return numberOf(ipaddr.IPv4.subnetMaskFromPrefixLength(prefixLen));
}

export function parseCidr(text: string): Ipv4Cidr {
  const m = /^([^/]+)\/(\d{1,2})$/.exec(text.trim());
  if (!m || Number(m[2]) > 32) throw invalidArgument(`invalid CIDR address: ${text}`);
  const prefixLen = Number(m[2]);
  const address = parseIpv4(m[1]!);
  const cidr = `${formatIpv4(address)}/${prefixLen}`;
  return {
    address,
    prefixLen,
    network: numberOf(ipaddr.IPv4.networkAddressFromCIDR(cidr)),
    broadcast: numberOf(ipaddr.IPv4.broadcastAddressFromCIDR(cidr)),
  };
}

/** "172.17.0.0/16" for "172.17.0.1/16". */
export function subnetOf(text: string): string {
  const c = parseCidr(text);
  return `${formatIpv4(c.network)}/${c.prefixLen}`;
}

export function contains(subnet: Ipv4Cidr, ip: number): boolean {
  return ipv4Of(ip).match(ipv4Of(subnet.network), subnet.prefixLen);
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
  const bytes = [0x02, 0x42, ...ipv4Of(n).toByteArray()];
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** Whether two subnets share an address. */
export function overlaps(a: Ipv4Cidr, b: Ipv4Cidr): boolean {
  const p = Math.min(a.prefixLen, b.prefixLen);
  const m = maskOf(p);
  return ((a.network & m) >>> 0) === ((b.network & m) >>> 0);
}
