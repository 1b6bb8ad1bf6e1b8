// How the container reconciler puts a container on its network: allocate (a durable address record,
// reused across restarts), attach (veth into the running container's namespace), detach (on stop;
// the address stays), release (on removal; the address becomes free).
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { invalidArgument, isCode, notFound } from '../../lib/errors.ts';
import { macFromIpv4 } from '../../drivers/network/cidr.ts';
import type { EndpointAddresses } from '../../store/kinds/endpoint.ts';
import { ipv4Pool, ipv6Pool, isBridged, type EndpointSettings, findNetwork, findNetworkByName, Networks, type NetworkResource } from '../../store/kinds/network.ts';
import { EMBEDDED_DNS_ADDRESS, extraVethName, hostVethName } from '../../drivers/network/veth.ts';
import type { NetworkDriverPort, NetworkStore } from './deps.ts';
import { hasEmbeddedDns } from './dns.ts';
import { type Allocation, claimAddresses, releaseContainer, releaseOn as releaseContainerOn } from './ipam.ts';

/** What attach needs of an endpoint (the container record keeps at least this much). */
export type AttachEndpoint = Pick<EndpointSettings, 'NetworkID' | 'IPAddress' | 'IPPrefixLen' | 'Gateway' | 'MacAddress'> &
  Partial<Pick<EndpointSettings, 'GlobalIPv6Address' | 'GlobalIPv6PrefixLen' | 'IPv6Gateway'>>;

/** An extra endpoint as plugged in: its interface and addresses. */
export interface PluggedEndpoint {
  ifName: string;
  hostVeth: string;
  addresses: EndpointAddresses;
}

/** What a container asks of its endpoint on one network: static addresses (--ip, --ip6), a MAC. */
export interface EndpointRequest {
  ipv4?: string;
  ipv6?: string;
  mac?: string;
}

/** An extra endpoint's request: with `dns`, the container's 127.0.0.11 is redirected to this network's embedded DNS. */
export interface ExtraEndpointRequest extends EndpointRequest {
  dns?: boolean;
}

/** The redirect of 127.0.0.11 to a network's embedded DNS on its gateway, when it has one. */
function dnsRedirectOf(net: NetworkResource): { dnsRedirect?: { gateway: string } } {
  const gateway = ipv4Pool(net.spec)?.Gateway;
  return hasEmbeddedDns(net.spec) && gateway ? { dnsRedirect: { gateway } } : {};
}

/** The IPv6 half of attach: address with prefix and default route, when the endpoint has one. */
function v6Attach(ep: AttachEndpoint): { address6?: string; gateway6?: string } {
  if (!ep.GlobalIPv6Address) return {};
  return { address6: `${ep.GlobalIPv6Address}/${ep.GlobalIPv6PrefixLen}`, gateway6: ep.IPv6Gateway || undefined };
}

export interface ResolvedNetworkMode {
  kind: 'bridge' | 'host' | 'none' | 'container' | 'user';
  /** Key of NetworkSettings.Networks ("bridge", "host", "none"); null for container:<id>. */
  networkName: string | null;
  /** For container:<id|name>. */
  target?: string;
}

/** "", "default" and "bridge" mean the default bridge (or `none` when the daemon runs with --bridge none). */
export function resolveNetworkMode(mode: string, opts: { bridgeDisabled?: boolean } = {}): ResolvedNetworkMode {
  const m = mode || 'default';
  if (m === 'default' || m === 'bridge') {
    return opts.bridgeDisabled ? { kind: 'none', networkName: 'none' } : { kind: 'bridge', networkName: 'bridge' };
  }
  if (m === 'host') return { kind: 'host', networkName: 'host' };
  if (m === 'none') return { kind: 'none', networkName: 'none' };
  if (m.startsWith('container:')) return { kind: 'container', networkName: null, target: m.slice('container:'.length) };
  // A user-defined network, by name or id: looked up in the store by the caller.
  return { kind: 'user', networkName: m };
}

/** A user-defined (bridge) network by full id, exact name, then unique id prefix, as the API resolves it. */
export function findUserNetwork(store: Pick<NetworkStore, 'list' | 'get' | 'byIndex'>, ref: string): NetworkResource {
  const net = findNetwork(store, ref);
  if (!isBridged(net.spec)) throw notFound(`network ${ref} not found`);
  return net;
}

