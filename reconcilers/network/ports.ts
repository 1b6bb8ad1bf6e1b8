// Published ports: when a container on a bridge network starts, each of its port bindings
// (`-p`, `-P`) gets a host port claimed by a durable record (kind port-allocation; the record's
// existence is the claim), the DNAT/ACCEPT/hairpin rules in the engine's chains, and, with the
// userland proxy on, a listener on the host address that forwards to the container (loopback
// traffic is never NATed). When the run ends everything is taken away from the records alone, so
// a crash leaks nothing: at boot `sweep` takes away what the records of the last life say.
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { EngineError } from '../../lib/errors.ts';
import type { ContainerEndpoint, PublishedPort } from '../../store/kinds/container.ts';
import { Networks } from '../../store/kinds/network.ts';
import { type PortAllocationSpec, PortAllocations, type PortAllocationResource } from '../../store/kinds/port-allocation.ts';
import type { NetworkStore } from './deps.ts';

type Proto = PublishedPort['proto'];
type Allocation = PortAllocationResource;

export interface PortRulesPort {
  publishPort(cfg: PortRuleInput, signal?: AbortSignal): Promise<void>;
  unpublishPort(cfg: PortRuleInput, signal?: AbortSignal): Promise<void>;
}

export interface PortRuleInput {
  chainPrefix: string;
  bridge: string;
  proto: Proto;
  hostIp: string;
  hostPort: number;
  containerIp: string;
  containerPort: number;
  userlandProxy: boolean;
}

export interface ProxyPort {
  start(spec: { proto: Proto; hostIp: string; hostPort: number; containerIp: string; containerPort: number }): Promise<{ close(): Promise<void> }>;
}

export interface PublishRequest {
  containerId: string;
  /** Without the leading slash, for the reference's error message. */
  containerName: string;
  endpoint: ContainerEndpoint;
  portBindings: Record<string, Array<{ HostIp?: string; HostPort?: string }> | null> | null | undefined;
  publishAll: boolean;
  exposedPorts: Record<string, object> | null | undefined;
}

export interface PortPublisherOptions {
  log: Logger;
  /** The daemon's --ip: the host address of bindings that name none. */
  defaultIp: string;
  userlandProxy: boolean;
  /** Absent: no proxies (tests; --userland-proxy=false needs none). */
  proxy?: ProxyPort;
  /** Ephemeral host ports; the kernel's ip_local_port_range by default, as the reference. */
  ephemeralRange?: [number, number];
}

/** One binding to make: a container port and where on the host. */
interface Wanted {
  proto: Proto;
  containerPort: number;
  hostIp: string;
  /** Inclusive range; equal ends for a fixed port; undefined for an ephemeral one. */
  range?: [number, number];
}

function kernelPortRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (lo && hi && lo <= hi) return [lo, hi];
  } catch {
    // not Linux or not readable: the reference's fallback
  }
  return [49153, 65535];
}

/** What the container's HostConfig and Config ask to publish. */
export function wantedBindings(req: Pick<PublishRequest, 'portBindings' | 'publishAll' | 'exposedPorts'>, defaultIp: string): Wanted[] {
  const out: Wanted[] = [];
  const bound = new Set<string>();
  const parseKey = (key: string): { port: number; proto: Proto } | null => {
    const [p, proto = 'tcp'] = key.split('/');
    const port = Number(p);
    if (!Number.isInteger(port) || port < 1 || port > 65535 || !['tcp', 'udp', 'sctp'].includes(proto)) return null;
    return { port, proto: proto as Proto };
  };
  for (const [key, list] of Object.entries(req.portBindings ?? {})) {
    const k = parseKey(key);
    if (!k) continue;
    bound.add(`${k.port}/${k.proto}`);
    for (const b of list ?? [{}]) {
      const hostIp = b.HostIp || defaultIp;
      const hp = (b.HostPort ?? '').trim();
      let range: [number, number] | undefined;
      if (hp && hp !== '0') {
        const [a, z = a] = hp.split('-').map(Number);
        range = [a!, z!];
      }
      out.push({ proto: k.proto, containerPort: k.port, hostIp, range });
    }
  }
  if (req.publishAll) {
    for (const key of Object.keys(req.exposedPorts ?? {})) {
      const k = parseKey(key);
      if (!k || bound.has(`${k.port}/${k.proto}`)) continue;
      out.push({ proto: k.proto, containerPort: k.port, hostIp: defaultIp });
    }
  }
  return out;
}

