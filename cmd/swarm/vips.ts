// A service's virtual IPs (endpoint mode `vip`, the default): one address per overlay network it
// joins, taken on a manager from the network's subnet as an endpoint key of its own
// (lib/swarm/endpoints.ts, `Vip`, no node, no lease: it lasts as long as the service), shown as
// Endpoint.VirtualIPs. The nodes answer the service's name with it and send what goes to it to the
// service's tasks (reconcilers/node/overlay.ts). dnsrr: none.
import type { Etcd3 } from 'etcd3';
import { unavailable } from '../../lib/errors.ts';
import { endpointKey, freeAddresses, networkEndpointsPrefix, type SwarmEndpoint } from '../../lib/swarm/endpoints.ts';
import type { SwarmNetworkRecord } from '../../lib/swarm/network.ts';
import type { ServiceSpec } from '../../lib/swarm/service-spec.ts';
import type { EndpointPort, VirtualIP } from '../../api/services/port.ts';
import { ingressPorts } from './ingress-ports.ts';

const TRIES = 5;

/** The networks a spec wants a virtual IP on (none in dnsrr mode). */
export function vipNetworks(spec: ServiceSpec): string[] {
  if (spec.EndpointSpec?.Mode === 'dnsrr') return [];
  return ((spec.TaskTemplate['Networks'] as Array<{ Target: string }> | undefined) ?? []).map((n) => n.Target);
}

/**
 * The service's virtual IPs for `spec`: those it has on networks still wanted kept, one taken on
 * each new network; what it no longer wants is returned to be released (releaseVips) once the
 * service record is written.
 */
export async function takeVips(
  etcd: Etcd3,
  service: { ID: string; Name: string },
  spec: ServiceSpec,
  have: readonly VirtualIP[],
  networks: readonly SwarmNetworkRecord[],
  ports: readonly EndpointPort[] = [],
): Promise<{ vips: VirtualIP[]; drop: VirtualIP[] }> {
  // Ingress-mode ports: a virtual IP on the ingress network too, which carries them (every node publishes them).
  const mesh = ingressPorts(ports).map((p) => ({ Protocol: p.Protocol, ...(p.TargetPort ? { TargetPort: p.TargetPort } : {}), PublishedPort: p.PublishedPort }));
  const ingress = networks.find((n) => n.Ingress);
  const want = [...vipNetworks(spec), ...(mesh.length && ingress ? [ingress.ID] : [])];
  const vips = have.filter((v) => want.includes(v.NetworkID));
  const drop = have.filter((v) => !want.includes(v.NetworkID));
  for (const id of want) {
    if (vips.some((v) => v.NetworkID === id)) continue;
    const net = networks.find((n) => n.ID === id);
    const pool = net?.IPAM.Config[0];
    if (!net || !pool) continue;
    vips.push({ NetworkID: id, Addr: `${await take(etcd, net, service, net.Ingress ? mesh : undefined)}/${pool.Subnet.split('/')[1]}` });
  }
  // The ingress virtual IP says which ports the mesh publishes now.
  const iv = ingress && vips.find((v) => v.NetworkID === ingress.ID);
  if (iv && have.includes(iv)) await etcd.put(endpointKey(ingress.ID, iv.Addr.split('/')[0]!)).value(JSON.stringify(vipRecord(ingress.ID, iv.Addr.split('/')[0]!, service, mesh)));
  return { vips, drop };
}

const vipRecord = (network: string, ip: string, service: { ID: string; Name: string }, ports?: SwarmEndpoint['Ports']): SwarmEndpoint => ({
  Network: network, IP: ip, Mac: '', Node: '', Vtep: '', Owner: service.ID, ServiceID: service.ID, ServiceName: service.Name, Vip: true, ...(ports ? { Ports: ports } : {}),
});

async function take(etcd: Etcd3, net: SwarmNetworkRecord, service: { ID: string; Name: string }, ports?: SwarmEndpoint['Ports']): Promise<string> {
  const pool = net.IPAM.Config[0]!;
  for (let attempt = 0; attempt < TRIES; attempt++) {
    const taken = new Set(Object.keys(await etcd.getAll().prefix(networkEndpointsPrefix(net.ID)).strings()).map((k) => k.slice(k.lastIndexOf('/') + 1)));
    for (const ip of freeAddresses(pool.Subnet, pool.Gateway, taken)) {
      const rec = vipRecord(net.ID, ip, service, ports);
      const r = await etcd.if(endpointKey(net.ID, ip), 'Create', '==', 0).then(etcd.put(endpointKey(net.ID, ip)).value(JSON.stringify(rec))).commit();
      if (r.succeeded) return ip;
    }
  }
  throw unavailable(`could not allocate a virtual IP on network ${net.Name}: no address is free`);
}

/** The keys of virtual IPs given up (the service removed, or no longer on their network). */
export async function releaseVips(etcd: Etcd3, vips: readonly VirtualIP[]): Promise<void> {
  for (const v of vips) await etcd.delete().key(endpointKey(v.NetworkID, v.Addr.split('/')[0]!));
}
