// POST /networks/{id}/connect and /disconnect. Every network a container is on is an endpoint
// record (store/kinds/endpoint.ts): connect writes one, disconnect marks it removed, and the
// handlers answer once the endpoint reconciler (and, for the NetworkMode network, the container
// reconciler) has done it while the container runs. The reference daemon's refusals come first,
// in its order of checks.
import * as z from 'zod';
import { conflict, invalidArgument, permissionDenied, unavailable } from '../../lib/errors.ts';
import { contains, parseCidr, parseIpv4 } from '../../lib/cidr.ts';
import { contains6, formatIpv6, parseCidr6, parseIpv6 } from '../../lib/cidr6.ts';
import { endpointConfigOf, Endpoints } from '../../store/kinds/endpoint.ts';
import { ipv4Pool, ipv6Pool, isBridged, liveNetworksNamed, findNetwork } from '../../store/kinds/network.ts';
import { isRunning, Containers, type ContainerResource as CR, findContainer } from '../../store/kinds/container.ts';
import type { ApiStore } from '../containers/store.ts';
import type { App } from '../app.ts';
import { idParams } from '../request.ts';
import { goStructBody } from '../../lib/go-json.ts';
import { connectEndpoint, disconnectEndpoint, endpointOn, waitEndpoint } from './endpoints.ts';
import { isPredefinedName, networkNameOf, type NetworkResource } from './views.ts';
import { IpamAllocations } from '../../store/kinds/ipam-allocation.ts';
import { waitUntil } from '../write-and-wait.ts';


const SHARED_NAMESPACE = 'container sharing network namespace with another container or host cannot be connected to any other network';
const HOST_ONLY = 'cannot connect container to host network - container must be created in host network mode';
const PRIVATE_NONE = 'container cannot be connected to multiple networks with one of the networks in private (none) mode';
const HOST_DISCONNECT = 'container cannot be disconnected from host network or connected to host network';

const ConnectBody = goStructBody(z
  .object({
    Container: z.string().nullish(),
    EndpointConfig: z.object({}).passthrough().nullish(),
  })
  .passthrough());

const DisconnectBody = goStructBody(z
  .object({
    Container: z.string().nullish(),
    Force: z.boolean().nullish(),
  })
  .passthrough());

