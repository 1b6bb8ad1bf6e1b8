// `docker run --network OV` (and a create naming OV in its EndpointsConfig) where OV is an
// attachable overlay network of the swarm: before the create is admitted, the node makes its
// instance of OV (and waits for it to be ready), takes an address of OV for the cluster (the one
// asked with --ip, or a free one) and writes it into the create's EndpointsConfig, so the container
// joins OV as a task does. A network that is not attachable is refused as the reference refuses it;
// one this node has as a network of its own, or that is no swarm network, is left to the create.
import type { Etcd3 } from 'etcd3';
import { conflict, permissionDenied, unavailable } from '../../lib/errors.ts';
import { endpointKey, type SwarmEndpoint } from '../../lib/swarm/endpoints.ts';
import { NETWORKS_PREFIX, type SwarmNetworkRecord } from '../../lib/swarm/network.ts';
import { findNetwork, Networks, type NetworkResource } from '../../store/kinds/network.ts';
import type { Store } from '../../store/store.ts';

const BUILTIN = new Set(['', 'default', 'bridge', 'host', 'none']);
const READY_WAIT_MS = 20_000;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

export interface AttachDeps {
  store: Pick<Store, 'get' | 'list' | 'byIndex' | 'waitFor'>;
  instance: (n: SwarmNetworkRecord) => NetworkResource;
  /** A free address taken (./overlay.ts). */
  take: (client: Etcd3, net: SwarmNetworkRecord, who: Pick<SwarmEndpoint, 'Owner'>) => Promise<{ ip: string }>;
  /** That address taken, if nobody has it. */
  takeThis: (client: Etcd3, net: SwarmNetworkRecord, ip: string, who: Pick<SwarmEndpoint, 'Owner'>) => Promise<boolean>;
  sleep?: (ms: number) => Promise<void>;
}

/** The networks a create names: its NetworkMode and its EndpointsConfig keys. */
function namedNetworks(body: Obj): string[] {
  const mode = String(obj(body['HostConfig'])['NetworkMode'] ?? '');
  const eps = Object.keys(obj(obj(body['NetworkingConfig'])['EndpointsConfig']));
  return [...new Set([mode, ...eps])].filter((n) => !BUILTIN.has(n) && !n.startsWith('container:'));
}

function findSwarmNetwork(all: readonly SwarmNetworkRecord[], ref: string): SwarmNetworkRecord | undefined {
  const prefixed = all.filter((n) => n.ID.startsWith(ref));
  return all.find((n) => n.ID === ref) ?? all.find((n) => n.Name === ref) ?? (prefixed.length === 1 ? prefixed[0] : undefined);
}

/** The create's body with an address of each attachable overlay it names (unchanged when it names none). */
export async function attachOverlays(client: Etcd3, body: unknown, d: AttachDeps): Promise<unknown> {
  const b = obj(body);
  const refs = namedNetworks(b).filter((ref) => {
    try {
      return findNetwork(d.store, ref).spec.scope === 'swarm';
    } catch {
      return true;
    }
  });
  if (!refs.length) return body;
  const all = Object.values(await client.getAll().prefix(NETWORKS_PREFIX).strings()).map((v) => JSON.parse(v) as SwarmNetworkRecord);
  const eps: Obj = { ...obj(obj(b['NetworkingConfig'])['EndpointsConfig']) };
  for (const ref of refs) {
    const net = findSwarmNetwork(all, ref);
    if (!net) continue;
    if (!net.Attachable || net.Ingress) throw permissionDenied(`Could not attach to network ${ref}: rpc error: code = PermissionDenied desc = network ${ref} not manually attachable`);
    await ready(d, net);
    const asked = obj(eps[ref]);
    const wanted = String(obj(asked['IPAMConfig'])['IPv4Address'] ?? '');
    const who = { Owner: `attach:${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}` };
    let ip = wanted;
    if (wanted) {
      if (!(await d.takeThis(client, net, wanted, who))) throw conflict(`Address already in use: ${wanted} on network ${net.Name} (${endpointKey(net.ID, wanted)})`);
    } else {
      ip = (await d.take(client, net, who)).ip;
    }
    eps[ref] = { ...asked, IPAMConfig: { ...obj(asked['IPAMConfig']), IPv4Address: ip } };
  }
  return { ...b, NetworkingConfig: { ...obj(b['NetworkingConfig']), EndpointsConfig: eps } };
}

/**
 * This node's instance of the network, made if it has none, ready: the store is waited on (the
 * network reconciler's status), not polled; one being removed is waited out and made again.
 */
async function ready(d: AttachDeps, net: SwarmNetworkRecord): Promise<void> {
  const sleep = d.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const until = Date.now() + READY_WAIT_MS;
  for (;;) {
    const inst = d.instance(net);
    const left = until - Date.now();
    if (left <= 0) throw unavailable(`network ${net.Name} was not set up on this node in time`);
    const r = await d.store.waitFor(Networks, inst.name, (x) => !x || x.spec.desired === 'removed' || x.status.phase === 'ready' || x.status.phase === 'failed', { timeoutMs: left });
    if (r && r.spec.desired !== 'removed' && r.status.phase === 'ready') return;
    if (r && r.spec.desired !== 'removed' && r.status.phase === 'failed') throw unavailable(`network ${net.Name} could not be set up on this node: ${r.status.error}`);
    // Gone or going (the last user left meanwhile): made again once its removal is through.
    if (r?.spec.desired === 'removed') await sleep(100);
  }
}
