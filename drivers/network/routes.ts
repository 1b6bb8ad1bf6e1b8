// The host's IPv4 routes (what a new network's subnet must not overlap), read from
// /proc/net/route: destination and mask per route, in the kernel's little-endian hex. Default
// routes (mask 0) are left out: every subnet "overlaps" them.
import { readFileSync } from 'node:fs';

function hexToIpv4(hex: string): string {
  const n = Number.parseInt(hex, 16);
  return [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24].join('.');
}

function maskLength(hex: string): number {
  let n = Number.parseInt(hex, 16) >>> 0;
  let len = 0;
  while (n) {
    len += n & 1;
    n >>>= 1;
  }
  return len;
}

/** "10.0.2.0/24"-style destinations of the host's routes, without default routes. */
export function hostRouteSubnets(path = '/proc/net/route'): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const out = new Set<string>();
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8) continue;
    const len = maskLength(f[7]!);
    if (len === 0) continue;
    out.add(`${hexToIpv4(f[1]!)}/${len}`);
  }
  return [...out];
}
