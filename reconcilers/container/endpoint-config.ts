// What the client asked of a container's endpoint on its NetworkMode network, read from the
// EndpointsConfig of its spec: static addresses (--ip, --ip6) and a MAC. The other networks it is
// on are endpoint records (store/endpoint-types.ts), plugged in by the endpoint reconciler.
import type { ContainerSpec } from '../../store/types.ts';

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
