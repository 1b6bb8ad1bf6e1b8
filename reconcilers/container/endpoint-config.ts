// What the client asked of a container's endpoint on its NetworkMode network, read from the
// EndpointsConfig of its spec: static addresses (--ip, --ip6) and a MAC. The other networks it is
// on are endpoint records (store/kinds/endpoint.ts), plugged in by the endpoint reconciler.
import type { ContainerSpec } from '../../store/kinds/container.ts';

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

/**
 * What the container asks of its NetworkMode network's endpoint: the primary record's settings,
 * or, for a container without one, its spec's EndpointsConfig entry (the CLI keys the default
 * bridge's entry "default" when no --network was given); the MAC falls back to Config.MacAddress.
 */
export function primaryRequest(spec: ContainerSpec, rec?: { spec: { config: EndpointSettingsAsked } }): { ipv4?: string; ipv6?: string; mac?: string } {
  if (rec) {
    const own = spec.config.MacAddress;
    const mac = rec.spec.config.MacAddress || (typeof own === 'string' ? own : '');
    return { ipv4: rec.spec.config.IPAMConfig?.IPv4Address || undefined, ipv6: rec.spec.config.IPAMConfig?.IPv6Address || undefined, mac: mac ? mac.toLowerCase() : undefined };
  }
  const mode = spec.hostConfig.NetworkMode;
  const keys = mode === 'bridge' || mode === 'default' ? ['bridge', 'default'] : [mode];
  return { ipv4: staticIpv4(spec, keys), ipv6: staticIpv6(spec, keys), mac: staticMac(spec, keys) };
}

type EndpointSettingsAsked = { IPAMConfig?: { IPv4Address?: string; IPv6Address?: string } | null; MacAddress?: string };
