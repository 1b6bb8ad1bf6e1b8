// Name resolution on user-defined networks: one embedded DNS server per network, bound on the
// network's gateway address (containers there get it as their nameserver), answering the names of
// the containers attached to that network — container name, short id and the aliases given for
// that network — from the store, and forwarding every other name upstream. As the reference's
// per-container resolver does, a container asking also gets the names of its other networks
// (and its links there: `network connect --link`), its own network's first. The network
// reconciler makes sure a ready user network has its server (and closes it with the network);
// the default bridge has none, as with the reference daemon.
import type { Logger } from 'pino';
import { isRunning, Containers, type ContainerResource as CR } from '../../store/kinds/container.ts';
import { endpointName, endpointsOfContainer, pluggedAddresses, Endpoints, type EndpointResource } from '../../store/kinds/endpoint.ts';
import { ipv4Pool, isBridged, type NetworkSpec, Networks, type NetworkResource } from '../../store/kinds/network.ts';
import type { ReconcilerStore } from '../store-like.ts';
import { healthConfigOf } from '../container/health.ts';

/** Ready for clients: without a healthcheck, running; with one, healthy in its current run. */
function servesClients(c: CR): boolean {
  if (!healthConfigOf(c.spec.config ?? {}) && !c.status.health) return true;
  return c.status.health?.Status === 'healthy' && c.status.healthRun === c.status.startedAt;
}


/** What this needs of the DNS server driver (drivers/network/dns-server.ts). */
export interface DnsServerPort {
  start(opts: {
    address: string;
    source: { lookup(name: string, type: 'A' | 'AAAA', from?: string): string[] | null; reverse?(ip: string, from?: string): string | null };
    upstreams: (from?: string) => string[];
  }): Promise<{ close(): Promise<void> }>;
}

interface Running {
  address: string;
  server: { close(): Promise<void> };
}

/** Whether a network gets embedded DNS: a user-defined bridge (not the default `bridge`). */
export function hasEmbeddedDns(net: Pick<NetworkSpec, 'name' | 'driver'>): boolean {
  return isBridged(net) && net.name !== 'bridge';
}

export class NetworkDns {
  private readonly store: Pick<ReconcilerStore, 'get' | 'list' | 'byIndex'>;
  private readonly servers: DnsServerPort;
  private readonly upstreams: () => string[];
  private readonly log: Logger;
  private readonly running = new Map<string, Running>();
  /** The swarm's names on its overlay networks (reconcilers/node/overlay.ts), while the node is in one. */
  private swarmNames: ((networkId: string, name: string) => string[] | null) | undefined;

  constructor(store: Pick<ReconcilerStore, 'get' | 'list' | 'byIndex'>, servers: DnsServerPort, upstreams: () => string[], log: Logger) {
    this.store = store;
    this.servers = servers;
    this.upstreams = upstreams;
    this.log = log;
  }

  /** Where the names of the swarm's services and tasks are asked (undefined: in no swarm). */
  useSwarmNames(fn: ((networkId: string, name: string) => string[] | null) | undefined): void {
    this.swarmNames = fn;
  }

  /** The network's server runs on its gateway (started, or moved when the gateway changed). */
  async ensure(net: NetworkResource): Promise<boolean> {
    const address = ipv4Pool(net.spec)?.Gateway;
    if (!address || !hasEmbeddedDns(net.spec)) return false;
    const cur = this.running.get(net.spec.id);
    if (cur?.address === address) return false;
    if (cur) await this.close(net.spec.id);
    const id = net.spec.id;
    const server = await this.servers.start({
      address,
      source: { lookup: (name, type, from) => this.lookup(id, name, type, from), reverse: (ip, from) => this.reverse(id, ip, from) },
      upstreams: (from) => this.upstreamsFor(id, from),
    });
    this.running.set(id, { address, server });
    this.log.debug({ network: net.spec.name, address }, 'embedded DNS listening');
    return true;
  }

