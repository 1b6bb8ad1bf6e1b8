// This node's part of the swarm's overlay networks. Desired: an instance (a local network record,
// admission/networks/overlay-instance.ts) of each overlay network something here uses — a task
// about to run on it (prepare()) or a container with an address on it — and, in etcd, one endpoint
// key per address taken here (lib/swarm/endpoints.ts), under the node's lease. Observed: the local
// records and address claims, and every node's endpoint keys (a prefix cache, watch-fed). Each
// pass: the node's endpoint keys made to match its local claims (after a new lease, written again;
// a claim gone, its key deleted); each instance's VXLAN device told where the other nodes'
// endpoints are (their MAC behind their VTEP); an instance nothing uses any more marked removed
// (the network reconciler tears its bridge, VXLAN device and rules down). It is the reconciler of
// the `swarm-overlay` controller (./controllers.ts), of one key.
import type { Logger } from 'pino';
import type { Etcd3 } from 'etcd3';
import { macFromIpv4 } from '../../lib/cidr.ts';
import { unavailable } from '../../lib/errors.ts';
import { endpointKey, ENDPOINTS_PREFIX, freeAddresses, parseEndpoint, type SwarmEndpoint } from '../../lib/swarm/endpoints.ts';
import { lookupName } from '../../lib/swarm/endpoint-names.ts';
import { NETWORKS_PREFIX, networkKey, type SwarmNetworkRecord } from '../../lib/swarm/network.ts';
import type { NodeTask } from '../../lib/swarm/task.ts';
import type { TaskNetworkConfig } from '../../lib/swarm/task-container.ts';
import type { VipRule, VxlanPeer } from '../../lib/ports/network.ts';
import { Containers, isRunning, type ContainerResource } from '../../store/kinds/container.ts';
import { Endpoints } from '../../store/kinds/endpoint.ts';
import { IpamAllocations } from '../../store/kinds/ipam-allocation.ts';
import { Networks, type NetworkResource } from '../../store/kinds/network.ts';
import type { Store } from '../../store/store.ts';
import { KeySource } from '../../controllers/source.ts';
import type { ReconcileResult, Reconciler } from '../../controllers/controller.ts';
import { PrefixCache } from './prefix-cache.ts';
import { RoutingMesh, type MeshDeps } from './overlay-mesh.ts';
import { VipRoutes } from './overlay-vips.ts';
import { attachOverlays } from './overlay-attach.ts';

export const OVERLAY_KEY = 'overlay';
const RESYNC_MS = 5000;
/** A VXLAN device whose peers have not changed is read back this often (an entry lost is put back). */
const PEERS_RECHECK_MS = 60_000;
/** An address taken for a container not made yet is kept this long. */
const PENDING_MS = 60_000;

/** What a task's container is given to join its overlay networks. */
export type TaskNetworks = TaskNetworkConfig;

export interface OverlayOptions {
  store: Pick<Store, 'get' | 'list' | 'updateSpec' | 'watch' | 'byIndex' | 'waitFor'>;
  nodeId: string;
  /** This node's VTEP address and the data path port. */
  vtep: string;
  etcd: () => Etcd3 | null;
  /** The node's instance of a swarm network (made pending if it has none). */
  instance: (n: SwarmNetworkRecord) => NetworkResource;
  /** Makes a key under the node's lease if nobody has it (membership.createLeased). */
  createLeased: (key: string, value: string) => Promise<'created' | { held: string } | false>;
  putLeased: (key: string, value: string) => Promise<boolean>;
  syncPeers: (vxlan: string, peers: readonly VxlanPeer[], signal?: AbortSignal) => Promise<number>;
  /** A running container's virtual IP rules, in its namespace (the driver's). */
  applyVipRules: (pid: number, rules: readonly VipRule[], signal?: AbortSignal) => Promise<void>;
  /** The routing mesh's rules (null: taken away). */
  applyIngress: MeshDeps['applyIngress'];
  log: Logger;
}

const taskTargets = (t: NodeTask): Array<{ Target: string; Aliases?: string[] }> =>
  ((t.Spec['Networks'] as Array<{ Target: string; Aliases?: string[] }> | undefined) ?? []).filter((n) => n && typeof n.Target === 'string');

