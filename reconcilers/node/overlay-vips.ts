// The services' virtual IPs inside the containers of this node (issue 65, 3): each running
// container with an address on an overlay instance has, in its own namespace, the rules that send
// every virtual IP of its networks to that service's tasks that are up (drivers/network/vip-rules.ts),
// written again only when they or the container's process changed. A part of ./overlay.ts's pass.
import type { Logger } from 'pino';
import type { VipRule } from '../../lib/ports/network.ts';
import { vipRules } from '../../lib/swarm/endpoint-names.ts';
import type { SwarmEndpoint } from '../../lib/swarm/endpoints.ts';
import { Containers, isRunning } from '../../store/kinds/container.ts';
import { IpamAllocations } from '../../store/kinds/ipam-allocation.ts';
import type { NetworkResource } from '../../store/kinds/network.ts';
import type { Store } from '../../store/store.ts';

export interface VipRoutesDeps {
  store: Pick<Store, 'get' | 'list'>;
  apply: (pid: number, rules: readonly VipRule[], signal?: AbortSignal) => Promise<void>;
  log: Logger;
}

export class VipRoutes {
  private readonly d: VipRoutesDeps;
  /** Container → the rules its namespace has (with the pid they were written for). */
  private readonly applied = new Map<string, string>();

  constructor(d: VipRoutesDeps) {
    this.d = d;
  }

  async route(instances: readonly NetworkResource[], endpointsOf: (network: string) => SwarmEndpoint[], signal?: AbortSignal): Promise<void> {
    const ids = new Set(instances.filter((n) => n.spec.desired !== 'removed').map((n) => n.name));
    const rulesOf = new Map<string, VipRule[]>([...ids].map((id) => [id, vipRules(endpointsOf(id))]));
    const nets = new Map<string, Set<string>>();
    for (const a of this.d.store.list(IpamAllocations)) {
      if (!ids.has(a.spec.networkId)) continue;
      nets.set(a.spec.containerId, (nets.get(a.spec.containerId) ?? new Set<string>()).add(a.spec.networkId));
    }
    const seen = new Set<string>();
    for (const [cid, networks] of nets) {
      const c = this.d.store.get(Containers, cid);
      if (!c || !isRunning(c.status) || !c.status.pid) continue;
      seen.add(cid);
      const rules = [...networks].sort().flatMap((n) => rulesOf.get(n) ?? []);
      const text = `${c.status.pid} ${JSON.stringify(rules)}`;
      if (this.applied.get(cid) === text) continue;
      try {
        await this.d.apply(c.status.pid, rules, signal);
        this.applied.set(cid, text);
      } catch (err) {
        this.d.log.warn({ err, container: cid }, 'virtual IP rules could not be written in a container\'s namespace');
      }
    }
    for (const cid of [...this.applied.keys()]) if (!seen.has(cid)) this.applied.delete(cid);
  }
}
