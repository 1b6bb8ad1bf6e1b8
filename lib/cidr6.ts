// IPv6 addresses for networks and IPAM, on ipaddr.js: parsing (with "::" and an embedded IPv4
// tail), the canonical compressed text form (RFC 5952), subnets and containment. Addresses travel
// as BigInt (sets, +1 steps, range comparisons); ipaddr.js does the parsing, masking and
// formatting. Pure.
import ipaddr from 'ipaddr.js';
import { invalidArgument } from './errors.ts';

export interface Ipv6Cidr {
  address: bigint;
  prefixLen: number;
  network: bigint;
  /** The last address of the subnet. */
  last: bigint;
}

/** An embedded IPv4 tail: four decimal parts of one to three digits (ipaddr.js would also take "0x0a" or "0001"). */
const IPV4_TAIL = /^\d{1,3}(?:\.\d{1,3}){3}$/;

function ipv6Of(n: bigint): ipaddr.IPv6 {
  const bytes: number[] = [];
  for (let shift = 120n; shift >= 0n; shift -= 8n) bytes.push(Number((n >> shift) & 0xffn));
  return new ipaddr.IPv6(bytes);
}

function bigintOf(a: ipaddr.IPv6): bigint {
  let n = 0n;
  for (const b of a.toByteArray()) n = (n << 8n) | BigInt(b);
  return n;
}

export function isIpv6(text: string): boolean {
  try {
    parseIpv6(text);
    return true;
  } catch {
    return false;
  }
}

export function parseIpv6(text: string): bigint {
  const t = text.trim();
  const bad = () => invalidArgument(`invalid IPv6 address: ${text}`);
  // Refused before ipaddr.js sees them: a zone id ("fe80::1%eth0"), and anything without a colon.
  if (!t.includes(':') || t.includes('%')) throw bad();
  let s = t;
  const tail = t.slice(t.lastIndexOf(':') + 1);
  if (tail.includes('.')) {
    if (!IPV4_TAIL.test(tail)) throw bad();
    // "::1.2.3.4" is ::102:304 (IPv4-compatible), where ipaddr.js alone reads ::ffff:102:304.
    if (t === `::${tail}`) s = `::0:${tail}`;
  }
  let addr: ipaddr.IPv6;
  try {
    addr = ipaddr.IPv6.parse(s);
  } catch {
    throw bad();
  }
  return bigintOf(addr);
}

/** The canonical form (RFC 5952): lowercase, leading zeros dropped, the longest run of zero groups (2+) as "::". */
export function formatIpv6(n: bigint): string {
  return ipv6Of(n).toRFC5952String();
}

export function parseCidr6(text: string): Ipv6Cidr {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text.trim());
  if (!m || Number(m[2]) > 128) throw invalidArgument(`invalid CIDR address: ${text}`);
  const prefixLen = Number(m[2]);
  const address = parseIpv6(m[1]!);
  const cidr = `${formatIpv6(address)}/${prefixLen}`;
  return {
    address,
    prefixLen,
    network: bigintOf(ipaddr.IPv6.networkAddressFromCIDR(cidr)),
    last: bigintOf(ipaddr.IPv6.broadcastAddressFromCIDR(cidr)),
  };
}

/** "fd00:1::/64" for "fd00:1::1/64". */
export function subnetOf6(text: string): string {
  return cidr6Text(parseCidr6(text));
}

/** Whether `ip` lies in the subnet: a range comparison on the bounds ipaddr.js computed (the allocator's hot loop). */
export function contains6(subnet: Ipv6Cidr, ip: bigint): boolean {
  return ip >= subnet.network && ip <= subnet.last;
}

export function overlaps6(a: Ipv6Cidr, b: Ipv6Cidr): boolean {
  return a.network <= b.last && b.network <= a.last;
}

/** The subnet's first host address (network + 1), the default gateway. */
export function firstHost6(c: Ipv6Cidr): bigint {
  return c.network + 1n;
}

/** "fd00:1::/64" for a parsed subnet. */
export function cidr6Text(c: Pick<Ipv6Cidr, 'network' | 'prefixLen'>): string {
  return `${formatIpv6(c.network)}/${c.prefixLen}`;
}
