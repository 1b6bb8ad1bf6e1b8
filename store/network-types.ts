// Resource shapes for networking: kind 'network' (the default `bridge`, plus `host` and `none`)
// and kind 'ipam-allocation' (one durable record per address handed out).
import type { IndexDef, Resource } from './types.ts';

// ---------------------------------------------------------------------------------------------
// Networks: kind 'network', name = 64-hex id. The user-facing name lives in spec.name.

export type NetworkDriverName = 'bridge' | 'host' | 'null';

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
  scope: 'local';
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
  /** Present for driver 'bridge'. */
  bridge?: BridgeNetworkOptions;
  desired: 'present' | 'removed';
}

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
}

/** The network's IPv4 pool (a bridge network has one, listed first). */
export function ipv4Pool(spec: Pick<NetworkSpec, 'ipam'>): IpamPoolConfig | undefined {
  return spec.ipam.Config.find((p) => !p.Subnet.includes(':'));
}

/** The network's IPv6 pool (EnableIPv6 with a v6 subnet), if any. */
export function ipv6Pool(spec: Pick<NetworkSpec, 'ipam' | 'enableIPv6'>): IpamPoolConfig | undefined {
  return spec.enableIPv6 ? spec.ipam.Config.find((p) => p.Subnet.includes(':')) : undefined;
}

// ---------------------------------------------------------------------------------------------
// IPAM allocations: kind 'ipam-allocation', name = `<networkId>/<ipv4>` (or the canonical IPv6 text). The record's existence
// is the claim: creating it fails when the address is taken, so an address cannot be handed out
// twice, and it survives daemon restarts. Deleted when the container is removed.

export interface IpamAllocationSpec {
  networkId: string;
  /** "172.17.0.2", or "fd00:1::2" (canonical) for an IPv6 address. */
  address: string;
  prefixLen: number;
  containerId: string;
  /** RFC 3339 time of the allocation. */
  allocatedAt: string;
}
export type IpamAllocationStatus = Record<string, never>;

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

// ---------------------------------------------------------------------------------------------
// Host ports: kind 'port-allocation', name = `<proto>/<host ip>/<host port>`. The record's
// existence is the claim on the host port, as for addresses; it holds what the rules were made
// from, so they can be taken away from the record alone (run end, crash recovery).

export interface PortAllocationSpec {
  containerId: string;
  proto: 'tcp' | 'udp' | 'sctp';
  hostIp: string;
  hostPort: number;
  containerIp: string;
  containerPort: number;
  bridge: string;
  chainPrefix: string;
  /** iptables rules were programmed for it (the network has --iptables on). */
  iptables: boolean;
  userlandProxy: boolean;
}
export type PortAllocationStatus = Record<string, never>;

export const NETWORK_KIND = {
  network: 'network',
  ipamAllocation: 'ipam-allocation',
  portAllocation: 'port-allocation',
} as const;

/** Networks by name: a name being removed and its successor may share a key for a while. */
export const NETWORKS_BY_NAME: IndexDef<NetworkSpec, NetworkStatus> = { kind: NETWORK_KIND.network, name: 'name', keys: (r) => [r.spec.name] };

/** The networks named `name` that are not being removed, by the name index. */
export function liveNetworksNamed(
  store: { byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] },
  name: string,
): Array<Resource<NetworkSpec, NetworkStatus>> {
  return store.byIndex(NETWORKS_BY_NAME, name).filter((n) => n.spec.desired !== 'removed');
}
