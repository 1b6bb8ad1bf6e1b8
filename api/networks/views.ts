// Networks as clients read them (`network ls`, `network inspect`), built from the store's network
// records and the containers' endpoints. Lookup follows the reference daemon: full id, then
// exact name, then unique id prefix.
import { createHash } from 'node:crypto';
import { invalidArgument, permissionDenied } from '../../lib/errors.ts';
import { isBridged, isPredefinedName, liveNetworksNamed, type IpamPoolConfig, type NetworkResource, liveNetworks } from '../../store/kinds/network.ts';
export { isPredefinedName } from '../../store/kinds/network.ts';
import { isRunning, Containers, type ContainerResource as CR } from '../../store/kinds/container.ts';
import type { ApiStore } from '../containers/store.ts';
import { matchKVList, parseFilters } from '../filters.ts';
import { endpointName, pluggedAddresses, Endpoints } from '../../store/kinds/endpoint.ts';
export type { NetworkResource } from '../../store/kinds/network.ts';


export interface NetworkContainer {
  Name: string;
  EndpointID: string;
  MacAddress: string;
  IPv4Address: string;
  IPv6Address: string;
}

/**
 * Names the reference daemon treats as pre-defined (not user-defined): they cannot be created or
 * removed through the API, whether or not the daemon has such a network.
 */

/** A resolver from a network reference (name, id, id prefix) to its name; unknown references stay as they are. */
export function networkNameResolver(store: Pick<ApiStore, 'list'>): (ref: string) => string {
  const nets = liveNetworks(store);
  return (ref) => {
    const byPrefix = () => {
      const m = nets.filter((n) => n.spec.id.startsWith(ref));
      return m.length === 1 ? m[0] : undefined;
    };
    const net = nets.find((n) => n.spec.id === ref) ?? nets.find((n) => n.spec.name === ref) ?? (ref ? byPrefix() : undefined);
    return net?.spec.name ?? ref;
  };
}

/** Whether a network reference (name, id, id prefix) names a bridge network the daemon has now. */
export function bridgeNetworkTest(store: Pick<ApiStore, 'list'>): (ref: string) => boolean {
  const nets = liveNetworks(store).filter((n) => isBridged(n.spec));
  return (ref) => !!ref && (nets.some((n) => n.spec.id === ref || n.spec.name === ref) || nets.filter((n) => n.spec.id.startsWith(ref)).length === 1);
}

/** The builtin network a container's NetworkMode puts it on ("bridge", "host", "none"), or null. */
export function networkNameOf(mode: string, bridgeEnabled: boolean): string | null {
  const m = mode || 'default';
  if (m === 'default' || m === 'bridge') return bridgeEnabled ? 'bridge' : 'none';
  if (m === 'host' || m === 'none') return m;
  return null;
}

/**
 * Endpoint id of a container on host or none, which keep no endpoint record: the same derivation
 * the network attacher uses for the endpoints it hands out (sha256 of "<network id>/<container id>").
 */
function derivedEndpointId(networkId: string, containerId: string): string {
  return createHash('sha256').update(`${networkId}/${containerId}`).digest('hex');
}

/** A network's removal refused while running containers are attached (as the reference, 403); undefined when none is. */
export function checkNetworkRemovable(store: Pick<ApiStore, 'list' | 'get' | 'byIndex'>, net: NetworkResource): void {
  const attached = Object.entries(attachedContainers(store, net));
  if (!attached.length) return;
  const eps = attached.map(([id, c]) => `name:${JSON.stringify(c.Name)} id:${JSON.stringify(id.slice(0, 12))}`).join(', ');
  throw permissionDenied(`error while removing network: network ${net.spec.name} has active endpoints (${eps})`);
}

/** `Containers` of a network: its running containers, keyed by container id. */
export function attachedContainers(store: Pick<ApiStore, 'list' | 'get' | 'byIndex'>, net: NetworkResource): Record<string, NetworkContainer> {
  const out: Record<string, NetworkContainer> = {};
  const bridgeEnabled = liveNetworksNamed(store, 'bridge').length > 0;
  for (const c of store.list(Containers)) {
    if (!c.status || !isRunning(c.status)) continue;
    const entry = containerEntry(store, c, net, bridgeEnabled);
    if (entry) out[c.name] = entry;
  }
  return out;
}

