// The bridge network driver as one object: what the network reconciler and attacher call.
// Wraps the bridge, iptables, sysctl and veth modules; keeps no state of its own.
import type { Logger } from 'pino';
import { deleteBridge, ensureBridge, inspectBridge, type BridgeConfig, type BridgeState, type EnsureBridgeResult } from './bridge.ts';
import { baseRules, bridgeRules, Iptables, staleBaseRules, staleBridgeRules, type BridgeRulesConfig } from './iptables.ts';
import { enableIpForward, enableIpv6Forward, IP_FORWARD_PATH, IPV6_FORWARD_PATHS } from './sysctl.ts';
import { enableRouteLocalnet, linkRules, loopbackRules, portRules, type LinkRuleConfig, type PortRuleConfig } from './port-rules.ts';
import { deleteVxlan, ensureVxlan, syncPeers } from './vxlan.ts';
import type { IngressConfig, VipRule, VxlanConfig, VxlanPeer } from '../../lib/ports/network.ts';
import { IngressRules } from './ingress-rules.ts';
import { applyVipRules } from './vip-rules.ts';
import { attachContainer, detachContainer, ensureBridgePort, type AttachRequest, type AttachResult } from './veth.ts';

export interface BridgeIptablesConfig extends BridgeRulesConfig {
  userlandProxy: boolean;
}

export interface BridgeDriverOptions {
  log: Logger;
  iptablesBin?: string;
  ip6tablesBin?: string;
  ipForwardPath?: string;
  ipv6ForwardPaths?: readonly string[];
}

export class BridgeDriver {
  private readonly log: Logger;
  private readonly ipt: Iptables;
  private readonly ipt6: Iptables;
  private readonly ingress: IngressRules;
  private readonly ipForwardPath: string;
  private readonly ipv6ForwardPaths: readonly string[];

  constructor(opts: BridgeDriverOptions) {
    this.log = opts.log.child({ component: 'bridge-driver' });
    this.ipt = new Iptables({ bin: opts.iptablesBin });
    this.ipt6 = new Iptables({ bin: opts.ip6tablesBin ?? 'ip6tables', family: 6 });
    this.ingress = new IngressRules({ iptablesBin: opts.iptablesBin });
    this.ipForwardPath = opts.ipForwardPath ?? IP_FORWARD_PATH;
    this.ipv6ForwardPaths = opts.ipv6ForwardPaths ?? IPV6_FORWARD_PATHS;
  }

  inspectBridge(name: string, signal?: AbortSignal): Promise<BridgeState | null> {
    return inspectBridge(name, signal);
  }

  async ensureBridge(cfg: BridgeConfig, signal?: AbortSignal): Promise<EnsureBridgeResult> {
    const res = await ensureBridge(cfg, signal);
    if (res.created || res.repaired.length > 0) this.log.info({ bridge: cfg.name, ...res }, 'bridge set up');
    return res;
  }

  deleteBridge(name: string, signal?: AbortSignal): Promise<boolean> {
    return deleteBridge(name, signal);
  }

  async ensureVxlan(cfg: VxlanConfig, signal?: AbortSignal): Promise<string[]> {
    const repaired = await ensureVxlan(cfg, signal);
    if (repaired.length) this.log.info({ vxlan: cfg.name, vni: cfg.vni, repaired }, 'vxlan set up');
    return repaired;
  }

  deleteVxlan(name: string, signal?: AbortSignal): Promise<boolean> {
    return deleteVxlan(name, signal);
  }

  syncPeers(name: string, peers: readonly VxlanPeer[], signal?: AbortSignal): Promise<number> {
    return syncPeers(name, peers, signal);
  }

  /** The routing mesh's rules (null: none, taken away). */
  async applyIngress(cfg: IngressConfig | null, chainPrefix: string, signal?: AbortSignal): Promise<void> {
    if (cfg) await this.ingress.apply(cfg, signal);
    else await this.ingress.remove(chainPrefix, signal);
  }

