// An overlay network's VXLAN device on this node, enslaved to the network's bridge: one VNI per
// network, the data path's UDP port, this node's VTEP address, no learning and ARP answered from
// the neighbour table (`proxy`), as the reference's overlay driver makes it. What the other nodes
// run on the network is programmed, not learned: for each remote endpoint a forwarding entry (its
// MAC behind its node's VTEP) and a neighbour entry (its IP at its MAC) — syncPeers makes the
// device's entries exactly the list, adding what is missing and deleting what is no longer there.
import { isCode } from '../../lib/errors.ts';
import type { VxlanConfig, VxlanPeer } from '../../lib/ports/network.ts';
import { deleteLink, run } from './run.ts';

interface LinkJson {
  ifname: string;
  mtu: number;
  master?: string;
  flags?: string[];
  linkinfo?: { info_kind?: string; info_data?: { id?: number; local?: string; port?: number } };
}

async function show(name: string, signal?: AbortSignal): Promise<LinkJson | null> {
  try {
    return (JSON.parse((await run('ip', ['-j', '-d', 'link', 'show', 'dev', name], { signal })) || '[]') as LinkJson[])[0] ?? null;
  } catch (err) {
    if (isCode(err, 'NotFound')) return null;
    throw err;
  }
}

/** Makes the VXLAN device match `cfg` (made anew when its VNI, VTEP or port differ); what had to change. */
export async function ensureVxlan(cfg: VxlanConfig, signal?: AbortSignal): Promise<string[]> {
  let link = await show(cfg.name, signal);
  const info = link?.linkinfo?.info_data;
  const repaired: string[] = [];
  if (link && (link.linkinfo?.info_kind !== 'vxlan' || info?.id !== cfg.vni || info?.local !== cfg.local || info?.port !== cfg.port)) {
    await deleteVxlan(cfg.name, signal);
    link = null;
    repaired.push('remade vxlan');
  }
  const script: string[] = [];
  if (!link) {
    script.push(`link add ${cfg.name} mtu ${cfg.mtu} type vxlan id ${cfg.vni} local ${cfg.local} dstport ${cfg.port} nolearning proxy`);
    if (!repaired.length) repaired.push(`created ${cfg.name}`);
  } else if (link.mtu !== cfg.mtu) {
    script.push(`link set ${cfg.name} mtu ${cfg.mtu}`);
    repaired.push('vxlan mtu');
  }
  if (!link || link.master !== cfg.bridge) {
    script.push(`link set ${cfg.name} master ${cfg.bridge}`);
    if (link) repaired.push('vxlan back on its bridge');
  }
  if (!link || !(link.flags ?? []).includes('UP')) {
    script.push(`link set ${cfg.name} up`);
    if (link) repaired.push('vxlan up');
  }
  if (script.length) await run('ip', ['-batch', '-'], { input: script.join('\n') + '\n', signal });
  return repaired;
}

/** Deletes the device (its entries go with it); false when it was gone. */
export const deleteVxlan = (name: string, signal?: AbortSignal): Promise<boolean> => deleteLink(name, signal);

const PERMANENT = (flags: unknown) => Array.isArray(flags) && flags.includes('permanent');

/** The device's forwarding and neighbour entries made exactly `peers`; how many changed. */
export async function syncPeers(name: string, peers: readonly VxlanPeer[], signal?: AbortSignal): Promise<number> {
  const fdb = JSON.parse((await run('bridge', ['-j', 'fdb', 'show', 'dev', name], { signal })) || '[]') as Array<{ mac: string; dst?: string; state?: string; flags?: string[] }>;
  const neigh = JSON.parse((await run('ip', ['-j', 'neigh', 'show', 'dev', name], { signal })) || '[]') as Array<{ dst: string; lladdr?: string; state?: string[] }>;
  const wantFdb = new Map(peers.map((p) => [p.mac.toLowerCase(), p.vtep]));
  const wantNeigh = new Map(peers.map((p) => [p.ip, p.mac.toLowerCase()]));
  const script: string[] = [];
  const haveFdb = new Map<string, string>();
  for (const e of fdb) {
    if (!e.dst || e.mac === '00:00:00:00:00:00') continue;
    const want = wantFdb.get(e.mac.toLowerCase());
    if (want === e.dst) haveFdb.set(e.mac.toLowerCase(), e.dst);
    else script.push(`bridge fdb del ${e.mac} dev ${name} dst ${e.dst}`);
  }
  for (const [mac, vtep] of wantFdb) if (haveFdb.get(mac) !== vtep) script.push(`bridge fdb replace ${mac} dev ${name} dst ${vtep} self permanent`);
  const haveNeigh = new Map<string, string>();
  for (const e of neigh) {
    const want = wantNeigh.get(e.dst);
    if (want && want === e.lladdr?.toLowerCase() && (PERMANENT(e.state) || e.state === undefined)) haveNeigh.set(e.dst, want);
    else script.push(`ip neigh del ${e.dst} dev ${name}`);
  }
  for (const [ip, mac] of wantNeigh) if (haveNeigh.get(ip) !== mac) script.push(`ip neigh replace ${ip} lladdr ${mac} dev ${name} nud permanent`);
  // One batch per tool; -force goes on past an entry already gone.
  for (const tool of ['bridge', 'ip']) {
    const lines = script.filter((l) => l.startsWith(`${tool} `)).map((l) => l.slice(tool.length + 1));
    if (lines.length) await run(tool, ['-force', '-batch', '-'], { input: lines.join('\n') + '\n', signal }).catch((err: unknown) => {
      if (!isCode(err, 'NotFound')) throw err;
    });
  }
  return script.length;
}