export class PortPublisher {
  private readonly store: NetworkStore;
  private readonly rules: PortRulesPort;
  private readonly opts: PortPublisherOptions;
  private readonly range: [number, number];
  /** Next ephemeral port to try (the reference hands them out in turn). */
  private cursor: number;
  /** Running proxies per container. */
  private readonly proxies = new Map<string, Array<{ close(): Promise<void> }>>();

  constructor(store: NetworkStore, rules: PortRulesPort, opts: PortPublisherOptions) {
    this.store = store;
    this.rules = rules;
    this.opts = opts;
    this.range = opts.ephemeralRange ?? kernelPortRange();
    this.cursor = this.range[0];
  }

  /** Claims, programs and proxies every binding; on a failure what was done is undone and the error thrown. */
  async publish(req: PublishRequest, signal?: AbortSignal): Promise<PublishedPort[]> {
    const wanted = wantedBindings(req, this.opts.defaultIp);
    if (wanted.length === 0) return [];
    const net = this.store.get(Networks, req.endpoint.NetworkID);
    const bridge = net?.spec.bridge;
    if (!bridge) return [];
    const out: PublishedPort[] = [];
    try {
      for (const w of wanted) out.push(await this.publishOne(req, w, { chainPrefix: bridge.chainPrefix, bridge: bridge.bridgeName, iptables: bridge.iptables }, signal));
    } catch (err) {
      await this.unpublish(req.containerId, signal).catch(() => {});
      throw err;
    }
    return out;
  }

  private async publishOne(req: PublishRequest, w: Wanted, net: { chainPrefix: string; bridge: string; iptables: boolean }, signal?: AbortSignal): Promise<PublishedPort> {
    const fail = (msg: string, cause?: unknown) =>
      new EngineError('Internal', `driver failed programming external connectivity on endpoint ${req.containerName} (${req.endpoint.EndpointID}): ${msg}`, { cause });
    // An ephemeral port (or one in a range) the proxy cannot bind is skipped for the next one.
    const tries = w.range && w.range[0] === w.range[1] ? 1 : 10;
    let last: unknown;
    for (let i = 0; i < tries; i++) {
      const a = this.claim(req, w, net);
      if (!a) {
        if (w.range && w.range[0] === w.range[1]) throw fail(`Bind for ${w.hostIp}:${w.range[0]} failed: port is already allocated`);
        throw fail(`Bind for ${w.hostIp}:${w.range ? `${w.range[0]}-${w.range[1]}` : '0'} failed: no free port in the range`);
      }
      try {
        if (net.iptables) await this.rules.publishPort(ruleInput(a.spec), signal);
        if (a.spec.userlandProxy && this.opts.proxy) {
          const h = await this.opts.proxy.start({ proto: w.proto, hostIp: w.hostIp, hostPort: a.spec.hostPort, containerIp: a.spec.containerIp, containerPort: w.containerPort });
          const list = this.proxies.get(req.containerId) ?? [];
          list.push(h);
          this.proxies.set(req.containerId, list);
        }
        return { containerPort: w.containerPort, proto: w.proto, hostIp: w.hostIp, hostPort: a.spec.hostPort };
      } catch (err) {
        last = err;
        await this.releaseOne(a, signal).catch(() => {});
        if (tries === 1) throw fail((err as Error).message, err);
      }
    }
    throw fail((last as Error)?.message ?? 'no free port', last);
  }

  /** Takes every published port of the container away: proxies, rules, claims. */
  async unpublish(containerId: string, signal?: AbortSignal): Promise<void> {
    const handles = this.proxies.get(containerId) ?? [];
    this.proxies.delete(containerId);
    await Promise.all(handles.map((h) => h.close().catch((err) => this.opts.log.warn({ err }, 'closing a port proxy failed'))));
    for (const a of this.allocations().filter((x) => x.spec.containerId === containerId)) await this.releaseOne(a, signal);
  }

