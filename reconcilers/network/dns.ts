// Name resolution on user-defined networks: one embedded DNS server per network, bound on the
// network's gateway address (containers there get it as their nameserver), answering the names of
// the containers attached to that network — container name, short id and the aliases given for
// that network — from the store, and forwarding every other name upstream. The network
// reconciler makes sure a ready user network has its server (and closes it with the network);
// the default bridge has none, as with the reference daemon.
import type { Logger } from 'pino';
import { isRunning, Containers, type ContainerResource as CR } from '../../store/kinds/container.ts';
import type { Resource } from '../../store/types.ts';
import { endpointName, pluggedAddresses, type EndpointSpec, type EndpointStatus, Endpoints } from '../../store/kinds/endpoint.ts';
import { ipv4Pool, type NetworkSpec, Networks, type NetworkResource } from '../../store/kinds/network.ts';
import type { ReconcilerStore } from '../store-like.ts';


/** What this needs of the DNS server driver (drivers/network/dns-server.ts). */
export interface DnsServerPort {
  start(opts: {
    address: string;
    source: { lookup(name: string, type: 'A' | 'AAAA', from?: string): string[] | null; reverse?(ip: string): string | null };
    upstreams: (from?: string) => string[];
  }): Promise<{ close(): Promise<void> }>;
}

interface Running {
  address: string;
  server: { close(): Promise<void> };
}

/** Whether a network gets embedded DNS: a user-defined bridge (not the default `bridge`). */
export function hasEmbeddedDns(net: Pick<NetworkSpec, 'name' | 'driver'>): boolean {
  return net.driver === 'bridge' && net.name !== 'bridge';
}

export class NetworkDns {
  private readonly store: Pick<ReconcilerStore, 'get' | 'list'>;
  private readonly servers: DnsServerPort;
  private readonly upstreams: () => string[];
  private readonly log: Logger;
  private readonly running = new Map<string, Running>();

  constructor(store: Pick<ReconcilerStore, 'get' | 'list'>, servers: DnsServerPort, upstreams: () => string[], log: Logger) {
    this.store = store;
    this.servers = servers;
    this.upstreams = upstreams;
    this.log = log;
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
      source: { lookup: (name, type, from) => this.lookup(id, name, type, from), reverse: (ip) => this.reverse(id, ip) },
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
    // A link of the asking container is an alias only it resolves: the linked container's name.
    const name = (from && this.linkTarget(networkId, net.spec, from, asked)) || asked;
    const found = this.attached(networkId).filter(({ c }) => this.namesOf(c, net.spec).includes(name));
    if (!found.length) return null;
    // The name is ours either way: an empty AAAA answer (no IPv6 here) is not forwarded.
    return type === 'A' ? found.map((x) => x.ip) : found.map((x) => x.ip6).filter(Boolean);
  }

  /** The container a link alias of the container at `from` names on this network, lowercased, or undefined. */
  private linkTarget(networkId: string, net: Pick<NetworkSpec, 'id' | 'name'>, from: string, alias: string): string | undefined {
    const c = this.asker(networkId, from);
    if (!c) return undefined;
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
  private recordOn(containerId: string, networkId: string): Resource<EndpointSpec, EndpointStatus> | undefined {
    const r = this.store.get(Endpoints, endpointName(containerId, networkId));
    return r?.spec.desired === 'present' ? r : undefined;
  }

  private reverse(networkId: string, ip: string): string | null {
    const c = this.attached(networkId).find((x) => x.ip === ip || x.ip6 === ip)?.c;
    if (!c) return null;
    const net = this.store.get(Networks, networkId);
    return net ? `${c.spec.name.replace(/^\//, '')}.${net.spec.name}` : null;
  }
}