export class NetworkAttacher {
  private readonly store: NetworkStore;
  private readonly driver: Pick<NetworkDriverPort, 'attachContainer' | 'detachContainer' | 'ensureBridge'>;
  private readonly log: Logger;

  constructor(store: NetworkStore, driver: Pick<NetworkDriverPort, 'attachContainer' | 'detachContainer' | 'ensureBridge'>, log: Logger) {
    this.store = store;
    this.driver = driver;
    this.log = log.child({ component: 'network-attacher' });
  }

  /** The Networks key for a NetworkMode on this daemon ("bridge", "host", "none"), or null. */
  networkNameFor(networkMode: string): string | null {
    return resolveNetworkMode(networkMode, { bridgeDisabled: !findNetworkByName(this.store, 'bridge') }).networkName;
  }

  /**
   * The container's bridge endpoint, its address claimed durably (an existing claim is reused).
   * null for host, none and container:<id>, which need no address and no attach; their
   * NetworkSettings entry is `endpointFor`.
   */
  async allocate(containerId: string, networkMode: string, opts: EndpointRequest = {}): Promise<EndpointSettings | null> {
    const mode = resolveNetworkMode(networkMode, { bridgeDisabled: !findNetworkByName(this.store, 'bridge') });
    if (mode.kind !== 'bridge' && mode.kind !== 'user') return null;
    const net = mode.kind === 'user' ? findUserNetwork(this.store, mode.networkName!) : findNetworkByName(this.store, 'bridge');
    if (!net) throw notFound('network bridge not found');
    if ((opts.ipv4 || opts.ipv6) && mode.kind !== 'user') throw invalidArgument('user specified IP address is supported on user defined networks only');
    const [alloc, alloc6] = claimAddresses(this.store, net, containerId, opts);
    return endpoint(net, containerId, alloc, opts.mac, alloc6);
  }

  /** The NetworkSettings.Networks entry for host and none (NetworkID, EndpointID, no address); null otherwise. */
  endpointFor(containerId: string, networkMode: string): EndpointSettings | null {
    const mode = resolveNetworkMode(networkMode, { bridgeDisabled: !findNetworkByName(this.store, 'bridge') });
    if (mode.kind !== 'host' && mode.kind !== 'none') return null;
    const net = findNetworkByName(this.store, mode.networkName!);
    return net ? endpoint(net, containerId, null) : null;
  }

  /** Plug the running container (its pid, or its netns path) into the endpoint's network. */
  async attach(containerId: string, pid: number | string, ep: AttachEndpoint, signal?: AbortSignal): Promise<void> {
    const net = this.store.get(Networks, ep.NetworkID);
    if (!net) throw notFound(`network ${ep.NetworkID} not found`);
    const b = net.spec.bridge;
    if (!isBridged(net.spec) || !b) return;
    const req = {
      ...(typeof pid === 'number' ? { pid } : { netnsPath: pid }),
      bridge: b.bridgeName,
      hostVeth: hostVethName(containerId),
      ifName: 'eth0',
      address: `${ep.IPAddress}/${ep.IPPrefixLen}`,
      gateway: ep.Gateway || undefined,
      ...v6Attach(ep),
      mac: ep.MacAddress,
      mtu: b.mtu,
      ...dnsRedirectOf(net),
      signal,
    };
    const t0 = performance.now();
    try {
      await this.driver.attachContainer(req);
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
      // The bridge vanished since the last check: put it back now rather than fail the start.
      const pool = ipv4Pool(net.spec)!;
      const pool6 = ipv6Pool(net.spec);
      const address6 = pool6 ? `${pool6.Gateway}/${pool6.Subnet.split('/')[1]}` : undefined;
      await this.driver.ensureBridge({ name: b.bridgeName, address: `${pool.Gateway}/${pool.Subnet.split('/')[1]}`, address6, mtu: b.mtu }, signal);
      await this.driver.attachContainer(req);
    }
    this.log.debug({ containerId, ip: ep.IPAddress, ms: +(performance.now() - t0).toFixed(1) }, 'container attached');
  }

  networkIdOf(ref: string): string | undefined {
    try {
      return findUserNetwork(this.store, ref).spec.id;
    } catch {
      return undefined;
    }
  }

