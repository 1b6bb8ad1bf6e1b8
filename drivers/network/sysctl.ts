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
