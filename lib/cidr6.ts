// IPv6 address arithmetic for networks and IPAM, on BigInt: parsing (with "::" and an embedded
// IPv4 tail), the canonical compressed text form (RFC 5952), subnets and containment. Pure.
import { invalidArgument } from './errors.ts';

export interface Ipv6Cidr {
  address: bigint;
  prefixLen: number;
  network: bigint;
  /** The last address of the subnet. */
  last: bigint;
}

const ALL = (1n << 128n) - 1n;

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
  if (!t.includes(':') || t.includes('%')) throw bad();
  let head = t;
  let v4: number[] = [];
  const lastColon = t.lastIndexOf(':');
  if (t.slice(lastColon + 1).includes('.')) {
    const parts = t.slice(lastColon + 1).split('.');
    if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) throw bad();
    v4 = parts.map(Number);
    head = t.slice(0, lastColon + 1) + '0:0';
  }
  const halves = head.split('::');
  if (halves.length > 2) throw bad();
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - left.length - right.length;
  if ((halves.length === 1 && missing !== 0) || (halves.length === 2 && missing < 1)) throw bad();
  const all = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...right];
  let n = 0n;
  for (const g of all) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) throw bad();
    n = (n << 16n) | BigInt(parseInt(g, 16));
  }
  if (v4.length) n = (n & ~0xffffffffn) | BigInt(((v4[0]! << 24) >>> 0) + (v4[1]! << 16) + (v4[2]! << 8) + v4[3]!);
  return n;
}

/** The canonical form: lowercase, leading zeros dropped, the longest run of zero groups (2+) as "::". */
export function formatIpv6(n: bigint): string {
  const g: number[] = [];
  for (let i = 7; i >= 0; i--) g.push(Number((n >> BigInt(i * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (bestLen < 2) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

export function parseCidr6(text: string): Ipv6Cidr {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text.trim());
  if (!m || Number(m[2]) > 128) throw invalidArgument(`invalid CIDR address: ${text}`);
  const prefixLen = Number(m[2]);
  const address = parseIpv6(m[1]!);
  const hostBits = 128n - BigInt(prefixLen);
  const mask = (ALL >> hostBits) << hostBits;
  const network = address & mask;
  return { address, prefixLen, network, last: network | (ALL ^ mask) };
}

/** "fd00:1::/64" for "fd00:1::1/64". */
export function subnetOf6(text: string): string {
  const c = parseCidr6(text);
  return `${formatIpv6(c.network)}/${c.prefixLen}`;
}

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