/** Whether a task joins overlay networks (the ingress network for a service publishing ports in ingress mode). */
export const joinsNetworks = (t: NodeTask) => taskTargets(t).length > 0 || !!t.Ingress;

export class OverlayNetworks implements Reconciler {
  private readonly opts: OverlayOptions;
  readonly endpoints = new PrefixCache(ENDPOINTS_PREFIX);
  readonly wakes = new KeySource();
  /** `<network>/<ip>` → what was written there under the current lease. */
  private readonly published = new Map<string, string>();
  /** `<network>/<ip>` taken for an owner whose container is not made yet → when. */
  private readonly pending = new Map<string, { at: number; value: string }>();
  /** Task → what prepare() gave it (a task asks again until its container exists). */
  private readonly prepared = new Map<string, TaskNetworks>();
  /** Task whose container is not made yet → the networks it asked for, and when. */
  private readonly wanted = new Map<string, { at: number; networks: string[] }>();
  /** VXLAN device → the peers last programmed there and when. */
  private readonly programmed = new Map<string, { key: string; at: number }>();
  private readonly vips: VipRoutes;
  private unwatch: (() => void) | null = null;
  private readonly mesh: RoutingMesh;

  constructor(opts: OverlayOptions) {
    this.opts = opts;
    this.vips = new VipRoutes({ store: opts.store, apply: opts.applyVipRules, log: opts.log });
    this.mesh = new RoutingMesh({
      store: opts.store,
      nodeId: opts.nodeId,
      instance: opts.instance,
      // Kept published by the mesh itself (its `own`), not as pending: it never gets a container.
      take: async (client, net, who) => {
        const { key, value } = await this.take(client, net, who);
        this.pending.delete(key);
        return { key, value };
      },
      applyIngress: opts.applyIngress,
      log: opts.log,
    });
  }

  start(): void {
    const kick = () => this.kick();
    // A container started, stopped or healthy changes what its name answers with and which
    // namespaces need virtual IP rules.
    const offs = [this.opts.store.watch(IpamAllocations, kick), this.opts.store.watch(Networks, (ev) => ev.resource.spec.scope === 'swarm' && kick()), this.opts.store.watch(Containers, kick)];
    this.unwatch = () => offs.forEach((f) => f());
  }

  async watch(): Promise<void> {
    const client = this.opts.etcd();
    if (client) await this.endpoints.start(client);
  }

  stop(): void {
    this.unwatch?.();
    this.endpoints.stop();
  }

  kick(): void {
    this.wakes.emit(OVERLAY_KEY);
  }

  /** The node joined again under a new lease: every endpoint key is written again. */
  rejoined(): void {
    this.published.clear();
    this.kick();
  }

  /**
   * The node leaves its swarm: its instances go (their containers are being removed), the mesh's
   * rules too. Called once the reconciler has stopped (a pass would make them again).
   */
  async removeAll(): Promise<void> {
    await this.mesh.stop();
    for (const n of this.opts.store.list(Networks)) {
      if (n.spec.scope === 'swarm' && n.spec.desired !== 'removed') this.opts.store.updateSpec(Networks, n.name, (s) => ({ ...s, desired: 'removed' }));
    }
  }

  /**
   * A task's networks before its container is made: each instance here and ready, an address taken
   * on each; 'wait' while an instance is being made (or one that is going, taken down).
   */
  async prepare(t: NodeTask): Promise<TaskNetworks | 'wait'> {
    const done = this.prepared.get(t.ID);
    if (done) return done;
    const client = this.opts.etcd();
    if (!client) throw unavailable('the swarm\'s store cannot be reached');
    const out: TaskNetworks = { mode: '', endpoints: {} };
    let wait = false;
    // A service publishing ports in ingress mode: its tasks join the ingress network too (last: not their default route).
    const targets = [...taskTargets(t), ...(t.Ingress ? [{ Target: await this.ingressId(client) }] : [])];
    this.wanted.set(t.ID, { at: Date.now(), networks: targets.map((n) => n.Target) });
    for (const target of targets) {
      const raw = await client.get(networkKey(target.Target)).string();
      if (!raw) throw unavailable(`network ${target.Target} not found`);
      const net = JSON.parse(raw) as SwarmNetworkRecord;
      const inst = this.opts.instance(net);
      if (inst.spec.desired === 'removed' || inst.status.phase !== 'ready') {
        wait = true;
        continue;
      }
      const { ip } = await this.take(client, net, { Owner: t.ID, ServiceID: t.ServiceID, ServiceName: t.ServiceName, ...(target.Aliases?.length ? { Aliases: target.Aliases } : {}) });
      if (!out.mode) out.mode = net.Name;
      out.endpoints[net.Name] = { IPAMConfig: { IPv4Address: ip }, ...(target.Aliases?.length ? { Aliases: target.Aliases } : {}) };
    }
    if (wait) return 'wait';
    this.prepared.set(t.ID, out);
    return out;
  }

