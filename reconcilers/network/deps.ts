// What the network reconciler and attacher need: the store (with create + transaction, which
// store/store.ts provides beyond ReconcilerStore), the bridge driver, and the daemon's options.
import type { Store } from '../../store/store.ts';
import type { ReconcilerStore } from '../store-like.ts';
import type { AttachRequest, AttachResult, VxlanConfig } from '../../lib/ports/network.ts';

export interface NetworkStore extends ReconcilerStore, Pick<Store, 'create'> {
  transaction<R>(fn: () => R): R;
}

export interface NetworkDriverPort {
  inspectBridge(name: string, signal?: AbortSignal): Promise<{ ipv4: string[]; isBridge: boolean } | null>;
  ensureBridge(cfg: { name: string; address: string; address6?: string; mtu: number; extra?: string; mac?: string }, signal?: AbortSignal): Promise<{ created: boolean; repaired: string[] }>;
  deleteBridge(name: string, signal?: AbortSignal): Promise<boolean>;
  /** An overlay network's VXLAN device on its bridge; what had to change. */
  ensureVxlan(cfg: VxlanConfig, signal?: AbortSignal): Promise<string[]>;
  deleteVxlan(name: string, signal?: AbortSignal): Promise<boolean>;
  ensureIptables(
    cfg: { chainPrefix: string; bridge: string; subnet: string; icc: boolean; ipMasq: boolean; userlandProxy: boolean; internal?: boolean; family?: 4 | 6 },
    signal?: AbortSignal,
  ): Promise<number>;
  removeIptables(
    cfg: { chainPrefix: string; bridge: string; subnet: string; icc: boolean; ipMasq: boolean; family?: 4 | 6 },
    opts: { chains: boolean },
    signal?: AbortSignal,
  ): Promise<void>;
  enableIpForward(): Promise<boolean>;
  /** net.ipv6.conf.{default,all}.forwarding = 1 for an IPv6 network; true when it changed something. */
  enableIpv6Forward(): Promise<boolean>;
  setForwardPolicy(policy: 'ACCEPT' | 'DROP', signal?: AbortSignal): Promise<void>;
  /** Put a container's host veth back on the bridge if it is loose; true when it had to. */
  ensureBridgePort(bridge: string, hostVeth: string, signal?: AbortSignal): Promise<boolean>;
  attachContainer(req: AttachRequest): Promise<AttachResult>;
  detachContainer(hostVeth: string, signal?: AbortSignal): Promise<boolean>;
}

/** The daemon options that shape the default bridge (flags --bridge, --bip, ... or daemon.json). */
export interface DefaultBridgeConfig {
  /** --bridge/-b: interface name; "" or undefined means engine0, "none" disables the default bridge. */
  bridge?: string;
  /** --bip: the bridge's address with prefix, "172.17.0.1/16" by default. */
  bip?: string;
  /** --fixed-cidr: containers' addresses come from this part of the subnet. */
  fixedCidr?: string;
  /** --mtu, default 1500. */
  mtu?: number;
  /** --iptables, default true. */
  iptables?: boolean;
  /** --ip-forward, default true. */
  ipForward?: boolean;
  /** --ip-masq, default true (no effect with iptables off). */
  ipMasq?: boolean;
  /** --icc, default true. */
  icc?: boolean;
  /** --default-gateway: containers' default route instead of the bridge address. */
  defaultGateway?: string;
  /** --ipv6: the default bridge gets IPv6 (EnableIPv6), with addresses from --fixed-cidr-v6. */
  ipv6?: boolean;
  /** --fixed-cidr-v6: the default bridge's IPv6 subnet; the bridge takes its first address. */
  fixedCidrV6?: string;
  /** --default-gateway-v6: containers' IPv6 default route instead of the bridge address. */
  defaultGatewayV6?: string;
  /** --ip6tables (with --iptables): rules for the IPv6 subnet too. */
  ip6tables?: boolean;
  /** --userland-proxy, default true (only shapes the nat OUTPUT jump until ports are published). */
  userlandProxy?: boolean;
  /** Prefix of the iptables chains, "ENGINE"; tests use their own. */
  chainPrefix?: string;
}

export const DEFAULT_BRIDGE = 'engine0';
export const DEFAULT_BIP = '172.17.0.1/16';
export const DEFAULT_MTU = 1500;
export const DEFAULT_CHAIN_PREFIX = 'ENGINE';
