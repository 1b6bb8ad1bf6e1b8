// A service's published ports as its Endpoint shows them: an ingress-mode port without a published
// port gets the first free of the dynamic range (30000–32767, as swarmkit's allocator), kept across
// updates; an ingress port another service publishes is refused in the reference's words. The
// routing mesh publishes these on every node (reconcilers/node/overlay-mesh.ts).
import { invalidArgument, unavailable } from '../../lib/errors.ts';
import type { ServiceSpec } from '../../lib/swarm/service-spec.ts';
import type { EndpointPort, ServiceRecord } from '../../api/services/port.ts';

export const DYNAMIC_FIRST = 30000;
export const DYNAMIC_LAST = 32767;

const rpc = (msg: string) => `rpc error: code = InvalidArgument desc = ${msg}`;

/** The ports of `spec` with the published ports the mesh gives them (`have`: the service's so far). */
export function endpointPorts(spec: ServiceSpec, others: readonly ServiceRecord[], have: readonly EndpointPort[] = []): EndpointPort[] {
  const ports = spec.EndpointSpec?.Ports ?? [];
  const used = new Map<string, ServiceRecord>();
  for (const s of others) for (const p of s.EndpointPorts ?? []) if (p.PublishMode === 'ingress' && p.PublishedPort) used.set(`${p.PublishedPort}/${p.Protocol}`, s);
  const mine = new Set(ports.filter((p) => p.PublishMode === 'ingress' && p.PublishedPort).map((p) => `${p.PublishedPort}/${p.Protocol ?? 'tcp'}`));
  const out: EndpointPort[] = [];
  for (const p of ports) {
    const proto = p.Protocol ?? 'tcp';
    let published = p.PublishedPort;
    if (p.PublishMode === 'ingress') {
      if (published) {
        const other = used.get(`${published}/${proto}`);
        if (other) throw invalidArgument(rpc(`port '${published}' is already in use by service '${other.Spec.Name}' (${other.ID}) as an ingress port`));
      } else {
        const kept = have.find((h) => h.PublishMode === 'ingress' && h.TargetPort === p.TargetPort && h.Protocol === proto && h.PublishedPort && !mine.has(`${h.PublishedPort}/${proto}`));
        published = kept?.PublishedPort ?? firstFree(proto, used, mine, out);
      }
    }
    out.push({ Protocol: proto, ...(p.TargetPort ? { TargetPort: p.TargetPort } : {}), ...(published ? { PublishedPort: published } : {}), PublishMode: p.PublishMode ?? 'ingress' });
  }
  return out;
}

function firstFree(proto: string, used: ReadonlyMap<string, unknown>, mine: ReadonlySet<string>, taken: readonly EndpointPort[]): number {
  for (let port = DYNAMIC_FIRST; port <= DYNAMIC_LAST; port++) {
    const k = `${port}/${proto}`;
    if (!used.has(k) && !mine.has(k) && !taken.some((t) => t.PublishedPort === port && t.Protocol === proto)) return port;
  }
  throw unavailable('no published port is free in the dynamic range 30000-32767');
}

/** The ingress-mode ports (what the routing mesh publishes). */
export const ingressPorts = (ports: readonly EndpointPort[] | undefined) => (ports ?? []).filter((p) => p.PublishMode === 'ingress' && p.PublishedPort);