  async close(networkId: string): Promise<void> {
    const cur = this.running.get(networkId);
    if (!cur) return;
    this.running.delete(networkId);
    await cur.server.close().catch((err) => this.log.warn({ err, networkId }, 'closing embedded DNS failed'));
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.running.keys()].map((id) => this.close(id)));
  }

  /**
   * Where names the network does not know are asked: the asking container's own --dns servers,
   * as the reference's embedded DNS does, else the daemon's (--dns, or the host's resolvers).
   */
  upstreamsFor(networkId: string, from?: string): string[] {
    const c = from ? this.asker(networkId, from) : undefined;
    const own = (c?.spec.hostConfig.Dns ?? []).filter((s) => typeof s === 'string' && s);
    return own.length ? own : this.upstreams();
  }

  /** The names a container answers to on a network. */
  namesOf(c: CR, net: Pick<NetworkSpec, 'id' | 'name'>): string[] {
    const names = [c.spec.name.replace(/^\//, ''), c.name.slice(0, 12)];
    names.push(...(this.settingsOn(c, net)?.Aliases ?? []));
    return [...new Set(names.filter(Boolean).map((n) => n.toLowerCase()))];
  }

  /**
   * The container that holds `address` on the network: the one asking. Not only live ones: a
   * process may ask before its start is recorded, and an address stays claimed by its container
   * until the container is removed, so it names one container.
   */
  private asker(networkId: string, address: string): CR | undefined {
    for (const c of this.store.list(Containers)) {
      const own = c.status.endpoint?.NetworkID === networkId ? c.status.endpoint : undefined;
      const ep = own ?? this.recordOn(c.name, networkId)?.status.addresses;
      if (ep && (ep.IPAddress === address || (!!ep.GlobalIPv6Address && ep.GlobalIPv6Address === address))) return c;
    }
    return undefined;
  }

  /** Live containers on the network, each with its addresses there (primary or extra endpoint). */
  private attached(networkId: string): Array<{ c: CR; ip: string; ip6: string }> {
    const out: Array<{ c: CR; ip: string; ip6: string }> = [];
    for (const c of this.store.list(Containers)) {
      if (!isRunning(c.status)) continue;
      const own = c.status.endpoint?.NetworkID === networkId ? c.status.endpoint : undefined;
      const rec = own ? undefined : this.recordOn(c.name, networkId);
      const ep = own ?? (rec && pluggedAddresses(rec.status, c.status.pid));
      if (ep?.IPAddress) out.push({ c, ip: ep.IPAddress, ip6: ep.GlobalIPv6Address ?? '' });
    }
    return out;
  }

  private lookup(networkId: string, asked: string, type: 'A' | 'AAAA', from?: string): string[] | null {
    const net = this.store.get(Networks, networkId);
    if (!net) return null;
    // As the reference's resolver of a container's sandbox: the networks of the asking container,
    // the one asked first, each with its links there (an alias only that container resolves: the
    // linked container's name) and the names of the containers on it.
    const c = from ? this.asker(networkId, from) : undefined;
    for (const n of [net, ...(c ? this.otherNetworksOf(c, networkId) : [])]) {
      const name = (c && this.linkTarget(c, n.spec, asked)) || asked;
      const holders = this.attached(n.spec.id).filter(({ c: x }) => this.namesOf(x, n.spec).includes(name));
      if (!holders.length) continue;
      // A name several containers hold (a service's replicas) answers with those ready for clients:
      // not on their way out (being stopped or removed: a rolling update's old replica stops getting
      // new clients before its process goes) and, with a healthcheck, healthy (a new replica joins
      // once it serves). With none ready it answers with what there is, as for a lone container.
      const staying = holders.filter(({ c: x }) => x.spec.desired !== 'removed' && x.spec.desired !== 'stopped');
      const ready = staying.filter(({ c: x }) => servesClients(x));
      const found = ready.length ? ready : staying.length ? staying : holders;
      // The name is ours either way: an empty AAAA answer (no IPv6 here) is not forwarded.
      return type === 'A' ? found.map((x) => x.ip) : found.map((x) => x.ip6).filter(Boolean);
    }
    // On an overlay network: the swarm's services and tasks, wherever they run.
    for (const n of [net, ...(c ? this.otherNetworksOf(c, networkId) : [])]) {
      if (n.spec.scope !== 'swarm' || !this.swarmNames) continue;
      const ips = this.swarmNames(n.spec.id, asked);
      if (ips) return type === 'A' ? ips : [];
    }
    return null;
  }

  /** The container's other networks with embedded DNS it is on (wanted endpoints, its NetworkMode one included). */
  private otherNetworksOf(c: CR, networkId: string): NetworkResource[] {
    const ids = new Set<string>();
    if (c.status.endpoint?.NetworkID) ids.add(c.status.endpoint.NetworkID);
    for (const e of endpointsOfContainer(this.store, c.name)) if (e.spec.desired === 'present') ids.add(e.spec.networkId);
    ids.delete(networkId);
    const out: NetworkResource[] = [];
    for (const id of ids) {
      const n = this.store.get(Networks, id);
      if (n && n.spec.desired !== 'removed' && hasEmbeddedDns(n.spec)) out.push(n);
    }
    return out;
  }

  /** The container a link alias of `c` names on this network, lowercased, or undefined. */
  private linkTarget(c: CR, net: Pick<NetworkSpec, 'id' | 'name'>, alias: string): string | undefined {
    const links: string[] = [...((c.spec.hostConfig.Links as string[] | null | undefined) ?? [])];
    links.push(...(this.settingsOn(c, net)?.Links ?? []));
    for (const l of links) {
      const [target, a = target] = l.split(':');
      if (a!.split('/').pop()!.toLowerCase() === alias) return target!.replace(/^\//, '').toLowerCase();
    }
    return undefined;
  }

  /**
   * What the container asked of its endpoint on the network (aliases, links): its endpoint
   * record's settings, or, for a container without one, its spec's EndpointsConfig entry.
   */
  private settingsOn(c: CR, net: Pick<NetworkSpec, 'id' | 'name'>): { Aliases?: string[] | null; Links?: string[] | null } | undefined {
    const rec = this.recordOn(c.name, net.id);
    if (rec) return rec.spec.config;
    const eps = (c.spec.networkingConfig as { EndpointsConfig?: Record<string, { Aliases?: string[] | null; Links?: string[] | null } | null> } | null)?.EndpointsConfig ?? {};
    const key = Object.keys(eps).find((k) => k === net.name || k === net.id || (k.length >= 12 && net.id.startsWith(k)));
    return key ? (eps[key] ?? undefined) : undefined;
  }

  /** The container's endpoint record on the network, if wanted. */
  private recordOn(containerId: string, networkId: string): EndpointResource | undefined {
    const r = this.store.get(Endpoints, endpointName(containerId, networkId));
    return r?.spec.desired === 'present' ? r : undefined;
  }

  private reverse(networkId: string, ip: string, from?: string): string | null {
    const net = this.store.get(Networks, networkId);
    if (!net) return null;
    const c = from ? this.asker(networkId, from) : undefined;
    for (const n of [net, ...(c ? this.otherNetworksOf(c, networkId) : [])]) {
      const x = this.attached(n.spec.id).find((a) => a.ip === ip || a.ip6 === ip)?.c;
      if (x) return `${x.spec.name.replace(/^\//, '')}.${n.spec.name}`;
    }
    return null;
  }
}
