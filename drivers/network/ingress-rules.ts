// The routing mesh's rules on a node: a port published in ingress mode answers on every address of
// the node and goes to one of the service's tasks on the ingress network, wherever it runs.
// - nat <P>-INGRESS (from PREROUTING and OUTPUT, for local destinations): the published port sent
//   to a task's ingress address and target port (DNAT; each task as likely: the statistic match);
// - nat <P>-INGRESS-POST (from POSTROUTING): what was sent there leaves the ingress bridge with the
//   node's own ingress address as its source (SNAT), so the task answers through this node;
// - filter <P>-INGRESS (from FORWARD, first): what was sent there may pass.
// The chains are written whole (iptables-restore --noflush flushes a chain it declares); removal
// takes the jumps and the chains away. (The reference does this with IPVS in its ingress sandbox;
// this kernel has none, CONFIG_IP_VS unset.)
import type { IngressConfig } from '../../lib/ports/network.ts';
import { Iptables, type IptablesRule } from './iptables.ts';
import { run } from './run.ts';
import { balancedDnat } from './vip-rules.ts';

const names = (prefix: string) => ({ nat: `${prefix}-INGRESS`, post: `${prefix}-INGRESS-POST`, filter: `${prefix}-INGRESS` });

function jumps(prefix: string): IptablesRule[] {
  const c = names(prefix);
  return [
    { table: 'nat', chain: 'PREROUTING', args: ['-m', 'addrtype', '--dst-type', 'LOCAL', '-j', c.nat], insert: true },
    { table: 'nat', chain: 'OUTPUT', args: ['-m', 'addrtype', '--dst-type', 'LOCAL', '-j', c.nat], insert: true },
    { table: 'nat', chain: 'POSTROUTING', args: ['-j', c.post], insert: true },
    { table: 'filter', chain: 'FORWARD', args: ['-j', c.filter], insert: true },
  ];
}

/** The iptables-restore input that makes the chains exactly `cfg`. */
export function ingressRestore(cfg: IngressConfig): string {
  const c = names(cfg.chainPrefix);
  const nat: string[] = [];
  for (const p of cfg.ports) nat.push(...balancedDnat(c.nat, `-p ${p.protocol} --dport ${p.published}`, p.backends.map((b) => `${b}:${p.target}`)));
  return [
    '*nat',
    `:${c.nat} - [0:0]`,
    `:${c.post} - [0:0]`,
    ...nat,
    `-A ${c.post} -o ${cfg.bridge} -m conntrack --ctstate DNAT -j SNAT --to-source ${cfg.source}`,
    'COMMIT',
    '*filter',
    `:${c.filter} - [0:0]`,
    `-A ${c.filter} -o ${cfg.bridge} -m conntrack --ctstate DNAT -j ACCEPT`,
    `-A ${c.filter} -i ${cfg.bridge} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
    'COMMIT',
    '',
  ].join('\n');
}

export class IngressRules {
  private readonly ipt: Iptables;
  private readonly bin: string;

  constructor(opts: { iptablesBin?: string } = {}) {
    this.bin = opts.iptablesBin ?? 'iptables';
    this.ipt = new Iptables({ bin: opts.iptablesBin });
  }

  async apply(cfg: IngressConfig, signal?: AbortSignal): Promise<void> {
    await run(`${this.bin}-restore`, ['--noflush', '-w'], { input: ingressRestore(cfg), signal });
    await this.ipt.ensureRules(jumps(cfg.chainPrefix), signal);
  }

  async remove(chainPrefix: string, signal?: AbortSignal): Promise<void> {
    await this.ipt.removeRules(jumps(chainPrefix), signal);
    const c = names(chainPrefix);
    for (const [table, chain] of [['nat', c.nat], ['nat', c.post], ['filter', c.filter]] as const) {
      for (const op of ['-F', '-X']) await run(this.bin, ['-w', '-t', table, op, chain], { signal }).catch(() => undefined);
    }
  }
}
