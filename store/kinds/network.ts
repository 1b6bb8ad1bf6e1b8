// The network kind: name = 64-hex id (the user-facing name is spec.name): the default `bridge`,
// `host`, `none` and user-defined bridge networks. The API writes the spec; the network reconciler
// sets up the bridge and its rules and writes status.
import * as z from 'zod';
import { ownerKeys, ownerRefSchema, type OwnerRef } from '../owner.ts';
import { invalidArgument, notFound } from '../../lib/errors.ts';
import { defineKind } from '../kind.ts';
import type { Store } from '../store.ts';
import type { IndexDef, Resource } from '../types.ts';

export type NetworkDriverName = 'bridge' | 'host' | 'null' | 'overlay';

export interface IpamPoolConfig {
  /** "172.17.0.0/16" */
  Subnet: string;
  /** The bridge's address, "172.17.0.1". */
  Gateway: string;
  /** Addresses are handed out only from here when set (--fixed-cidr). */
  IPRange?: string;
  /** Named addresses IPAM must never hand out; holds "DefaultGatewayIPv4" for --default-gateway. */
  AuxiliaryAddresses?: Record<string, string>;
}

export interface BridgeNetworkOptions {
  /** Linux bridge interface, "engine0". */
  bridgeName: string;
  mtu: number;
  icc: boolean;
  ipMasq: boolean;
  /** Whether the engine programs iptables for this network (--iptables). */
  iptables: boolean;
  /** --ip-forward: turn on net.ipv4.ip_forward. */
  ipForward: boolean;
  userlandProxy: boolean;
  /** Prefix of the engine's iptables chains ("ENGINE"); only tests change it. */
  chainPrefix: string;
  /** Containers' default route when it is not the bridge (--default-gateway), else "". */
  defaultGateway: string;
  /** Whether the engine programs ip6tables for an IPv6 network (--ip6tables). */
  ip6tables?: boolean;
  /** Containers' IPv6 default route when it is not the bridge (--default-gateway-v6), else "". */
  defaultGatewayV6?: string;
}

export interface NetworkSpec {
  id: string;
  /** "bridge", "host", "none". */
  name: string;
  driver: NetworkDriverName;
  /** 'swarm': this node's instance of a swarm overlay network (reconcilers/node/overlay.ts makes it). */
  scope: 'local' | 'swarm';
  /** RFC 3339 nano. */
  created: string;
  enableIPv6: boolean;
  internal: boolean;
  attachable: boolean;
  ingress: boolean;
  ipam: { Driver: 'default'; Options: Record<string, string> | null; Config: IpamPoolConfig[] };
  /** Driver options as `network inspect` shows them (com.docker.network.* keys are wire names). */
  options: Record<string, string>;
  labels: Record<string, string>;
  /** Present for driver 'bridge' (and 'overlay': its tasks plug into a Linux bridge too). */
  bridge?: BridgeNetworkOptions;
  /** Present for driver 'overlay': the VXLAN device enslaved to the bridge. */
  overlay?: OverlayOptions;
  /** The object that made it (a stack), found by the `owner` index (store/owner.ts). */
  ownerRef?: OwnerRef;
  desired: 'present' | 'removed';
}

export interface OverlayOptions {
  /** The VXLAN device, "ovx-<vni>". */
  vxlanName: string;
  vni: number;
  /** This node's VTEP address (its data path address). */
  local: string;
  /** The data path's UDP port (4789). */
  port: number;
  /** This node's own address on the network ("10.0.0.2/24", the routing mesh's on ingress): on the bridge, whose MAC is made from it. */
  hostAddress?: string;
}

/** Whether the network's containers plug into a Linux bridge of ours (bridge and overlay networks). */
export const isBridged = (s: Pick<NetworkSpec, 'driver'>): boolean => s.driver === 'bridge' || s.driver === 'overlay';

export interface NetworkStatus {
  observedGeneration: number;
  phase: 'pending' | 'ready' | 'failed';
  error: string;
  /** What the last reconcile had to put back ("created bridge", "iptables: 3 changes"), for diagnosis. */
  lastRepair: string;
  /** RFC 3339 time of lastRepair. */
  lastRepairAt: string;
  /** What is programmed on the host now, so a changed spec (or removal) can take the old state away. */
  applied?: AppliedBridge;
}

export interface AppliedBridge {
  bridgeName: string;
  subnet: string;
  chainPrefix: string;
  iptables: boolean;
  icc: boolean;
  ipMasq: boolean;
  /** The IPv6 subnet, when the network has one. */
  subnet6?: string;
  /** ip6tables rules were programmed for subnet6. */
  ip6tables?: boolean;
  /** An overlay's VXLAN device. */
  vxlan?: string;
}

/** The network's IPv4 pool (a bridge network has one, listed first). */
export function ipv4Pool(spec: Pick<NetworkSpec, 'ipam'>): IpamPoolConfig | undefined {
  return spec.ipam.Config.find((p) => !p.Subnet.includes(':'));
}

/** The network's IPv6 pool (EnableIPv6 with a v6 subnet), if any. */
export function ipv6Pool(spec: Pick<NetworkSpec, 'ipam' | 'enableIPv6'>): IpamPoolConfig | undefined {
  return spec.enableIPv6 ? spec.ipam.Config.find((p) => p.Subnet.includes(':')) : undefined;
}