  /**
   * Boot: the runs of the last life are stopped at start-up, so their ports go — except those of
   * the containers `kept` names (live restore adopts them: rules and claims stay, see `adopt`).
   */
  async sweep(signal?: AbortSignal, kept: (containerId: string) => boolean = () => false): Promise<number> {
    const all = this.allocations().filter((a) => !kept(a.spec.containerId));
    for (const a of all) await this.releaseOne(a, signal).catch((err) => this.opts.log.warn({ err, port: a.name }, 'releasing a published port failed'));
    return all.length;
  }

  /** Live restore: an adopted container's claims (and rules) were kept; its proxies listen again. */
  async adopt(containerId: string): Promise<PublishedPort[]> {
    const mine = this.allocations().filter((a) => a.spec.containerId === containerId);
    const out: PublishedPort[] = [];
    // Asked once: each of its ports gets its proxy again, not only the first one.
    const proxied = this.proxies.has(containerId);
    for (const a of mine) {
      const s = a.spec;
      if (s.userlandProxy && this.opts.proxy && !proxied) {
        const h = await this.opts.proxy.start({ proto: s.proto, hostIp: s.hostIp, hostPort: s.hostPort, containerIp: s.containerIp, containerPort: s.containerPort });
        const list = this.proxies.get(containerId) ?? [];
        list.push(h);
        this.proxies.set(containerId, list);
      }
      out.push({ containerPort: s.containerPort, proto: s.proto, hostIp: s.hostIp, hostPort: s.hostPort });
    }
    return out;
  }

  private async releaseOne(a: Allocation, signal?: AbortSignal): Promise<void> {
    if (a.spec.iptables) await this.rules.unpublishPort(ruleInput(a.spec), signal);
    this.store.delete(PortAllocations, a.name);
  }

  private allocations(): Allocation[] {
    return this.store.list(PortAllocations);
  }

  /**
   * The claim, in one store transaction: the first free port of the binding's range (or the next
   * ephemeral one), where free means no claim on that port and protocol for the same address or
   * for the any-address on either side. Undefined when none is free.
   */
  private claim(req: PublishRequest, w: Wanted, net: { chainPrefix: string; bridge: string; iptables: boolean }): Allocation | undefined {
    return this.store.transaction(() => {
      const taken = new Set<number>();
      for (const a of this.allocations()) {
        if (a.spec.proto !== w.proto) continue;
        if (a.spec.hostIp === w.hostIp || a.spec.hostIp === '0.0.0.0' || w.hostIp === '0.0.0.0') taken.add(a.spec.hostPort);
      }
      const pick = (): number | undefined => {
        if (w.range) {
          for (let p = w.range[0]; p <= w.range[1]; p++) if (!taken.has(p)) return p;
          return undefined;
        }
        const [lo, hi] = this.range;
        for (let n = 0; n <= hi - lo; n++) {
          const p = lo + ((this.cursor - lo + n) % (hi - lo + 1));
          if (!taken.has(p)) {
            this.cursor = p + 1 > hi ? lo : p + 1;
            return p;
          }
        }
        return undefined;
      };
      const hostPort = pick();
      if (hostPort === undefined) return undefined;
      const spec: PortAllocationSpec = {
        containerId: req.containerId,
        proto: w.proto,
        hostIp: w.hostIp,
        hostPort,
        containerIp: req.endpoint.IPAddress,
        containerPort: w.containerPort,
        bridge: net.bridge,
        chainPrefix: net.chainPrefix,
        iptables: net.iptables,
        userlandProxy: this.opts.userlandProxy,
      };
      return this.store.create(PortAllocations, `${w.proto}/${w.hostIp}/${hostPort}`, spec, {});
    });
  }
}

function ruleInput(s: PortAllocationSpec): PortRuleInput {
  return {
    chainPrefix: s.chainPrefix,
    bridge: s.bridge,
    proto: s.proto,
    hostIp: s.hostIp,
    hostPort: s.hostPort,
    containerIp: s.containerIp,
    containerPort: s.containerPort,
    userlandProxy: s.userlandProxy,
  };
}