function containerEntry(store: Pick<ApiStore, 'get'>, c: CR, net: NetworkResource, bridgeEnabled: boolean): NetworkContainer | null {
  const name = c.spec.name.replace(/^\//, '');
  const rec = store.get(Endpoints, endpointName(c.name, net.spec.id));
  const plugged = rec ? pluggedAddresses(rec.status, c.status.pid) : null;
  const extra = plugged ? { ...plugged, NetworkID: net.spec.id } : undefined;
  const ep = extra ?? c.status.endpoint;
  if (ep) {
    if (ep.NetworkID !== net.spec.id) return null;
    return {
      Name: name,
      EndpointID: ep.EndpointID,
      MacAddress: ep.MacAddress,
      IPv4Address: ep.IPAddress ? `${ep.IPAddress}/${ep.IPPrefixLen}` : '',
      IPv6Address: ep.GlobalIPv6Address ? `${ep.GlobalIPv6Address}/${ep.GlobalIPv6PrefixLen}` : '',
    };
  }
  if (isBridged(net.spec)) return null;
  if (networkNameOf(c.spec.hostConfig?.NetworkMode ?? '', bridgeEnabled) !== net.spec.name) return null;
  return { Name: name, EndpointID: derivedEndpointId(net.spec.id, c.name), MacAddress: '', IPv4Address: '', IPv6Address: '' };
}

/** IPAM pool as the API shows it: only the fields that are set, in the reference daemon's order. */
function poolView(p: IpamPoolConfig): Record<string, unknown> {
  const out: Record<string, unknown> = { Subnet: p.Subnet };
  if (p.IPRange) out.IPRange = p.IPRange;
  if (p.Gateway) out.Gateway = p.Gateway;
  if (p.AuxiliaryAddresses && Object.keys(p.AuxiliaryAddresses).length) out.AuxiliaryAddresses = p.AuxiliaryAddresses;
  return out;
}

/** The Network object of list and inspect; `containers` is `{}` in lists (API >= 1.28). */
export function networkView(net: NetworkResource, containers: Record<string, NetworkContainer>): Record<string, unknown> {
  const s = net.spec;
  return {
    Name: s.name,
    Id: s.id,
    Created: s.created,
    Scope: s.scope,
    Driver: s.driver,
    EnableIPv4: isBridged(s),
    EnableIPv6: s.enableIPv6,
    IPAM: { Driver: s.ipam.Driver, Options: s.ipam.Options, Config: s.ipam.Config.map(poolView) },
    Internal: s.internal,
    Attachable: s.attachable,
    Ingress: s.ingress,
    ConfigFrom: { Network: '' },
    ConfigOnly: false,
    Containers: containers,
    Options: s.options ?? {},
    Labels: s.labels ?? {},
  };
}

const LIST_FILTERS = new Set(['dangling', 'driver', 'id', 'label', 'name', 'scope', 'type']);

/** Go's filters.Args.Match: an exact value, or a regular expression found anywhere in the value. */
function matches(patterns: string[], value: string): boolean {
  return patterns.some((p) => {
    if (p === value) return true;
    try {
      return new RegExp(p).test(value);
    } catch {
      return false;
    }
  });
}

/** GET /networks with the reference daemon's filters, sorted by name (its own order is unspecified). */
/** What the `filters` of GET /networks test of a network. */
export interface NetworkFacts {
  name: string;
  id: string;
  driver: string;
  scope: string;
  labels: Record<string, string>;
  /** Containers attached (a custom network without any is dangling). */
  attached: number;
}

/** The `filters` query of GET /networks as a predicate (the reference's refusals for bad ones). */
export function networkMatcher(rawFilters: string | undefined): (n: NetworkFacts) => boolean {
  const filters = parseFilters(rawFilters, LIST_FILTERS);
  const dangling = filters.get('dangling');
  let danglingOnly: boolean | undefined;
  if (dangling && dangling.length) {
    if (dangling.length > 1) throw invalidArgument('got more than one value for filter key "dangling"');
    if (dangling[0] === '1' || dangling[0] === 'true') danglingOnly = true;
    else if (dangling[0] === '0' || dangling[0] === 'false') danglingOnly = false;
    else throw invalidArgument(`invalid value for filter 'dangling', must be "true" (or "1"), or "false" (or "0")`);
  }
  const types = filters.get('type');
  for (const t of types ?? []) if (t !== 'builtin' && t !== 'custom') throw invalidArgument(`invalid filter: 'type'='${t}'`);
  const want = (key: string, test: (values: string[]) => boolean) => {
    const v = filters.get(key);
    return !v || v.length === 0 || test(v);
  };
  return (n) => {
    const builtin = isPredefinedName(n.name);
    return (
      want('driver', (v) => v.includes(n.driver)) &&
      want('name', (v) => matches(v, n.name)) &&
      want('id', (v) => matches(v, n.id)) &&
      want('label', (v) => matchKVList(v, n.labels)) &&
      want('scope', (v) => v.includes(n.scope)) &&
      want('type', (v) => v.includes(builtin ? 'builtin' : 'custom')) &&
      !(danglingOnly === true && (builtin || n.attached > 0)) &&
      !(danglingOnly === false && !builtin && n.attached === 0)
    );
  };
}

export function listNetworks(
  store: Pick<ApiStore, 'list' | 'get' | 'byIndex'>,
  rawFilters: string | undefined,
  opts: { detailed: boolean },
): Record<string, unknown>[] {
  const match = networkMatcher(rawFilters);
  const out: Record<string, unknown>[] = [];
  const nets = liveNetworks(store).sort((a, b) => (a.spec.name < b.spec.name ? -1 : a.spec.name > b.spec.name ? 1 : 0));
  for (const n of nets) {
    const s = n.spec;
    const containers = attachedContainers(store, n);
    if (!match({ name: s.name, id: s.id, driver: s.driver, scope: s.scope, labels: s.labels ?? {}, attached: Object.keys(containers).length })) continue;
    out.push(networkView(n, opts.detailed ? containers : {}));
  }
  return out;
}
