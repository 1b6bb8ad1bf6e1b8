// The endpoint kind: name = `<containerId>/<networkId>`. One
// attachment of a container to a network beside its NetworkMode one (`docker network connect`, or
// a second entry of EndpointsConfig at create), owned by both: the API writes the spec (connect
// creates it, disconnect marks it removed), the endpoint reconciler plugs it into each run of the
// container and writes status; it deletes the record once it is unplugged and its address freed,
// or when its container is gone.
import * as z from 'zod';
import { defineKind } from '../kind.ts';
import type { EndpointSettings } from './network.ts';
import type { IndexDef, Resource } from '../types.ts';

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
  /**
   * The container's NetworkMode network: plugged in by the container's start step as eth0 with
   * the default route (the endpoint reconciler adopts it); absent once disconnected.
   */
  primary?: boolean;
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
  /** Who plugged it: the container's start step (its primary, eth0) or the endpoint reconciler. */
  pluggedBy?: 'start' | 'endpoint';
  error: string;
  conditions: EndpointCondition[];
}

const stringMap = z.record(z.string(), z.string());
const strings = z.array(z.string());

const endpointSpecSchema = z.object({
  containerId: z.string(),
  networkId: z.string(),
  networkName: z.string(),
  config: z.object({
    IPAMConfig: z
      .object({ IPv4Address: z.string().optional(), IPv6Address: z.string().optional(), LinkLocalIPs: strings.nullish() })
      .nullish(),
    Aliases: strings.nullish(),
    Links: strings.nullish(),
    MacAddress: z.string().optional(),
    DriverOpts: stringMap.nullish(),
  }),
  primary: z.boolean().optional(),
  desired: z.enum(['present', 'removed']),
}) satisfies z.ZodType<EndpointSpec>;

const endpointStatusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  phase: z.enum(['pending', 'attached', 'detached', 'failed', 'removing']),
  pid: z.number().int().nonnegative(),
  ifName: z.string(),
  hostVeth: z.string(),
  addresses: z
    .object({
      EndpointID: z.string(),
      MacAddress: z.string(),
      Gateway: z.string(),
      IPAddress: z.string(),
      IPPrefixLen: z.number().int(),
      IPv6Gateway: z.string(),
      GlobalIPv6Address: z.string(),
      GlobalIPv6PrefixLen: z.number().int(),
    })
    .nullable(),
  pluggedBy: z.enum(['start', 'endpoint']).optional(),
  error: z.string(),
  conditions: z.array(
    z.object({ type: z.literal('Attached'), status: z.enum(['True', 'False']), reason: z.string(), message: z.string(), lastTransitionTime: z.string() }),
  ),
}) satisfies z.ZodType<EndpointStatus>;

export type EndpointResource = Resource<EndpointSpec, EndpointStatus>;

export const Endpoints = defineKind<EndpointSpec, EndpointStatus>({ name: 'endpoint', version: 1, schema: { spec: endpointSpecSchema, status: endpointStatusSchema }, indexes: { container: (r) => [r.spec.containerId] } });

/** Endpoints by their container's id. */
export const ENDPOINTS_BY_CONTAINER = Endpoints.indexes.container!;

type IndexedStore = { byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] };

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

/** The container's primary endpoint record (its NetworkMode network), if it is wanted. */
export function primaryEndpoint(store: IndexedStore, containerId: string): Resource<EndpointSpec, EndpointStatus> | undefined {
  return endpointsOfContainer(store, containerId).find((e) => e.spec.primary && e.spec.desired === 'present');
}

/** The endpoint records of a container (in any state). */
export function endpointsOfContainer(store: IndexedStore, containerId: string): Resource<EndpointSpec, EndpointStatus>[] {
  return store.byIndex(ENDPOINTS_BY_CONTAINER, containerId);
}

/** An endpoint plugged into the container's current run (`pid`). */
export function isAttachedTo(status: EndpointStatus, pid: number): boolean {
  return status.phase === 'attached' && pid > 0 && status.pid === pid;
}

/** The endpoint's addresses while it is plugged into the container's current run (`pid`), else null. */
export function pluggedAddresses(status: EndpointStatus, pid: number): EndpointAddresses | null {
  return isAttachedTo(status, pid) ? status.addresses : null;
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
 * The endpoints a create asks for: its NetworkMode network's (`primary`, when that is a bridge
 * network `find` knows) and every other network its EndpointsConfig names (found by name, id or id
 * prefix); those others leave the spec's EndpointsConfig. Networks `find` does not know stay in the
 * spec, where nothing reads them.
 */
export function endpointsFromCreate(
  networkMode: string,
  networkingConfig: unknown,
  find: (ref: string) => Net | undefined,
): { networkingConfig: unknown; primary: { net: Net; config: EndpointConfig } | null; extras: Array<{ net: Net; config: EndpointConfig }> } {
  if (networkMode === 'host' || networkMode === 'none' || networkMode.startsWith('container:')) return { networkingConfig, primary: null, extras: [] };
  const nc = networkingConfig && typeof networkingConfig === 'object' ? (networkingConfig as { EndpointsConfig?: unknown }) : null;
  const eps = nc?.EndpointsConfig && typeof nc.EndpointsConfig === 'object' ? (nc.EndpointsConfig as Record<string, unknown>) : {};
  const net = find(BUILTIN.has(networkMode) ? 'bridge' : networkMode);
  const primary = net ? { net, config: {} as EndpointConfig } : null;
  const keep: Record<string, unknown> = {};
  const extras: Array<{ net: Net; config: EndpointConfig }> = [];
  let primarySeen = false;
  for (const [key, cfg] of Object.entries(eps)) {
    const other = find(key === 'default' ? 'bridge' : key);
    const own = (other && other.spec.id === net?.spec.id) || (BUILTIN.has(key) && BUILTIN.has(networkMode));
    if (own || !other) keep[key] = cfg;
    if (own && primary && !primarySeen) {
      primary.config = endpointConfigOf(cfg);
      primarySeen = true;
    }
    if (!own && other && !extras.some((e) => e.net.spec.id === other.spec.id)) extras.push({ net: other, config: endpointConfigOf(cfg) });
  }
  return { networkingConfig: extras.length ? { ...nc, EndpointsConfig: keep } : networkingConfig, primary, extras };
}

/** The record for a new endpoint of `containerId` on `net` (for a create's transaction). */
export function newEndpoint(containerId: string, net: EndpointNet, config: EndpointConfig, primary = false): { name: string; spec: EndpointSpec; status: EndpointStatus } {
  return {
    name: endpointName(containerId, net.spec.id),
    spec: { containerId, networkId: net.spec.id, networkName: net.spec.name, config, ...(primary ? { primary } : {}), desired: 'present' },
    status: EMPTY_ENDPOINT_STATUS,
  };
}