  /** The swarm's ingress network's id. */
  private async ingressId(client: Etcd3): Promise<string> {
    const all = await client.getAll().prefix(NETWORKS_PREFIX).strings();
    const ing = Object.values(all).map((v) => JSON.parse(v) as SwarmNetworkRecord).find((n) => n.Ingress);
    if (!ing) throw unavailable('the swarm has no ingress network');
    return ing.ID;
  }

  /** The task's container exists (or the task is gone): what prepare() gave it is forgotten. */
  forget(taskId: string): void {
    this.prepared.delete(taskId);
    this.wanted.delete(taskId);
  }

  /** An address of `net` taken for the cluster under this node's lease (the one the owner has, if any). */
  private async take(client: Etcd3, net: SwarmNetworkRecord, who: Pick<SwarmEndpoint, 'Owner' | 'ServiceID' | 'ServiceName' | 'Aliases' | 'Mesh'>): Promise<{ ip: string; key: string; value: string }> {
    const pool = net.IPAM.Config[0];
    if (!pool) throw unavailable(`network ${net.Name} has no address pool`);
    for (const [k, p] of this.pending) {
      const e = parseEndpoint(p.value);
      if (e && e.Network === net.ID && e.Owner === who.Owner) return { ip: k.slice(k.indexOf('/') + 1), key: k, value: p.value };
    }
    for (let attempt = 0; attempt < 5; attempt++) {
      const taken = new Set(Object.keys(await client.getAll().prefix(`${ENDPOINTS_PREFIX}${net.ID}/`).strings()).map((k) => k.slice(k.lastIndexOf('/') + 1)));
      for (const ip of freeAddresses(pool.Subnet, pool.Gateway, taken, attempt * 7)) {
        const got = await this.claim(net, ip, who);
        if (got) return got;
      }
    }
    throw unavailable(`no address is free on network ${net.Name}`);
  }

  /** `ip` of `net` taken for `who` under the node's lease, if nobody has it (undefined: somebody has). */
  private async claim(net: SwarmNetworkRecord, ip: string, who: Pick<SwarmEndpoint, 'Owner' | 'ServiceID' | 'ServiceName' | 'Aliases' | 'Mesh'>): Promise<{ ip: string; key: string; value: string } | undefined> {
    const value = JSON.stringify(this.endpointOf(net.ID, ip, who));
    const k = `${net.ID}/${ip}`;
    // Pending before it is asked for: a pass of reconcile() meanwhile must not take it for a leftover.
    this.pending.set(k, { at: Date.now(), value });
    this.published.set(k, value);
    const r = await this.opts.createLeased(endpointKey(net.ID, ip), value).catch((err: unknown) => {
      this.pending.delete(k);
      this.published.delete(k);
      throw err;
    });
    if (r === 'created') return { ip, key: k, value };
    this.pending.delete(k);
    this.published.delete(k);
    if (r === false) throw unavailable('this node is not joined to its swarm now');
    return undefined;
  }

  /** A create naming attachable overlay networks: each made ready here, an address taken on each (./overlay-attach.ts). */
  async attach(body: unknown): Promise<unknown> {
    const client = this.opts.etcd();
    if (!client) return body;
    return attachOverlays(client, body, {
      store: this.opts.store,
      instance: this.opts.instance,
      take: (_c, net, who) => this.take(client, net, who),
      takeThis: async (_c, net, ip, who) => !!(await this.claim(net, ip, who)),
    });
  }

  private endpointOf(network: string, ip: string, who: Pick<SwarmEndpoint, 'Owner' | 'ServiceID' | 'ServiceName' | 'Aliases' | 'Up' | 'Mesh'>, mac?: string): SwarmEndpoint {
    return { Network: network, IP: ip, Mac: mac || macFromIpv4(ip), Node: this.opts.nodeId, Vtep: this.opts.vtep, ...who };
  }

