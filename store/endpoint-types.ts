// Resource shapes for endpoints: kind 'endpoint', name = `<containerId>/<networkId>`. One
// attachment of a container to a network beside its NetworkMode one (`docker network connect`, or
// a second entry of EndpointsConfig at create), owned by both: the API writes the spec (connect
// creates it, disconnect marks it removed), the endpoint reconciler plugs it into each run of the
// container and writes status; it deletes the record once it is unplugged and its address freed,
// or when its container is gone.
import type { EndpointSettings } from './network-types.ts';
import type { Resource } from './types.ts';

/** What the client asked of the endpoint (EndpointSettings as connect and create take them). */
export interface EndpointConfig {
  IPAMConfig?: { IPv4Address?: string; IPv6Address?: string; LinkLocalIPs?: string[] | null } | null;
  Aliases?: string[] | null;
  Links?: string[] | null;
  MacAddress?: string;
  DriverOpts?: Record<string, string> | null;
}

export interface EndpointSpec {
  containerId: string;
  networkId: string;
  /** The network's name when connected (NetworkSettings.Networks key if the network goes). */
  networkName: string;
  config: EndpointConfig;
  desired: 'present' | 'removed';
}

/** The endpoint's addresses on its network, as NetworkSettings.Networks shows them. */
export type EndpointAddresses = Pick<
  EndpointSettings,
  'EndpointID' | 'MacAddress' | 'Gateway' | 'IPAddress' | 'IPPrefixLen' | 'IPv6Gateway' | 'GlobalIPv6Address' | 'GlobalIPv6PrefixLen'
>;

/** A condition as Kubernetes objects carry them: `Attached` says whether the endpoint is plugged in. */
export interface EndpointCondition {
  type: 'Attached';
  status: 'True' | 'False';
  /** CamelCase cause: Attached, ContainerNotRunning, NetworkNotFound, AttachFailed, Removing. */
  reason: string;
  message: string;
  /** RFC 3339 time the status last changed. */
  lastTransitionTime: string;
}

export interface EndpointStatus {
  observedGeneration: number;
  /**
   * pending: not looked at yet; attached: plugged into the run of `pid`; detached: its container is
   * not running; failed: the last attach failed (`error`); removing: being unplugged for good.
   */
  phase: 'pending' | 'attached' | 'detached' | 'failed' | 'removing';
  /** The container process whose network namespace holds the interface (attached), else 0. */
  pid: number;
  /** "eth1": the interface inside the container. */
  ifName: string;
  /** Host end of its veth pair. */
  hostVeth: string;
  addresses: EndpointAddresses | null;
  error: string;
  conditions: EndpointCondition[];
}

export const ENDPOINT_KIND = 'endpoint';

export function endpointName(containerId: string, networkId: string): string {
  return `${containerId}/${networkId}`;
}

export const EMPTY_ENDPOINT_STATUS: EndpointStatus = {
  observedGeneration: 0,
  phase: 'pending',
  pid: 0,
  ifName: '',
  hostVeth: '',
  addresses: null,
  error: '',
  conditions: [],
};

/** The endpoint records of a container (in any state). */
export function endpointsOfContainer(store: { list<S, T>(kind: string): Resource<S, T>[] }, containerId: string): Resource<EndpointSpec, EndpointStatus>[] {
  const prefix = `${containerId}/`;
  return store.list<EndpointSpec, EndpointStatus>(ENDPOINT_KIND).filter((e) => e.name.startsWith(prefix));
}

/** An endpoint plugged into the container's current run (`pid`). */
export function isAttachedTo(status: EndpointStatus, pid: number): boolean {
  return status.phase === 'attached' && pid > 0 && status.pid === pid;
}

/** A network as endpoints name it. */
export type EndpointNet = { spec: { id: string; name: string } };
type Net = EndpointNet;

/** The client's EndpointSettings, kept as given where they matter (aliases, static addresses, links, MAC). */
export function endpointConfigOf(raw: unknown): EndpointConfig {
  const ep = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  const out: EndpointConfig = {};
  if (ep.IPAMConfig && typeof ep.IPAMConfig === 'object') out.IPAMConfig = ep.IPAMConfig as EndpointConfig['IPAMConfig'];
  if (Array.isArray(ep.Aliases)) out.Aliases = ep.Aliases.filter((a): a is string => typeof a === 'string');
  if (Array.isArray(ep.Links)) out.Links = ep.Links.filter((l): l is string => typeof l === 'string');
  if (typeof ep.MacAddress === 'string' && ep.MacAddress) out.MacAddress = ep.MacAddress;
  if (ep.DriverOpts && typeof ep.DriverOpts === 'object') out.DriverOpts = ep.DriverOpts as Record<string, string>;
  return out;
}

const BUILTIN = new Set(['bridge', 'default', 'host', 'none', '']);

/**
 * A create's EndpointsConfig split in two: the entry of its NetworkMode network stays in the spec,
 * every other network it names (found by name, id or id prefix) becomes an endpoint record.
 * Networks it cannot find are left in the spec, where nothing reads them (as before records).
 */
export function splitEndpointsConfig(
  networkMode: string,
  networkingConfig: unknown,
  find: (ref: string) => Net | undefined,
): { networkingConfig: unknown; extras: Array<{ net: Net; config: EndpointConfig }> } {
  const nc = networkingConfig && typeof networkingConfig === 'object' ? (networkingConfig as { EndpointsConfig?: unknown }) : null;
  const eps = nc?.EndpointsConfig && typeof nc.EndpointsConfig === 'object' ? (nc.EndpointsConfig as Record<string, unknown>) : null;
  if (!eps || networkMode === 'host' || networkMode === 'none' || networkMode.startsWith('container:')) return { networkingConfig, extras: [] };
  const primary = find(BUILTIN.has(networkMode) ? 'bridge' : networkMode);
  const keep: Record<string, unknown> = {};
  const extras: Array<{ net: Net; config: EndpointConfig }> = [];
  for (const [key, cfg] of Object.entries(eps)) {
    const net = find(key === 'default' ? 'bridge' : key);
    if (!net || net.spec.id === primary?.spec.id || (BUILTIN.has(key) && BUILTIN.has(networkMode))) keep[key] = cfg;
    else if (!extras.some((e) => e.net.spec.id === net.spec.id)) extras.push({ net, config: endpointConfigOf(cfg) });
  }
  return extras.length ? { networkingConfig: { ...nc, EndpointsConfig: keep }, extras } : { networkingConfig, extras };
}
