// Plugging a container into a bridge: a veth pair whose container end is created directly inside
// the container's network namespace (much faster than create-then-move), then addressed and
// routed there by one `ip -batch` run through one nsenter. Two process spawns in all.
import { existsSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';
import { isCode } from '../../lib/errors.ts';
import { deleteLink, run } from './run.ts';
import type { AttachRequest, AttachResult } from '../../lib/ports/network.ts';

export type { AttachRequest, AttachResult };

/** The address a container on a user-defined network asks names of (its resolv.conf nameserver). */
export const EMBEDDED_DNS_ADDRESS = '127.0.0.11';

const IFNAME = /^[A-Za-z0-9_.-]{1,15}$/;

export async function attachContainer(req: AttachRequest): Promise<AttachResult> {
  if (!IFNAME.test(req.hostVeth) || !IFNAME.test(req.ifName)) throw new TypeError(`bad interface name ${req.hostVeth}/${req.ifName}`);
  const ns = netnsTarget(req);
  const add = [
    'link', 'add', req.hostVeth, 'mtu', String(req.mtu), 'master', req.bridge, 'up',
    'type', 'veth', 'peer', 'name', req.ifName, 'mtu', String(req.mtu), 'address', req.mac, 'netns', ns.ipArg,
  ];
  try {
    await run('ip', add, { signal: req.signal });
  } catch (err) {
    if (!isCode(err, 'AlreadyExists')) throw err;
    // A pair left by an earlier attach of the same container (crash, retry): replace it.
    await detachContainer(req.hostVeth, req.signal);
    await run('ip', add, { signal: req.signal });
  }
  const script = [
    `addr add ${req.address} dev ${req.ifName}`,
    `link set ${req.ifName} up`,
    'link set lo up',
    ...(req.gateway ? [`route replace default via ${req.gateway} dev ${req.ifName}`] : []),
    // nodad: the address is ours alone (IPAM), and waiting for duplicate detection delays the start.
    ...(req.address6 ? [`addr add ${req.address6} dev ${req.ifName} nodad`] : []),
    ...(req.address6 && req.gateway6 ? [`route replace default via ${req.gateway6} dev ${req.ifName}`] : []),
  ];
  try {
    await run('nsenter', [ns.nsenterArg, 'ip', '-batch', '-'], { input: script.join('\n') + '\n', signal: req.signal });
    if (req.dnsRedirect) await redirectDns(ns.nsenterArg, req.ifName, req.dnsRedirect.gateway, req.address.split('/')[0]!, req.signal);
  } catch (err) {
    await detachContainer(req.hostVeth).catch(() => {});
    throw err;
  }
  return { hostVeth: req.hostVeth };
}

/** Delete the pair by its host end; true when it existed. A gone namespace takes the pair with it. */
export async function detachContainer(hostVeth: string, signal?: AbortSignal): Promise<boolean> {
  // Most of the time there is nothing to delete (no bridge endpoint, or the namespace took the
  // pair with it): a look in sysfs saves a process spawn.
  if (IFNAME.test(hostVeth) && !existsSync(`/sys/class/net/${hostVeth}`)) return false;
  return deleteLink(hostVeth, signal);
}

function netnsTarget(req: AttachRequest): { ipArg: string; nsenterArg: string } {
  if (req.netnsPath) {
    // `ip ... netns X` treats a name with a slash as a path to open.
    const path = req.netnsPath.includes('/') ? req.netnsPath : `/run/netns/${req.netnsPath}`;
    return { ipArg: path, nsenterArg: `--net=${path}` };
  }
  if (req.pid && req.pid > 0) return { ipArg: String(req.pid), nsenterArg: `--net=/proc/${req.pid}/ns/net` };
  throw new TypeError('attachContainer needs pid or netnsPath');
}

/**
 * Put a container's host end back on its bridge (after the bridge was deleted and made again, its
 * ports are loose); true when it had to. A veth that is gone (its namespace went) is left alone.
 */
export async function ensureBridgePort(bridge: string, hostVeth: string, signal?: AbortSignal): Promise<boolean> {
  if (!IFNAME.test(hostVeth) || !IFNAME.test(bridge)) throw new TypeError(`bad interface name ${hostVeth}/${bridge}`);
  const dir = `/sys/class/net/${hostVeth}`;
  if (!existsSync(dir)) return false;
  try {
    if (basename(readlinkSync(`${dir}/master`)) === bridge) return false;
  } catch {
    // no master: loose
  }
  try {
    await run('ip', ['link', 'set', 'dev', hostVeth, 'master', bridge, 'up'], { signal });
    return true;
  } catch (err) {
    if (isCode(err, 'NotFound')) return false;
    throw err;
  }
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/**
 * 127.0.0.11:53 inside the namespace goes to the embedded DNS on the gateway: DNAT on the way out,
 * SNAT to the container's address (a loopback source may not leave; route_localnet lets it be
 * routed before it is rewritten), conntrack turning the answers back. The namespace's nat table
 * holds these rules alone: they replace the ones before (a run plugged into another network after
 * leaving the one its names were asked on).
 */
async function redirectDns(nsenterArg: string, ifName: string, gateway: string, address: string, signal?: AbortSignal): Promise<void> {
  if (!IPV4.test(gateway) || !IPV4.test(address)) throw new TypeError(`bad address ${gateway}/${address}`);
  const rules = ['*nat'];
  for (const proto of ['udp', 'tcp']) {
    rules.push(`-A OUTPUT -d ${EMBEDDED_DNS_ADDRESS}/32 -p ${proto} --dport 53 -j DNAT --to-destination ${gateway}:53`);
    rules.push(`-A POSTROUTING -s 127.0.0.0/8 -d ${gateway}/32 -p ${proto} --dport 53 -j SNAT --to-source ${address}`);
  }
  rules.push('COMMIT', '');
  const sh = `echo 1 > /proc/sys/net/ipv4/conf/${ifName}/route_localnet && exec iptables-restore`;
  await run('nsenter', [nsenterArg, 'sh', '-c', sh], { input: rules.join('\n'), signal });
}

/** Host end of a container's veth: deterministic, so a repeated attach finds and replaces it. */
export function hostVethName(containerId: string): string {
  return `veth${containerId.slice(0, 11)}`;
}

/** Host end of a container's extra veth (eth1...): distinct from the primary's `veth...`. */
export function extraVethName(containerId: string, index: number): string {
  return `vx${containerId.slice(0, 11)}${index}`;
}