  async reconcile(_key: string, ctx?: { signal?: AbortSignal }): Promise<ReconcileResult> {
    const client = this.opts.etcd();
    if (!client) return { requeueAfter: RESYNC_MS };
    void this.endpoints.start(client);
    const instances = this.opts.store.list(Networks).filter((n) => n.spec.scope === 'swarm' && n.spec.overlay);
    await this.publish(client, instances);
    await this.program(instances, ctx?.signal);
    if (this.endpoints.ready) await this.mesh.step(client, this.all(), ctx?.signal);
    if (this.endpoints.ready) await this.vips.route(instances, (id) => this.onNetwork(id), ctx?.signal);
    this.collect(instances);
    return { requeueAfter: RESYNC_MS };
  }

  /** The node's endpoint keys: one per address claimed here on an instance (and per address pending). */
  private async publish(client: Etcd3, instances: readonly NetworkResource[]): Promise<void> {
    const ids = new Set(instances.map((n) => n.name));
    const want = new Map<string, string>();
    const now = Date.now();
    for (const [k, p] of this.pending) {
      if (now - p.at > PENDING_MS) this.pending.delete(k);
      else want.set(k, p.value);
    }
    for (const a of this.opts.store.list(IpamAllocations)) {
      if (!ids.has(a.spec.networkId) || a.spec.address.includes(':')) continue;
      const c = this.opts.store.get(Containers, a.spec.containerId);
      if (!c) continue;
      const k = `${a.spec.networkId}/${a.spec.address}`;
      this.pending.delete(k);
      want.set(k, JSON.stringify(this.endpointOf(a.spec.networkId, a.spec.address, ownerOf(c, a.spec.networkId))));
    }
    if (this.mesh.own) want.set(this.mesh.own.key, this.mesh.own.value);
    for (const t of [...this.prepared.keys()]) {
      if (this.opts.store.list(Containers).some((c) => c.spec.ownerRef?.kind === 'swarm-task' && c.spec.ownerRef.name === t)) this.forget(t);
    }
    for (const [k, value] of want) {
      if (this.published.get(k) === value) continue;
      const [network, ip] = [k.slice(0, k.indexOf('/')), k.slice(k.indexOf('/') + 1)];
      const key = endpointKey(network, ip);
      const r = await this.opts.createLeased(key, value);
      if (r === false) return;
      if (r !== 'created') {
        const held = parseEndpoint(r.held);
        if (held?.Node !== this.opts.nodeId) {
          this.opts.log.warn({ network, ip, holder: held?.Node }, 'an overlay address used here is held by another node');
          continue;
        }
        // Ours from before (an earlier lease, or other facts): written again under this lease.
        if (r.held !== value || !this.published.has(k)) await this.opts.putLeased(key, value);
      }
      this.published.set(k, value);
    }
    // What this node holds and no longer uses (the etcd view: a key of a lease before a restart too).
    for (const [key, raw] of this.endpoints.entries()) {
      const e = parseEndpoint(raw);
      if (!e || e.Node !== this.opts.nodeId) continue;
      const k = `${e.Network}/${e.IP}`;
      // (One taken since `want` was read is pending by now.)
      if (want.has(k) || this.pending.has(k)) continue;
      await client.delete().key(key);
      this.published.delete(k);
    }
  }

