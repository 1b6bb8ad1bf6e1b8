// The Linux bridge a bridge network's containers plug into: look at it, create or repair it
// (exists, is a bridge, carries exactly our IPv4 address, is up, has our MTU), delete it.
import { failedPrecondition, isCode } from '../../lib/errors.ts';
import { parseCidr } from './cidr.ts';
import { formatIpv6, parseIpv6 } from '../../lib/cidr6.ts';
import { deleteLink, run } from './run.ts';

/** "fd00:1:0::1/64" as ip(8) prints it: "fd00:1::1/64". */
function canonical6(cidr: string): string {
  const [a, len] = cidr.split('/');
  return `${formatIpv6(parseIpv6(a!))}/${len}`;
}

export interface BridgeConfig {
  name: string;
  /** The bridge's own address with the subnet's prefix, e.g. "172.17.0.1/16" (a --bip). */
  address: string;
  /** The bridge's IPv6 address with the subnet's prefix ("fd00:1::1/64") on an IPv6 network. */
  address6?: string;
  mtu: number;
  /** Another IPv4 address the bridge carries ("10.0.0.2/24": a node's own address on an overlay). */
  extra?: string;
  /** The bridge's MAC, when it must be this one (the address an overlay's other nodes were told). */
  mac?: string;
}

export interface BridgeState {
  name: string;
  ifIndex: number;
  isBridge: boolean;
  up: boolean;
  mtu: number;
  /** IPv4 addresses as "a.b.c.d/len". */
  ipv4: string[];
  /** Global IPv6 addresses as "x::y/len" (link-local ones left out). */
  ipv6: string[];
  mac: string;
}

export interface EnsureBridgeResult {
  created: boolean;
  /** What had drifted and was put back ("address", "up", "mtu", ...), empty when nothing. */
  repaired: string[];
}

interface IpAddrJson {
  ifindex: number;
  address?: string;
  ifname: string;
  flags?: string[];
  mtu: number;
  linkinfo?: { info_kind?: string };
  addr_info?: Array<{ family: string; local: string; prefixlen: number }>;
}

export async function inspectBridge(name: string, signal?: AbortSignal): Promise<BridgeState | null> {
  let out: string;
  try {
    out = await run('ip', ['-j', '-d', 'addr', 'show', 'dev', name], { signal });
  } catch (err) {
    if (isCode(err, 'NotFound')) return null;
    throw err;
  }
  const link = (JSON.parse(out || '[]') as IpAddrJson[])[0];
  if (!link) return null;
  return {
    name: link.ifname,
    ifIndex: link.ifindex,
    isBridge: link.linkinfo?.info_kind === 'bridge',
    up: (link.flags ?? []).includes('UP'),
    mtu: link.mtu,
    mac: (link.address ?? '').toLowerCase(),
    ipv4: (link.addr_info ?? []).filter((a) => a.family === 'inet').map((a) => `${a.local}/${a.prefixlen}`),
    ipv6: (link.addr_info ?? []).filter((a) => a.family === 'inet6' && !a.local.toLowerCase().startsWith('fe80:')).map((a) => `${a.local}/${a.prefixlen}`),
  };
}

/** Make the host's bridge match `cfg`, changing only what differs (one `ip -batch` at most). */
export async function ensureBridge(cfg: BridgeConfig, signal?: AbortSignal): Promise<EnsureBridgeResult> {
  try {
    return await ensureBridgeOnce(cfg, signal);
  } catch (err) {
    // Someone (the reconciler and a container start, say) created or addressed it at the same time.
    if (!isCode(err, 'AlreadyExists')) throw err;
    return ensureBridgeOnce(cfg, signal);
  }
}

async function ensureBridgeOnce(cfg: BridgeConfig, signal?: AbortSignal): Promise<EnsureBridgeResult> {
  const want = parseCidr(cfg.address);
  const wantAddr = `${cfg.address.split('/')[0]}/${want.prefixLen}`;
  const want6 = cfg.address6 ? canonical6(cfg.address6) : undefined;
  const state = await inspectBridge(cfg.name, signal);
  const script: string[] = [];
  const repaired: string[] = [];
  const extra = cfg.extra ? `${cfg.extra.split('/')[0]}/${parseCidr(cfg.extra).prefixLen}` : undefined;
  if (!state) {
    script.push(`link add name ${cfg.name} mtu ${cfg.mtu} ${cfg.mac ? `address ${cfg.mac} ` : ''}type bridge`, `addr add ${wantAddr} dev ${cfg.name}`, `link set ${cfg.name} up`);
    if (extra) script.push(`addr add ${extra} dev ${cfg.name}`);
    if (want6) script.push(`addr add ${want6} dev ${cfg.name} nodad`);
  } else {
    if (!state.isBridge) throw failedPrecondition(`interface ${cfg.name} exists and is not a bridge`);
    if (cfg.mac && state.mac !== cfg.mac.toLowerCase()) {
      script.push(`link set ${cfg.name} address ${cfg.mac}`);
      repaired.push('mac');
    }
    if (extra && !state.ipv4.includes(extra)) {
      script.push(`addr add ${extra} dev ${cfg.name}`);
      repaired.push('extra address');
    }
    for (const a of state.ipv4) {
      if (a !== wantAddr && a !== extra) {
        script.push(`addr del ${a} dev ${cfg.name}`);
        repaired.push(`stale address ${a}`);
      }
    }
    if (!state.ipv4.includes(wantAddr)) {
      script.push(`addr add ${wantAddr} dev ${cfg.name}`);
      repaired.push('address');
    }
    if (want6 && !state.ipv6.includes(want6)) {
      script.push(`addr add ${want6} dev ${cfg.name} nodad`);
      repaired.push('ipv6 address');
    }
    if (state.mtu !== cfg.mtu) {
      script.push(`link set ${cfg.name} mtu ${cfg.mtu}`);
      repaired.push('mtu');
    }
    if (!state.up) {
      script.push(`link set ${cfg.name} up`);
      repaired.push('up');
    }
  }
  if (script.length > 0) await run('ip', ['-batch', '-'], { input: script.join('\n') + '\n', signal });
  return { created: !state, repaired };
}

/** Delete the bridge; false when it was already gone. */
export const deleteBridge = (name: string, signal?: AbortSignal): Promise<boolean> => deleteLink(name, signal);
