// The networks a running container is on beside its NetworkMode one: the EndpointsConfig entries
// of its spec are the level (`docker network connect` adds one, `disconnect` removes it), and this
// step plugs in what is missing (eth1, eth2, ...) and unplugs what is no longer wanted. A new run
// starts with none plugged (a new network namespace), so the same step restores them after every
// start. Not a lifecycle state: it runs while the machine is running or paused.
import type { ContainerSpec, ExtraEndpoint } from '../../store/types.ts';
import type { NetworkPort } from './deps.ts';
import type { StagedStatus } from './staged-status.ts';

const BUILTIN = new Set(['bridge', 'default', 'host', 'none', '']);

type EndpointConfig = { IPAMConfig?: { IPv4Address?: string; IPv6Address?: string } | null; MacAddress?: string } | null;

/** The client's EndpointsConfig (at create or connect), keyed by network name or id. */
export function endpointsConfigOf(spec: ContainerSpec): Record<string, EndpointConfig> {
  return (spec.networkingConfig as { EndpointsConfig?: Record<string, EndpointConfig> | null } | null)?.EndpointsConfig ?? {};
}

/** The address asked for (--ip) under the first of `keys` that has one. */
export function staticIpv4(spec: ContainerSpec, keys: readonly string[]): string | undefined {
  const eps = endpointsConfigOf(spec);
  for (const k of keys) if (eps[k]?.IPAMConfig?.IPv4Address) return eps[k]!.IPAMConfig!.IPv4Address;
  return undefined;
}

/** The IPv6 address asked for (--ip6) under the first of `keys` that has one. */
export function staticIpv6(spec: ContainerSpec, keys: readonly string[]): string | undefined {
  const eps = endpointsConfigOf(spec);
  for (const k of keys) if (eps[k]?.IPAMConfig?.IPv6Address) return eps[k]!.IPAMConfig!.IPv6Address;
  return undefined;
}

/** The MAC address asked for: the endpoint's under the first of `keys` that has one, else Config.MacAddress. */
export function staticMac(spec: ContainerSpec, keys: readonly string[]): string | undefined {
  const eps = endpointsConfigOf(spec);
  for (const k of keys) if (eps[k]?.MacAddress) return eps[k]!.MacAddress!.toLowerCase();
  const own = spec.config.MacAddress;
  return typeof own === 'string' && own ? own.toLowerCase() : undefined;
}

/** The network ids the spec wants beside the NetworkMode network (unknown names are skipped). */
export function wantedExtraNetworks(spec: ContainerSpec, network: Pick<NetworkPort, 'networkIdOf'>): string[] {
  const mode = spec.hostConfig.NetworkMode;
  const primaryRef = BUILTIN.has(mode) ? 'bridge' : mode;
  if (mode === 'host' || mode === 'none' || mode.startsWith('container:')) return [];
  const primary = network.networkIdOf(primaryRef);
  const keys = Object.keys(endpointsConfigOf(spec));
  if (keys.length === 0 || (keys.length === 1 && (keys[0] === mode || (BUILTIN.has(mode) && BUILTIN.has(keys[0]!))))) return [];
  const ids = new Set<string>();
  for (const key of keys) {
    const id = network.networkIdOf(key === 'default' ? 'bridge' : key);
    if (id && id !== primary) ids.add(id);
  }
  return [...ids];
}

/** Plug and unplug until the live endpoints are the wanted ones; what changed is staged in status. */
export async function syncExtraNetworks(id: string, pid: number, spec: ContainerSpec, network: NetworkPort, status: StagedStatus): Promise<void> {
  const want = wantedExtraNetworks(spec, network);
  const have: ExtraEndpoint[] = status.get(id).extraEndpoints ?? [];
  const keep = have.filter((ep) => want.includes(ep.NetworkID));
  for (const ep of have) if (!want.includes(ep.NetworkID)) await network.detachExtra(id, ep);
  const used = new Set(keep.map((ep) => Number(ep.ifName.slice(3))));
  for (const netId of want) {
    if (keep.some((ep) => ep.NetworkID === netId)) continue;
    let index = 1;
    while (used.has(index)) index++;
    used.add(index);
    const keys = keysOfNetwork(spec, netId, network);
    keep.push(await network.attachExtra(id, pid, netId, index, { ipv4: staticIpv4(spec, keys), ipv6: staticIpv6(spec, keys) }));
  }
  if (keep.length !== have.length || keep.some((ep, i) => ep !== have[i])) status.stage(id, (s) => ({ ...s, extraEndpoints: keep }));
}

/** The EndpointsConfig keys that name the network with id `netId` (its name or id). */
function keysOfNetwork(spec: ContainerSpec, netId: string, network: Pick<NetworkPort, 'networkIdOf'>): string[] {
  return Object.keys(endpointsConfigOf(spec)).filter((k) => network.networkIdOf(k) === netId);
}