  /** Each instance's VXLAN device: the other nodes' endpoints on its network. */
  private async program(instances: readonly NetworkResource[], signal?: AbortSignal): Promise<void> {
    if (!this.endpoints.ready) return;
    const byNet = new Map<string, VxlanPeer[]>();
    for (const raw of this.endpoints.values()) {
      const e = parseEndpoint(raw);
      if (!e || e.Node === this.opts.nodeId || !e.Vtep || e.Vip) continue;
      const list = byNet.get(e.Network) ?? [];
      list.push({ ip: e.IP, mac: e.Mac, vtep: e.Vtep });
      byNet.set(e.Network, list);
    }
    const now = Date.now();
    const live = new Set<string>();
    for (const n of instances) {
      if (n.spec.desired === 'removed' || n.status.phase !== 'ready' || !n.spec.overlay) continue;
      const device = n.spec.overlay.vxlanName;
      live.add(device);
      const peers = byNet.get(n.name) ?? [];
      // The same peers as the last sync that succeeded: the device is read again only now and then
      // (an entry someone removed is put back), not on every pass.
      // (The instance's creation in the key: one made again starts with an empty device.)
      const key = `${n.createdAt}|${peers.map((p) => `${p.ip}/${p.mac}/${p.vtep}`).sort().join(',')}`;
      const last = this.programmed.get(device);
      if (last && last.key === key && now - last.at < PEERS_RECHECK_MS) continue;
      try {
        const changed = await this.opts.syncPeers(device, peers, signal);
        this.programmed.set(device, { key, at: now });
        if (changed) this.opts.log.debug({ network: n.spec.name, changed }, 'overlay peers programmed');
      } catch (err) {
        this.programmed.delete(device);
        this.opts.log.warn({ err, network: n.spec.name }, 'overlay peers could not be programmed');
      }
    }
    for (const device of [...this.programmed.keys()]) if (!live.has(device)) this.programmed.delete(device);
  }

  /** Every endpoint of the swarm (every node's, and the services' virtual IPs), from the cache. */
  private all(): SwarmEndpoint[] {
    return this.endpoints.values().map(parseEndpoint).filter((e): e is SwarmEndpoint => !!e);
  }

  /** The endpoints on one network. */
  private onNetwork(networkId: string): SwarmEndpoint[] {
    return this.all().filter((e) => e.Network === networkId);
  }

  /** A name on an overlay network, as the reference's embedded DNS answers it (lib/swarm/endpoint-names.ts). */
  lookup(networkId: string, asked: string): string[] | null {
    return lookupName(this.onNetwork(networkId), asked);
  }

  /** Instances nothing here uses (no address, no endpoint, nobody asking lately): marked removed. */
  private collect(instances: readonly NetworkResource[]): void {
    const used = new Set<string>();
    for (const a of this.opts.store.list(IpamAllocations)) used.add(a.spec.networkId);
    for (const e of this.opts.store.list(Endpoints)) used.add(e.spec.networkId);
    for (const k of this.pending.keys()) used.add(k.slice(0, k.indexOf('/')));
    if (this.mesh.network) used.add(this.mesh.network);
    const now = Date.now();
    for (const [task, w] of this.wanted) {
      if (now - w.at > PENDING_MS) this.wanted.delete(task);
      else w.networks.forEach((n) => used.add(n));
    }
    for (const n of instances) {
      if (n.spec.desired === 'removed' || used.has(n.name)) continue;
      this.opts.log.info({ network: n.spec.name }, 'overlay network no longer used here: removing its instance');
      this.opts.store.updateSpec(Networks, n.name, (s) => ({ ...s, desired: 'removed' }));
    }
  }
}

/** Who an address of a container is for: its task (and service), or the container itself. */
function ownerOf(c: ContainerResource, network: string): Pick<SwarmEndpoint, 'Owner' | 'ServiceID' | 'ServiceName' | 'Aliases' | 'Up'> {
  const labels = (c.spec.config as { Labels?: Record<string, string> } | undefined)?.Labels ?? {};
  const eps = (c.spec.networkingConfig as { EndpointsConfig?: Record<string, { Aliases?: string[] | null } | null> } | null)?.EndpointsConfig ?? {};
  const net = Object.entries(eps).find(([k]) => k === network)?.[1] ?? Object.values(eps).find(Boolean);
  const aliases = net?.Aliases?.filter(Boolean) ?? [];
  const Up = servesClients(c);
  if (c.spec.ownerRef?.kind === 'swarm-task') {
    return { Owner: c.spec.ownerRef.name, ServiceID: labels['com.docker.swarm.service.id'] ?? '', ServiceName: labels['com.docker.swarm.service.name'] ?? '', ...(aliases.length ? { Aliases: aliases } : {}), Up };
  }
  return { Owner: c.spec.id, Aliases: [c.spec.name.replace(/^\//, ''), ...aliases], Up };
}

/** Running, not on its way out, and healthy when it has a healthcheck: its name answers with it. */
function servesClients(c: ContainerResource): boolean {
  if (!isRunning(c.status) || c.spec.desired !== 'running') return false;
  return !c.status.health || (c.status.health.Status === 'healthy' && c.status.healthRun === c.status.startedAt);
}
