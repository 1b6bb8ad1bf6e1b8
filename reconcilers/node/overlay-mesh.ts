// The routing mesh on this node (issue 65, 4): while a service publishes ports in ingress mode
// (its virtual IP on the ingress network carries them, cmd/swarm/vips.ts), every node — tasks of
// the service here or not — has its instance of the ingress network, an address of its own on it
// (an endpoint key like a task's, under the node's lease, on the bridge with the MAC the other
// nodes are told), and the rules that send each published port to the service's tasks that are up
// on the ingress network, wherever they run, with its own address as the source
// (drivers/network/ingress-rules.ts). The last such port gone, the rules go and the address is
// given back; the instance goes with it when nothing else uses it. A part of ./overlay.ts's pass.
import type { Etcd3 } from 'etcd3';
import type { Logger } from 'pino';
import type { IngressConfig } from '../../lib/ports/network.ts';
import type { SwarmEndpoint } from '../../lib/swarm/endpoints.ts';
import { networkKey, type SwarmNetworkRecord } from '../../lib/swarm/network.ts';
import { Networks, type NetworkResource } from '../../store/kinds/network.ts';
import type { Store } from '../../store/store.ts';

export interface MeshDeps {
  store: Pick<Store, 'get' | 'updateSpec'>;
  nodeId: string;
  instance: (n: SwarmNetworkRecord) => NetworkResource;
  /** An address of the network taken for the cluster under the node's lease (./overlay.ts's). */
  take: (client: Etcd3, net: SwarmNetworkRecord, who: Pick<SwarmEndpoint, 'Owner' | 'Mesh'>) => Promise<{ key: string; value: string }>;
  applyIngress: (cfg: IngressConfig | null, chainPrefix: string, signal?: AbortSignal) => Promise<void>;
  log: Logger;
}

export class RoutingMesh {
  private readonly d: MeshDeps;
  /** This node's own address on the ingress network: its key (`<network>/<ip>`) and value, kept published. */
  own: { key: string; value: string } | undefined;
  /** The ingress network, while the mesh runs here. */
  network: string | undefined;
  private record: SwarmNetworkRecord | undefined;
  /** What the rules say now ('' none), and the chain prefix they were written with. */
  private applied = '';
  private prefix = '';

  constructor(d: MeshDeps) {
    this.d = d;
  }

  async step(client: Etcd3, eps: readonly SwarmEndpoint[], signal?: AbortSignal): Promise<void> {
    const vips = eps.filter((e) => e.Vip && e.Ports?.length);
    if (!vips.length) return this.off(signal);
    const netId = vips[0]!.Network;
    this.network = netId;
    if (this.record?.ID !== netId) {
      const raw = await client.get(networkKey(netId)).string();
      if (!raw) return;
      this.record = JSON.parse(raw) as SwarmNetworkRecord;
    }
    const inst = this.d.instance(this.record);
    const b = inst.spec.bridge;
    if (inst.spec.desired === 'removed' || !b || !inst.spec.overlay) return;
    if (!this.own) this.own = await this.d.take(client, this.record, { Owner: `mesh:${this.d.nodeId}`, Mesh: true });
    const ip = this.own.key.slice(this.own.key.indexOf('/') + 1);
    const hostAddress = `${ip}/${this.record.IPAM.Config[0]!.Subnet.split('/')[1]}`;
    if (inst.spec.overlay.hostAddress !== hostAddress) {
      this.d.store.updateSpec(Networks, inst.name, (s) => ({ ...s, overlay: { ...s.overlay!, hostAddress } }));
      return;
    }
    if (inst.status.phase !== 'ready' || inst.status.observedGeneration < inst.generation) return;
    const ports: IngressConfig['ports'] = [];
    for (const v of vips) {
      const backends = eps.filter((e) => !e.Vip && e.Up && e.Network === netId && e.ServiceID === v.ServiceID).map((e) => e.IP).sort();
      for (const p of v.Ports ?? []) if (p.PublishedPort) ports.push({ protocol: p.Protocol, published: p.PublishedPort, target: p.TargetPort ?? 0, backends });
    }
    const cfg: IngressConfig = { chainPrefix: b.chainPrefix, bridge: b.bridgeName, source: ip, ports };
    const text = JSON.stringify(cfg);
    if (text === this.applied) return;
    await this.d.applyIngress(cfg, b.chainPrefix, signal);
    if (!this.applied) this.d.log.info({ ports: ports.map((p) => `${p.published}/${p.protocol}`) }, 'routing mesh publishing');
    this.applied = text;
    this.prefix = b.chainPrefix;
  }

  /** No port published in ingress mode: the rules taken away, the address given back. */
  private async off(signal?: AbortSignal): Promise<void> {
    if (this.applied) {
      await this.d.applyIngress(null, this.prefix, signal);
      this.applied = '';
      this.d.log.info('routing mesh stopped');
    }
    this.own = undefined;
    this.network = undefined;
  }

  /** The node leaves the swarm: the rules go. */
  async stop(): Promise<void> {
    await this.off().catch(() => undefined);
  }
}