  /**
   * Plug a running container into one more network as `eth<index>`: its address claimed there
   * (reused when it has one), no default route. Answers the interface and the addresses.
   */
  async attachExtra(containerId: string, pid: number, networkId: string, index: number, opts: ExtraEndpointRequest = {}): Promise<PluggedEndpoint> {
    const net = this.store.get(Networks, networkId);
    if (!net?.spec.bridge) throw notFound(`network ${networkId} not found`);
    const [alloc, alloc6] = claimAddresses(this.store, net, containerId, opts);
    const ep = endpoint(net, containerId, alloc, opts.mac, alloc6);
    const ifName = `eth${index}`;
    const hostVeth = extraVethName(containerId, index);
    await this.driver.attachContainer({
      pid,
      bridge: net.spec.bridge.bridgeName,
      hostVeth,
      ifName,
      address: `${ep.IPAddress}/${ep.IPPrefixLen}`,
      // An extra network gives no default route; its IPv6 address alone.
      ...(ep.GlobalIPv6Address ? { address6: `${ep.GlobalIPv6Address}/${ep.GlobalIPv6PrefixLen}` } : {}),
      mac: ep.MacAddress,
      mtu: net.spec.bridge.mtu,
      ...(opts.dns ? dnsRedirectOf(net) : {}),
    });
    const { EndpointID, MacAddress, Gateway, IPAddress, IPPrefixLen, IPv6Gateway, GlobalIPv6Address, GlobalIPv6PrefixLen } = ep;
    return { ifName, hostVeth, addresses: { EndpointID, MacAddress, Gateway, IPAddress, IPPrefixLen, IPv6Gateway, GlobalIPv6Address, GlobalIPv6PrefixLen } };
  }

  /** Take the host end of an extra endpoint's veth away (the container's end goes with it). */
  async unplugExtra(hostVeth: string): Promise<void> {
    await this.driver.detachContainer(hostVeth);
  }

  /** Free the container's addresses on one network (it left that network). */
  releaseOn(containerId: string, networkId: string): void {
    releaseContainerOn(this.store, containerId, networkId);
  }

  /** User-defined networks answer names through their embedded DNS: 127.0.0.11 in the container, redirected to the gateway. */
  nameserverFor(ep: Pick<EndpointSettings, 'NetworkID'>): string | undefined {
    const net = this.store.get(Networks, ep.NetworkID);
    return net && hasEmbeddedDns(net.spec) && ipv4Pool(net.spec)?.Gateway ? EMBEDDED_DNS_ADDRESS : undefined;
  }

  /** Unplug (on stop). The address stays claimed for the next start. */
  async detach(containerId: string, signal?: AbortSignal): Promise<void> {
    await this.driver.detachContainer(hostVethName(containerId), signal);
  }

  /** Free the container's addresses (on removal). */
  async release(containerId: string): Promise<void> {
    const mine = releaseContainer(this.store, containerId);
    if (mine.length === 0) return;
    this.log.debug({ containerId, addresses: mine.map((a) => a.spec.address) }, 'addresses released');
  }
}

/** `mac`: the address the client asked for (MacAddress), else one derived from the IPv4 address. */
function endpoint(net: NetworkResource, containerId: string, alloc: Allocation | null, mac?: string, alloc6?: Allocation | null): EndpointSettings {
  const pool = ipv4Pool(net.spec);
  const gateway = alloc ? net.spec.bridge?.defaultGateway || pool?.Gateway || '' : '';
  const gateway6 = alloc6 ? net.spec.bridge?.defaultGatewayV6 || ipv6Pool(net.spec)?.Gateway || '' : '';
  return {
    IPAMConfig: null,
    Links: null,
    Aliases: null,
    MacAddress: alloc ? mac || macFromIpv4(alloc.spec.address) : '',
    DriverOpts: null,
    NetworkID: net.spec.id,
    EndpointID: createHash('sha256').update(`${net.spec.id}/${containerId}`).digest('hex'),
    Gateway: gateway,
    IPAddress: alloc?.spec.address ?? '',
    IPPrefixLen: alloc?.spec.prefixLen ?? 0,
    IPv6Gateway: gateway6,
    GlobalIPv6Address: alloc6?.spec.address ?? '',
    GlobalIPv6PrefixLen: alloc6?.spec.prefixLen ?? 0,
    DNSNames: null,
  };
}
