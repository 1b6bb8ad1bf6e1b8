// The iptables rules of one published port, laid out as the reference daemon's: a DNAT in the
// engine's nat chain (reached from PREROUTING and OUTPUT for local destinations), an ACCEPT in
// its filter chain for the forwarded traffic, and a MASQUERADE so a container reaching its own
// published port gets the answer back (hairpin). With the userland proxy on, traffic coming from
// the bridge itself is left to the proxy (`! -i <bridge>`), as the reference does.
import { writeFile } from 'node:fs/promises';
import { chainNames, type IptablesRule } from './iptables.ts';

export interface PortRuleConfig {
  chainPrefix: string;
  bridge: string;
  proto: 'tcp' | 'udp' | 'sctp';
  /** "0.0.0.0" (any) or one host address. */
  hostIp: string;
  hostPort: number;
  containerIp: string;
  containerPort: number;
  userlandProxy: boolean;
}

export function portRules(cfg: PortRuleConfig): IptablesRule[] {
  const c = chainNames(cfg.chainPrefix);
  const p = cfg.proto;
  const dst = cfg.hostIp && cfg.hostIp !== '0.0.0.0' ? ['-d', `${cfg.hostIp}/32`] : [];
  const fromOutside = cfg.userlandProxy ? ['!', '-i', cfg.bridge] : [];
  const to = `${cfg.containerIp}:${cfg.containerPort}`;
  return [
    { table: 'nat', chain: c.engine, args: [...dst, ...fromOutside, '-p', p, '-m', p, '--dport', String(cfg.hostPort), '-j', 'DNAT', '--to-destination', to] },
    { table: 'filter', chain: c.engine, args: ['-d', `${cfg.containerIp}/32`, '!', '-i', cfg.bridge, '-o', cfg.bridge, '-p', p, '-m', p, '--dport', String(cfg.containerPort), '-j', 'ACCEPT'] },
    { table: 'nat', chain: 'POSTROUTING', args: ['-s', `${cfg.containerIp}/32`, '-d', `${cfg.containerIp}/32`, '-o', cfg.bridge, '-p', p, '-m', p, '--dport', String(cfg.containerPort), '-j', 'MASQUERADE'] },
  ];
}

/**
 * Without the userland proxy, the host reaches published ports on 127.0.0.1 through the DNAT
 * itself: the bridge must accept packets from loopback addresses (route_localnet) and they leave
 * masqueraded with the bridge's address.
 */
export function loopbackRules(cfg: { bridge: string }): IptablesRule[] {
  return [{ table: 'nat', chain: 'POSTROUTING', args: ['-o', cfg.bridge, '-m', 'addrtype', '--src-type', 'LOCAL', '-j', 'MASQUERADE'] }];
}

export interface LinkRuleConfig {
  chainPrefix: string;
  bridge: string;
  parentIp: string;
  childIp: string;
  ports: Array<{ port: number; proto: string }>;
}

/** With --icc=false, a link lets the two containers talk on the linked one's exposed ports (both directions). */
export function linkRules(cfg: LinkRuleConfig): IptablesRule[] {
  const c = chainNames(cfg.chainPrefix);
  const out: IptablesRule[] = [];
  for (const { port, proto } of cfg.ports) {
    const io = ['-i', cfg.bridge, '-o', cfg.bridge, '-p', proto, '-m', proto];
    out.push(
      { table: 'filter', chain: c.engine, args: [...io.slice(0, 4), '-s', `${cfg.parentIp}/32`, '-d', `${cfg.childIp}/32`, ...io.slice(4), '--dport', String(port), '-j', 'ACCEPT'] },
      { table: 'filter', chain: c.engine, args: [...io.slice(0, 4), '-s', `${cfg.childIp}/32`, '-d', `${cfg.parentIp}/32`, ...io.slice(4), '--sport', String(port), '-j', 'ACCEPT'] },
    );
  }
  return out;
}

export async function enableRouteLocalnet(bridge: string): Promise<void> {
  await writeFile(`/proc/sys/net/ipv4/conf/${bridge}/route_localnet`, '1\n');
}
