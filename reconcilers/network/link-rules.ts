// The firewall side of legacy links: with --icc=false (and iptables on) the default bridge drops
// traffic between its containers, and each link opens the linked container's exposed ports to
// the container that links to it. Programmed when the linking container starts, taken away when
// its run ends.
import type { Logger } from 'pino';
import { Networks } from '../../store/kinds/network.ts';
import type { NetworkStore } from './deps.ts';

export interface LinkRuleInput {
  chainPrefix: string;
  bridge: string;
  parentIp: string;
  childIp: string;
  ports: Array<{ port: number; proto: string }>;
}

export interface LinkRulesDriver {
  allowLink(cfg: LinkRuleInput, signal?: AbortSignal): Promise<void>;
  revokeLink(cfg: LinkRuleInput, signal?: AbortSignal): Promise<void>;
}

export class LinkFirewall {
  private readonly store: Pick<NetworkStore, 'get'>;
  private readonly driver: LinkRulesDriver;
  private readonly log: Logger;
  /** What was programmed per linking container, to take away at the end of its run. */
  private readonly programmed = new Map<string, LinkRuleInput[]>();

  constructor(store: Pick<NetworkStore, 'get'>, driver: LinkRulesDriver, log: Logger) {
    this.store = store;
    this.driver = driver;
    this.log = log;
  }

  async allow(containerId: string, networkId: string, parentIp: string, links: Array<{ ip: string; ports: Array<{ port: number; proto: string }> }>): Promise<void> {
    const net = this.store.get(Networks, networkId);
    const b = net?.spec.bridge;
    if (!b || b.icc || !b.iptables) return;
    const done = this.programmed.get(containerId) ?? [];
    for (const l of links) {
      if (!l.ip || l.ports.length === 0) continue;
      const cfg: LinkRuleInput = { chainPrefix: b.chainPrefix, bridge: b.bridgeName, parentIp, childIp: l.ip, ports: l.ports };
      await this.driver.allowLink(cfg);
      done.push(cfg);
    }
    if (done.length) this.programmed.set(containerId, done);
  }

  async revoke(containerId: string): Promise<void> {
    const cfgs = this.programmed.get(containerId) ?? [];
    this.programmed.delete(containerId);
    for (const cfg of cfgs) await this.driver.revokeLink(cfg).catch((err) => this.log.warn({ err }, 'removing link rules failed'));
  }
}