/** What a container's NetworkSettings.Networks[name] holds, as inspect returns it. */
export interface EndpointSettings {
  IPAMConfig: { IPv4Address?: string; IPv6Address?: string } | null;
  Links: string[] | null;
  Aliases: string[] | null;
  MacAddress: string;
  DriverOpts: Record<string, string> | null;
  NetworkID: string;
  EndpointID: string;
  Gateway: string;
  IPAddress: string;
  IPPrefixLen: number;
  IPv6Gateway: string;
  GlobalIPv6Address: string;
  GlobalIPv6PrefixLen: number;
  DNSNames: string[] | null;
}

const stringMap = z.record(z.string(), z.string());

const pool = z.object({
  Subnet: z.string(),
  Gateway: z.string(),
  IPRange: z.string().optional(),
  AuxiliaryAddresses: stringMap.optional(),
});

const bridgeOptions = z.object({
  bridgeName: z.string(),
  mtu: z.number().int(),
  icc: z.boolean(),
  ipMasq: z.boolean(),
  iptables: z.boolean(),
  ipForward: z.boolean(),
  userlandProxy: z.boolean(),
  chainPrefix: z.string(),
  defaultGateway: z.string(),
  ip6tables: z.boolean().optional(),
  defaultGatewayV6: z.string().optional(),
});

const networkSpecSchema = z.object({
  id: z.string(),
  name: z.string(),
  driver: z.enum(['bridge', 'host', 'null', 'overlay']),
  scope: z.enum(['local', 'swarm']),
  created: z.string(),
  enableIPv6: z.boolean(),
  internal: z.boolean(),
  attachable: z.boolean(),
  ingress: z.boolean(),
  ipam: z.object({ Driver: z.literal('default'), Options: stringMap.nullable(), Config: z.array(pool) }),
  options: stringMap,
  labels: stringMap,
  bridge: bridgeOptions.optional(),
  overlay: z.object({ vxlanName: z.string(), vni: z.number().int(), local: z.string(), port: z.number().int(), hostAddress: z.string().optional() }).optional(),
  ownerRef: ownerRefSchema.optional(),
  desired: z.enum(['present', 'removed']),
}) satisfies z.ZodType<NetworkSpec>;

const networkStatusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  phase: z.enum(['pending', 'ready', 'failed']),
  error: z.string(),
  lastRepair: z.string(),
  lastRepairAt: z.string(),
  applied: z
    .object({
      bridgeName: z.string(),
      subnet: z.string(),
      chainPrefix: z.string(),
      iptables: z.boolean(),
      icc: z.boolean(),
      ipMasq: z.boolean(),
      subnet6: z.string().optional(),
      ip6tables: z.boolean().optional(),
      vxlan: z.string().optional(),
    })
    .optional(),
}) satisfies z.ZodType<NetworkStatus>;

export type NetworkResource = Resource<NetworkSpec, NetworkStatus>;

export const Networks = defineKind<NetworkSpec, NetworkStatus>({ name: 'network', version: 1, schema: { spec: networkSpecSchema, status: networkStatusSchema }, indexes: { name: (r) => [r.spec.name], owner: (r) => ownerKeys(r.spec) } });

/** Networks by name: a name being removed and its successor may share a key for a while. */
export const NETWORKS_BY_NAME = Networks.indexes.name!;

/** The networks named `name` that are not being removed, by the name index. */
/** The builtin networks' names (and the modes that name no network): never created or removed by a request. */
export function isPredefinedName(name: string): boolean {
  return name === 'bridge' || name === 'host' || name === 'none' || name === 'default' || name.startsWith('container:');
}

export function liveNetworksNamed(
  store: { byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] },
  name: string,
): Array<Resource<NetworkSpec, NetworkStatus>> {
  return store.byIndex(NETWORKS_BY_NAME, name).filter((n) => n.spec.desired !== 'removed');
}

/** The networks the daemon has now (a `bridge` turned off with --bridge none is not one of them). */
export function liveNetworks(store: Pick<Store, 'list'>): NetworkResource[] {
  return store.list(Networks).filter((n) => n.spec.desired !== 'removed');
}

/** Full id, then exact name (must be unique), then unique id prefix; 404 `network x not found`. */
export function findNetwork(store: Pick<Store, 'list' | 'get' | 'byIndex'>, ref: string, opts: { scope?: string } = {}): NetworkResource {
  const inScope = (n: NetworkResource | undefined): n is NetworkResource => !!n && n.spec.desired !== 'removed' && (!opts.scope || n.spec.scope === opts.scope);
  if (ref) {
    const exact = store.get(Networks, ref);
    if (inScope(exact)) return exact;
    const byName = liveNetworksNamed(store, ref).filter(inScope);
    if (byName.length === 1) return byName[0]!;
    if (byName.length > 1) throw invalidArgument(`network ${ref} is ambiguous (${byName.length} matches found based on name)`);
    const byPrefix = liveNetworks(store).filter((n) => inScope(n) && n.spec.id.startsWith(ref));
    if (byPrefix.length === 1) return byPrefix[0]!;
    if (byPrefix.length > 1) throw invalidArgument(`network ${ref} is ambiguous (${byPrefix.length} matches found based on ID prefix)`);
  }
  throw notFound(`network ${ref} not found`);
}

/** The network named `name` that is not being removed (the first, should a removal and its successor overlap). */
export function findNetworkByName(store: { byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] }, name: string): NetworkResource | undefined {
  return liveNetworksNamed(store, name)[0];
}