  /** A container's virtual IP rules (in its own network namespace). */
  applyVipRules(pid: number, rules: readonly VipRule[], signal?: AbortSignal): Promise<void> {
    return applyVipRules(pid, rules, signal);
  }

  /** iptables, or ip6tables for the rules of an IPv6 subnet. */
  private tables(family: 4 | 6 | undefined): Iptables {
    return family === 6 ? this.ipt6 : this.ipt;
  }

  /** Chains, jumps and this bridge's rules; returns how many chains/rules were added or removed. */
  async ensureIptables(cfg: BridgeIptablesConfig, signal?: AbortSignal): Promise<number> {
    const ipt = this.tables(cfg.family);
    const chains = await ipt.ensureChains(cfg.chainPrefix, signal);
    const base = { chainPrefix: cfg.chainPrefix, userlandProxy: cfg.userlandProxy, family: cfg.family };
    const removed = await ipt.removeRules([...staleBaseRules(base), ...staleBridgeRules(cfg)], signal);
    const added = await ipt.ensureRules([...baseRules(base), ...bridgeRules(cfg)], signal);
    const n = chains.length + removed + added.length;
    if (n > 0) this.log.info({ bridge: cfg.bridge, family: cfg.family ?? 4, chains, added: added.length, removed }, 'iptables rules set up');
    return n;
  }

  /** Remove this bridge's rules, and with `chains` also the engine's chains and the jumps into them. */
  async removeIptables(cfg: BridgeRulesConfig, opts: { chains: boolean }, signal?: AbortSignal): Promise<void> {
    // Every variant this bridge may have had: icc either way, masquerade, internal or not.
    const rules = [
      ...bridgeRules({ ...cfg, icc: true, ipMasq: true, internal: false }),
      ...staleBridgeRules({ ...cfg, icc: true, ipMasq: false, internal: false }),
      ...staleBridgeRules({ ...cfg, icc: true, ipMasq: true, internal: true }),
      ...(cfg.family === 6 ? [] : loopbackRules(cfg)),
    ];
    const ipt = this.tables(cfg.family);
    await ipt.removeRules(rules, signal);
    if (opts.chains) await ipt.removeChains(cfg.chainPrefix, signal);
  }

  /** The DNAT, ACCEPT and hairpin rules of one published port (and, without the proxy, loopback access to it). */
  async publishPort(cfg: PortRuleConfig, signal?: AbortSignal): Promise<void> {
    if (!cfg.userlandProxy) {
      await enableRouteLocalnet(cfg.bridge);
      await this.ipt.ensureRules(loopbackRules(cfg), signal);
    }
    await this.ipt.addSpelled(portRules(cfg), signal);
  }

  async unpublishPort(cfg: PortRuleConfig, signal?: AbortSignal): Promise<void> {
    await this.ipt.removeSpelled(portRules(cfg), signal);
  }

  /** The --icc=false exception of one legacy link. */
  async allowLink(cfg: LinkRuleConfig, signal?: AbortSignal): Promise<void> {
    await this.ipt.ensureRules(linkRules(cfg), signal);
  }

  async revokeLink(cfg: LinkRuleConfig, signal?: AbortSignal): Promise<void> {
    await this.ipt.removeRules(linkRules(cfg), signal);
  }

  enableIpForward(): Promise<boolean> {
    return enableIpForward(this.ipForwardPath);
  }

  enableIpv6Forward(): Promise<boolean> {
    return enableIpv6Forward(this.ipv6ForwardPaths);
  }

  setForwardPolicy(policy: 'ACCEPT' | 'DROP', signal?: AbortSignal): Promise<void> {
    return this.ipt.setForwardPolicy(policy, signal);
  }

  attachContainer(req: AttachRequest): Promise<AttachResult> {
    return attachContainer(req);
  }

  detachContainer(hostVeth: string, signal?: AbortSignal): Promise<boolean> {
    return detachContainer(hostVeth, signal);
  }

  ensureBridgePort(bridge: string, hostVeth: string, signal?: AbortSignal): Promise<boolean> {
    return ensureBridgePort(bridge, hostVeth, signal);
  }
}
