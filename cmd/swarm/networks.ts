// A swarm's overlay networks in its etcd (managers only; lib/swarm/network.ts has the keys and the
// shape): created with their subnet (the one asked for, else the next of the swarm's
// DefaultAddrPool) and VXLAN id taken once for the cluster in the same etcd transaction as the
// network and its name; found by full id, full name or id prefix (never a name prefix, as the
// reference); removed with what they took unless a service uses them. The data path (VXLAN devices,
// the routing mesh) is (8 of 21)'s next part: until then a task cannot join one, and an encrypted
// overlay is refused, never accepted and ignored.
import type { Etcd3 } from 'etcd3';
import { conflict, failedPrecondition, invalidArgument, notFound, notImplemented, permissionDenied } from '../../lib/errors.ts';
import { parseCidr } from '../../lib/cidr.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { newSwarmId } from '../../lib/swarm/ids.ts';
import { lookup } from '../../lib/swarm/lookup.ts';
import { gatewayOf, NETWORKS_PREFIX, networkKey, networkNameKey, nextSubnet, nextVni, subnetKey, vniKey, type SwarmNetworkRecord } from '../../lib/swarm/network.ts';
import type { NetworkCreateInput } from '../../admission/networks/admit.ts';
import type { SwarmNetworksPort } from '../../api/networks/swarm-port.ts';

const PREDEFINED = new Set(['bridge', 'host', 'none']);
const TRIES = 5;

export interface SwarmNetworksDeps {
  etcd: () => Etcd3;
  /** The swarm's DefaultAddrPool and SubnetSize. */
  pool: () => { defaultAddrPool: string[]; subnetSize: number };
  /** The networks the swarm's services use (ids), each with the service that uses it. */
  usedBy: () => Promise<Array<{ network: string; service: string }>>;
}

export class SwarmNetworks implements SwarmNetworksPort {
  private readonly d: SwarmNetworksDeps;

  constructor(d: SwarmNetworksDeps) {
    this.d = d;
  }

  async list(): Promise<SwarmNetworkRecord[]> {
    const r = await this.d.etcd().getAll().prefix(NETWORKS_PREFIX).strings();
    return Object.values(r).map((v) => JSON.parse(v) as SwarmNetworkRecord);
  }

  async find(ref: string): Promise<SwarmNetworkRecord> {
    return lookup(await this.list(), ref, { id: (n) => n.ID, names: [(n) => n.Name], notFound: (r) => notFound(`network ${r} not found`) });
  }

  /**
   * The swarm's `ingress` network, made with the swarm as the reference makes it (the first subnet
   * of the pool, the first VXLAN id); the routing mesh that uses it is (8 of 21)'s next part.
   */
  async createIngress(pool: { defaultAddrPool: string[]; subnetSize: number }): Promise<string> {
    return this.create({ Name: 'ingress', Driver: 'overlay', Ingress: true }, pool);
  }

  async create(body: NetworkCreateInput, poolGiven?: { defaultAddrPool: string[]; subnetSize: number }): Promise<string> {
    const name = body.Name ?? '';
    if (PREDEFINED.has(name)) throw permissionDenied(`operation is not permitted on predefined ${name} network `);
    if (!name) throw invalidArgument('network name must not be empty');
    if (body.Scope === 'local') throw permissionDenied('cannot downgrade network scope for overlay networks');
    const options = body.Options ?? {};
    if ('encrypted' in options) throw notImplemented('encrypted overlay networks (IPsec) are not supported yet: create the network without --opt encrypted');
    if (body.EnableIPv6) throw notImplemented('IPv6 overlay networks are not supported yet');
    const ipamDriver = body.IPAM?.Driver || 'default';
    if (ipamDriver !== 'default') throw notFound(`plugin "${ipamDriver}" not found`);
    const asked = (body.IPAM?.Config ?? []).map((c) => {
      if (!c.Subnet) throw invalidArgument('a subnet is needed for each IPAM config of an overlay network');
      try {
        const cidr = parseCidr(c.Subnet);
        return { Subnet: `${c.Subnet.split('/')[0]}/${cidr.prefixLen}`, Gateway: c.Gateway || gatewayOf(c.Subnet) };
      } catch {
        throw invalidArgument(`invalid CIDR address: ${c.Subnet}`);
      }
    });
    const etcd = this.d.etcd();
    for (let attempt = 0; attempt < TRIES; attempt++) {
      const all = await this.list();
      if (all.some((n) => n.Name === name)) throw conflict(`network with name ${name} already exists`);
      const taken = all.flatMap((n) => n.IPAM.Config.map((c) => c.Subnet));
      let config = asked;
      if (!config.length) {
        const pool = poolGiven ?? this.d.pool();
        const subnet = nextSubnet(pool.defaultAddrPool.length ? pool.defaultAddrPool : ['10.0.0.0/8'], pool.subnetSize || 24, taken);
        if (!subnet) throw permissionDenied('could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network');
        config = [{ Subnet: subnet, Gateway: gatewayOf(subnet) }];
      }
      const rec: SwarmNetworkRecord = {
        ID: newSwarmId(),
        Name: name,
        Created: rfc3339Nano(),
        ...(body.Labels && Object.keys(body.Labels).length ? { Labels: body.Labels } : {}),
        Options: options,
        Attachable: !!body.Attachable,
        Internal: !!body.Internal,
        EnableIPv6: false,
        Ingress: !!body.Ingress,
        IPAM: { Driver: 'default', Options: body.IPAM?.Options ?? null, Config: config },
        VNI: nextVni(all.map((n) => n.VNI)),
      };
      let txn = etcd.if(networkNameKey(name), 'Create', '==', 0).and(vniKey(rec.VNI), 'Create', '==', 0);
      for (const c of config) txn = txn.and(subnetKey(c.Subnet), 'Create', '==', 0);
      const r = await txn
        .then(
          etcd.put(networkKey(rec.ID)).value(JSON.stringify(rec)),
          etcd.put(networkNameKey(name)).value(rec.ID),
          etcd.put(vniKey(rec.VNI)).value(rec.ID),
          ...config.map((c) => etcd.put(subnetKey(c.Subnet)).value(rec.ID)),
        )
        .commit();
      if (r.succeeded) return rec.ID;
      if (asked.length && (await Promise.all(asked.map((c) => etcd.get(subnetKey(c.Subnet)).string()))).some(Boolean)) {
        throw permissionDenied('Pool overlaps with other one on this address space');
      }
    }
    throw conflict(`network ${name} could not be allocated: the swarm's networks changed meanwhile, try again`);
  }

  async remove(ref: string): Promise<void> {
    const n = await this.find(ref);
    const user = (await this.d.usedBy()).find((u) => u.network === n.ID);
    if (user) throw failedPrecondition(`rpc error: code = FailedPrecondition desc = network ${n.ID} is in use by service ${user.service}`);
    const etcd = this.d.etcd();
    await etcd
      .if(networkKey(n.ID), 'Create', '!=', 0)
      .then(
        etcd.delete().key(networkKey(n.ID)),
        etcd.delete().key(networkNameKey(n.Name)),
        etcd.delete().key(vniKey(n.VNI)),
        ...n.IPAM.Config.map((c) => etcd.delete().key(subnetKey(c.Subnet))),
      )
      .commit();
  }
}
