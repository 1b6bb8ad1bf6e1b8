// Kernel switches the bridge network depends on.
import { readFile, writeFile } from 'node:fs/promises';

export const IP_FORWARD_PATH = '/proc/sys/net/ipv4/ip_forward';

/** Turn IPv4 forwarding on. Returns true when it was off (the caller may then tighten FORWARD). */
export async function enableIpForward(path = IP_FORWARD_PATH): Promise<boolean> {
  const cur = (await readFile(path, 'utf8')).trim();
  if (cur === '1') return false;
  await writeFile(path, '1\n');
  return true;
}

export const IPV6_FORWARD_PATHS = ['/proc/sys/net/ipv6/conf/default/forwarding', '/proc/sys/net/ipv6/conf/all/forwarding'] as const;

/** Turn IPv6 forwarding on (as the reference daemon does for an IPv6 bridge with --ip-forward). */
export async function enableIpv6Forward(paths: readonly string[] = IPV6_FORWARD_PATHS): Promise<boolean> {
  let changed = false;
  for (const p of paths) changed = (await enableIpForward(p)) || changed;
  return changed;
}
