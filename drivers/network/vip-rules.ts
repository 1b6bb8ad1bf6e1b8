// A container's way to the services' virtual IPs on its overlay networks: in its own network
// namespace, the nat table's OUTPUT jumps to one chain, ENGINE-VIP, where a connection to a virtual
// IP is sent to one of the service's tasks (DNAT, each task as likely as the others: netfilter's
// statistic match, as kube-proxy's iptables mode balances). The kernel here has no IPVS
// (CONFIG_IP_VS unset), which the reference uses for the same; the answers come back through the
// container's own conntrack. The chain is written whole each time (iptables-restore --noflush
// flushes a chain it declares), so what is there is exactly the list.
import type { VipRule } from '../../lib/ports/network.ts';
import { isCode } from '../../lib/errors.ts';
import { run } from './run.ts';

export const VIP_CHAIN = 'ENGINE-VIP';

/**
 * DNAT rules sending what `match` selects to each of `backends` as likely as the others: the i-th
 * of n taken with probability 1/(n-i) of what the ones before left (netfilter's statistic match,
 * kube-proxy's iptables mode). The virtual IPs' and the routing mesh's one balancing rule.
 */
export function balancedDnat(chain: string, match: string, backends: readonly string[]): string[] {
  return backends.map((b, i) => {
    const left = backends.length - i;
    const pick = left > 1 ? ` -m statistic --mode random --probability ${(1 / left).toFixed(10)}` : '';
    return `-A ${chain} ${match}${pick} -j DNAT --to-destination ${b}`;
  });
}

/** The chain's rules for `rules` (iptables-restore lines, no table header). */
export function vipChainLines(rules: readonly VipRule[]): string[] {
  return rules.flatMap((r) => balancedDnat(VIP_CHAIN, `-d ${r.vip}/32`, r.backends));
}

/** Makes the namespace of `pid` send each virtual IP of `rules` to its backends. */
export async function applyVipRules(pid: number, rules: readonly VipRule[], signal?: AbortSignal): Promise<void> {
  const ns = ['--net=/proc/' + pid + '/ns/net'];
  const input = ['*nat', `:${VIP_CHAIN} - [0:0]`, ...vipChainLines(rules), 'COMMIT', ''].join('\n');
  await run('nsenter', [...ns, 'iptables-restore', '--noflush', '-w'], { input, signal });
  try {
    await run('nsenter', [...ns, 'iptables', '-w', '-t', 'nat', '-C', 'OUTPUT', '-j', VIP_CHAIN], { signal });
  } catch (err) {
    if (!isCode(err, 'NotFound')) throw err;
    await run('nsenter', [...ns, 'iptables', '-w', '-t', 'nat', '-A', 'OUTPUT', '-j', VIP_CHAIN], { signal });
  }
}