export function connectRoutes(store: ApiStore, timeoutMs: number) {
  const bridgeEnabled = () => liveNetworksNamed(store, 'bridge').length > 0;
  const exists = (c: CR, net: NetworkResource) => permissionDenied(`endpoint with name ${c.spec.name.replace(/^\//, '')} already exists in network ${net.spec.name}`);

  function containerFor(ref: string | null | undefined): CR {
    const c = findContainer(store, ref ?? '');
    if (c.spec.desired === 'removed' || c.status.phase === 'removing' || c.status.phase === 'dead') {
      throw conflict(`container ${c.name} is marked for removal and cannot be connected or disconnected to the network`);
    }
    return c;
  }

  /** The bridge network the container's NetworkMode names (a user-defined one or the default bridge), if the daemon has it. */
  function primaryNetworkOf(c: CR): NetworkResource | undefined {
    const mode = c.spec.hostConfig?.NetworkMode ?? '';
    if (mode === 'host' || mode === 'none' || mode.startsWith('container:')) return undefined;
    try {
      const net = findNetwork(store, mode === '' || mode === 'default' ? 'bridge' : mode);
      return isBridged(net.spec) ? net : undefined;
    } catch {
      return undefined;
    }
  }

  /** Why a container cannot join `net`, in the reference daemon's order of checks; null when it is already on it. */
  function connectRefusal(c: CR, net: NetworkResource): Error | null {
    const mode = c.spec.hostConfig?.NetworkMode ?? '';
    if (mode.startsWith('container:')) return invalidArgument(SHARED_NAMESPACE);
    const current = networkNameOf(mode, bridgeEnabled());
    if (current === net.spec.name) {
      // A running container already has its endpoint there; a stopped one is left as it is.
      return isRunning(c.status) ? exists(c, net) : null;
    }
    if (net.spec.driver === 'host') return invalidArgument(HOST_ONLY);
    if (current === 'host') return invalidArgument(SHARED_NAMESPACE);
    if (current === 'none' || net.spec.name === 'none') return invalidArgument(PRIVATE_NONE);
    return null;
  }

  /**
   * A static address (--ip) checked before anything is written: on a user-defined network, in its
   * subnet, not held by another container (the reconciler would otherwise retry it forever).
   */
  function checkStaticAddress(c: CR, net: NetworkResource, ep: Record<string, unknown> | null | undefined): void {
    const ipam = ep?.IPAMConfig as { IPv4Address?: unknown; IPv6Address?: unknown } | null | undefined;
    for (const family of [4, 6] as const) {
      const field = family === 4 ? 'IPv4Address' : 'IPv6Address';
      const ip = ipam?.[field];
      if (ip === undefined || ip === null || ip === '') continue;
      if (typeof ip !== 'string') throw invalidArgument(`invalid JSON: EndpointConfig.IPAMConfig.${field}: expected a string`);
      if (isPredefinedName(net.spec.name)) throw invalidArgument('user specified IP address is supported on user defined networks only');
      const pool = family === 4 ? ipv4Pool(net.spec) : ipv6Pool(net.spec);
      const inPool = pool && (family === 4 ? contains(parseCidr(pool.Subnet), parseIpv4(ip)) : contains6(parseCidr6(pool.Subnet), parseIpv6(ip)));
      if (!inPool) throw invalidArgument(`invalid address ${ip}: it is not in subnet ${pool?.Subnet ?? '(none)'}`);
      const key = family === 4 ? ip : formatIpv6(parseIpv6(ip));
      const held = store.get(IpamAllocations, `${net.spec.id}/${key}`);
      if (held && held.spec.containerId !== c.name) throw conflict(`Address already in use: ${ip} on network ${net.spec.name}`);
    }
  }

  /** A new endpoint record, answered once it is plugged into the running container (or at once when stopped). */
  async function join(c: CR, net: NetworkResource, asked: Record<string, unknown> | null | undefined, primary: boolean): Promise<void> {
    checkStaticAddress(c, net, asked);
    await connectEndpoint(store, c.name, net, endpointConfigOf(asked), timeoutMs, primary);
    await waitEndpoint(store, c.name, net, true, timeoutMs);
  }

  /** The running container has let go of its NetworkMode network (ports, link rules, status.endpoint). */
  async function primaryLeft(c: CR, net: NetworkResource): Promise<void> {
    const gone = (x: CR | undefined) => !x || !isRunning(x.status) || x.status.endpoint?.NetworkID !== net.spec.id;
    const timedOut = () => unavailable(`container ${c.name} was not disconnected from network ${net.spec.name} in time`);
    await waitUntil(store, Containers, c.name, gone, { timeoutMs, timedOut });
  }

  async function connect(id: string, body: z.output<typeof ConnectBody>): Promise<void> {
    const c = containerFor(body.Container);
    const net = findNetwork(store, id);
    if (primaryNetworkOf(c)?.spec.id === net.spec.id) {
      const own = endpointOn(store, c.name, net.spec.id);
      if (own) {
        // A running container has its endpoint there already; for a stopped one the endpoint's
        // settings (aliases) are what the next start uses.
        if (isRunning(c.status)) throw exists(c, net);
        store.updateSpec(Endpoints, own.name, (sp) => ({ ...sp, config: endpointConfigOf(body.EndpointConfig) }));
      } else {
        // Back on its NetworkMode network after a disconnect.
        await join(c, net, body.EndpointConfig, true);
      }
      return;
    }
    const refusal = connectRefusal(c, net);
    if (refusal) throw refusal;
    // Already on this builtin network (and stopped): nothing to do.
    if (networkNameOf(c.spec.hostConfig?.NetworkMode ?? '', bridgeEnabled()) === net.spec.name) return;
    // One more network: an endpoint record, which the endpoint reconciler plugs in.
    if (endpointOn(store, c.name, net.spec.id)) throw exists(c, net);
    await join(c, net, body.EndpointConfig, false);
  }

  async function disconnect(id: string, body: z.output<typeof DisconnectBody>): Promise<void> {
    const c = containerFor(body.Container);
    const net = findNetwork(store, id);
    const rec = endpointOn(store, c.name, net.spec.id);
    if (rec) {
      // Running: unplugged (the NetworkMode network's published ports and link rules go with it).
      disconnectEndpoint(store, rec);
      await waitEndpoint(store, c.name, net, false, timeoutMs);
      if (rec.spec.primary) await primaryLeft(c, net);
      return;
    }
    const mode = c.spec.hostConfig?.NetworkMode ?? '';
    const current = primaryNetworkOf(c) ? null : networkNameOf(mode, bridgeEnabled());
    if (current !== net.spec.name) throw invalidArgument(`container ${c.name} is not connected to network ${net.spec.name}`);
    if (current === 'host') throw invalidArgument(HOST_DISCONNECT);
    // The none network, or a NetworkMode network the container has no record of.
    throw invalidArgument(`disconnecting a container from the ${net.spec.name} network is not supported by this daemon yet`);
  }

  return async function register(app: App): Promise<void> {
    app.post('/networks/:id/connect', { schema: { params: idParams, body: ConnectBody } }, async (req, reply) => {
      await connect(req.params.id, req.body);
      reply.code(200).send();
    });
    app.post('/networks/:id/disconnect', { schema: { params: idParams, body: DisconnectBody } }, async (req, reply) => {
      await disconnect(req.params.id, req.body);
      reply.code(200).send();
    });
  };
}
