// Network routes. The builtin networks (`bridge` unless --bridge none, `host`, `none`) and
// user-defined bridge networks live in the store; create and remove write desired state and wait
// for the network reconciler. Connecting containers to user-defined networks is not supported
// yet: connect and disconnect answer the reference daemon's errors where the builtin networks
// decide the answer, and a plain 400 where it would need an endpoint of its own.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { compareVersions } from '../app.ts';
import { conflict, EngineError, invalidArgument, permissionDenied, unavailable } from '../../lib/errors.ts';
import { newId, rfc3339Nano } from '../../lib/ids.ts';
import { contains, parseCidr, parseIpv4 } from '../../lib/cidr.ts';
import { contains6, formatIpv6, parseCidr6, parseIpv6 } from '../../lib/cidr6.ts';
import { ipv4Pool, ipv6Pool, NETWORK_KIND, type NetworkSpec, type NetworkStatus } from '../../store/network-types.ts';
import type { ContainerSpec, ContainerStatus, Resource } from '../../store/types.ts';
import { KIND } from '../../store/types.ts';
import { parseFilters } from '../containers/list.ts';
import { parsePruneFilters, pruneMatches } from '../containers/prune-filters.ts';
import { findContainer } from '../containers/routes.ts';
import type { ApiStore } from '../containers/store.ts';
import { apiVersionNumber, qStr, queryOf } from '../images/query.ts';
import { buildNetworkSpec, type NetworkDefaults } from './create.ts';
import { attachedContainers, findNetwork, isPredefinedName, listNetworks, liveNetworks, networkNameOf, networkView, type NetworkResource } from './views.ts';
import { connectEndpoint, disconnectEndpoint, endpointOn, waitEndpoint } from './endpoints.ts';
import { endpointConfigOf } from '../../store/endpoint-types.ts';

export interface NetworkRouteDeps {
  store: ApiStore;
  /** What the daemon's options say about the networks it creates; without it create is refused. */
  defaults?: NetworkDefaults;
  /** How long a handler waits for the network reconciler before answering 503. */
  waitTimeoutMs?: number;
}

type CR = Resource<ContainerSpec, ContainerStatus>;
type Req = FastifyRequest<{ Params: Record<string, string> }>;

export const USER_DEFINED_UNSUPPORTED = 'user-defined networks are not supported by this daemon yet';
const SHARED_NAMESPACE = 'container sharing network namespace with another container or host cannot be connected to any other network';
const HOST_ONLY = 'cannot connect container to host network - container must be created in host network mode';
const PRIVATE_NONE = 'container cannot be connected to multiple networks with one of the networks in private (none) mode';
const HOST_DISCONNECT = 'container cannot be disconnected from host network or connected to host network';

const CreateBody = z
  .object({
    Name: z.string().nullish(),
    Driver: z.string().nullish(),
    Scope: z.string().nullish(),
    Internal: z.boolean().nullish(),
    Attachable: z.boolean().nullish(),
    Ingress: z.boolean().nullish(),
    ConfigOnly: z.boolean().nullish(),
    ConfigFrom: z.object({ Network: z.string().nullish() }).passthrough().nullish(),
    IPAM: z
      .object({
        Driver: z.string().nullish(),
        Options: z.record(z.string(), z.string()).nullish(),
        Config: z
          .array(
            z
              .object({
                Subnet: z.string().nullish(),
                IPRange: z.string().nullish(),
                Gateway: z.string().nullish(),
                AuxiliaryAddresses: z.record(z.string(), z.string()).nullish(),
              })
              .passthrough(),
          )
          .nullish(),
      })
      .passthrough()
      .nullish(),
    EnableIPv4: z.boolean().nullish(),
    EnableIPv6: z.boolean().nullish(),
    CheckDuplicate: z.boolean().nullish(),
    Options: z.record(z.string(), z.string()).nullish(),
    Labels: z.record(z.string(), z.string()).nullish(),
  })
  .passthrough();

const ConnectBody = z
  .object({
    Container: z.string().nullish(),
    EndpointConfig: z.object({}).passthrough().nullish(),
  })
  .passthrough();

const DisconnectBody = z
  .object({
    Container: z.string().nullish(),
    Force: z.boolean().nullish(),
  })
  .passthrough();

/** Top-level keys matched case-insensitively, as Go's JSON decoder does (`name` fills `Name`). */
function canonicalKeys(body: unknown, names: readonly string[]): unknown {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) return body;
  const byLower = new Map(names.map((n) => [n.toLowerCase(), n]));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    const canon = byLower.get(k.toLowerCase()) ?? k;
    if (!(canon in out) || k === canon) out[canon] = v;
  }
  return out;
}

function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const keys = Object.keys((schema as unknown as { shape?: Record<string, unknown> }).shape ?? {});
  const r = schema.safeParse(canonicalKeys(body, keys));
  if (!r.success) {
    const msg = r.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ');
    throw invalidArgument(`invalid JSON: ${msg}`);
  }
  return r.data;
}

/** strconv.ParseBool, which the reference daemon uses for `verbose`. */
function parseGoBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

const isRunning = (c: CR) => c.status.phase === 'running' || c.status.phase === 'paused' || c.status.phase === 'restarting';

export function networkRoutes(deps: NetworkRouteDeps) {
  const { store } = deps;
  const timeoutMs = deps.waitTimeoutMs ?? 60_000;

  /** Refused while containers are attached (as the reference, 403); else torn down, waited for. */
  async function removeNetwork(net: NetworkResource): Promise<void> {
    const attached = Object.entries(attachedContainers(store, net));
    if (attached.length) {
      const eps = attached.map(([id, c]) => `name:${JSON.stringify(c.Name)} id:${JSON.stringify(id.slice(0, 12))}`).join(', ');
      throw permissionDenied(`error while removing network: network ${net.spec.name} has active endpoints (${eps})`);
    }
    store.updateSpec<NetworkSpec, NetworkStatus>(NETWORK_KIND.network, net.name, (sp) => ({ ...sp, desired: 'removed' }));
    const left = await store.waitFor(NETWORK_KIND.network, net.name, (x) => !x, { timeoutMs });
    if (left) throw unavailable(`removal of network ${net.spec.name} did not finish in time`);
  }
  const bridgeEnabled = () => liveNetworks(store).some((n) => n.spec.name === 'bridge');

  function containerFor(ref: string | null | undefined): CR {
    const c = findContainer(store, ref ?? '');
    if (c.spec.desired === 'removed' || c.status.phase === 'removing' || c.status.phase === 'dead') {
      throw conflict(`container ${c.name} is marked for removal and cannot be connected or disconnected to the network`);
    }
    return c;
  }

  /** The user-defined network a container's NetworkMode names, or undefined. */
  function userNetworkOf(c: CR): NetworkResource | undefined {
    const mode = c.spec.hostConfig?.NetworkMode ?? '';
    if (!mode || networkNameOf(mode, bridgeEnabled()) !== null || mode.startsWith('container:')) return undefined;
    try {
      return findNetwork(store, mode);
    } catch {
      return undefined;
    }
  }

  /** Sets (or, with null, drops) the container's EndpointsConfig entry for `net`. */
  function setEndpointConfig(c: CR, net: NetworkResource, ep: Record<string, unknown> | null): void {
    store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, c.name, (sp) => {
      const nc = (sp.networkingConfig ?? {}) as { EndpointsConfig?: Record<string, unknown> | null };
      const eps = { ...(nc.EndpointsConfig ?? {}) };
      for (const k of Object.keys(eps)) if (k === net.spec.name || k === net.spec.id) delete eps[k];
      if (ep) eps[net.spec.name] = ep;
      return { ...sp, networkingConfig: { ...nc, EndpointsConfig: eps } };
    });
  }

  /** Why a container cannot join `net`, in the reference daemon's order of checks; null when it is already on it. */
  function connectRefusal(c: CR, net: NetworkResource): Error | null {
    const mode = c.spec.hostConfig?.NetworkMode ?? '';
    if (mode.startsWith('container:')) return invalidArgument(SHARED_NAMESPACE);
    const current = networkNameOf(mode, bridgeEnabled());
    if (current === net.spec.name) {
      // A running container already has its endpoint there; a stopped one is left as it is.
      return isRunning(c) ? permissionDenied(`endpoint with name ${c.spec.name.replace(/^\//, '')} already exists in network ${net.spec.name}`) : null;
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
      const held = store.get<{ containerId: string }, unknown>(NETWORK_KIND.ipamAllocation, `${net.spec.id}/${key}`);
      if (held && held.spec.containerId !== c.name) throw conflict(`Address already in use: ${ip} on network ${net.spec.name}`);
    }
  }

  return async function register(app: FastifyInstance): Promise<void> {
    const list = async (req: FastifyRequest) => {
      const filters = parseFilters(qStr(queryOf(req), 'filters') ?? '');
      return listNetworks(store, filters, { detailed: apiVersionNumber(req) < 1.28 });
    };
    app.get('/networks', list);
    app.get('/networks/', list);

    app.get('/networks/:id', async (req: Req) => {
      const q = queryOf(req);
      const verbose = qStr(q, 'verbose');
      if (verbose && parseGoBool(verbose) === undefined) {
        throw invalidArgument(`invalid value for verbose: ${verbose}: strconv.ParseBool: parsing "${verbose}": invalid syntax`);
      }
      const net = findNetwork(store, req.params.id, { scope: qStr(q, 'scope') || undefined });
      return networkView(net, attachedContainers(store, net));
    });

    app.delete('/networks/:id', async (req: Req, reply: FastifyReply) => {
      const net = findNetwork(store, req.params.id);
      if (isPredefinedName(net.spec.name)) throw permissionDenied(`${net.spec.name} is a pre-defined network and cannot be removed`);
      await removeNetwork(net);
      reply.code(204).send();
    });

    app.post('/networks/create', async (req: FastifyRequest, reply: FastifyReply) => {
      const body = parseBody(CreateBody, req.body);
      const name = body.Name ?? '';
      // The reference daemon's text, trailing space included.
      if (isPredefinedName(name)) throw permissionDenied(`operation is not permitted on predefined ${name} network `);
      if (!name) throw invalidArgument('network name must not be empty');
      if (liveNetworks(store).some((n) => n.spec.name === name)) throw conflict(`network with name ${name} already exists`);
      if (!deps.defaults) throw invalidArgument(USER_DEFINED_UNSUPPORTED);
      const id = newId();
      const spec = buildNetworkSpec(id, rfc3339Nano(), { ...body, Name: name }, liveNetworks(store), deps.defaults);
      const status: NetworkStatus = { observedGeneration: 0, phase: 'pending', error: '', lastRepair: '', lastRepairAt: '' };
      const created = store.create<NetworkSpec, NetworkStatus>(NETWORK_KIND.network, id, spec, status);
      const r = await store.waitFor<NetworkSpec, NetworkStatus>(NETWORK_KIND.network, id, (x) => !x || (x.status.observedGeneration >= created.generation && x.status.phase !== 'pending'), { timeoutMs });
      if (!r || r.status.phase === 'failed') {
        if (r) store.updateSpec<NetworkSpec, NetworkStatus>(NETWORK_KIND.network, id, (sp) => ({ ...sp, desired: 'removed' }));
        throw new EngineError('Internal', `failed to create network ${name}: ${r?.status.error || 'it was removed'}`);
      }
      if (r.status.phase === 'pending') throw unavailable(`network ${name} was not set up in time; it will be, or removed with docker network rm`);
      reply.code(201).send({ Id: id, Warning: '' });
    });

    app.post('/networks/:id/connect', async (req: Req, reply: FastifyReply) => {
      const body = parseBody(ConnectBody, req.body);
      const c = containerFor(body.Container);
      const net = findNetwork(store, req.params.id);
      if (userNetworkOf(c)?.spec.id === net.spec.id) {
        // Its own user-defined network: a running container has its endpoint already; for a
        // stopped one the endpoint's settings (aliases) are what the next start uses.
        if (isRunning(c)) throw permissionDenied(`endpoint with name ${c.spec.name.replace(/^\//, '')} already exists in network ${net.spec.name}`);
        setEndpointConfig(c, net, body.EndpointConfig ?? {});
        reply.code(200).send();
        return;
      }
      const refusal = connectRefusal(c, net);
      if (refusal) throw refusal;
      // Already on this builtin network (and stopped): nothing to do.
      if (networkNameOf(c.spec.hostConfig?.NetworkMode ?? '', bridgeEnabled()) === net.spec.name) {
        reply.code(200).send();
        return;
      }
      // One more network: an endpoint record, which the endpoint reconciler plugs in.
      if (endpointOn(store, c.name, net.spec.id)) throw permissionDenied(`endpoint with name ${c.spec.name.replace(/^\//, '')} already exists in network ${net.spec.name}`);
      checkStaticAddress(c, net, body.EndpointConfig);
      await connectEndpoint(store, c.name, net, endpointConfigOf(body.EndpointConfig), timeoutMs);
      await waitEndpoint(store, c.name, net, true, timeoutMs);
      reply.code(200).send();
    });

    app.post('/networks/:id/disconnect', async (req: Req, reply: FastifyReply) => {
      const body = parseBody(DisconnectBody, req.body);
      const c = containerFor(body.Container);
      const net = findNetwork(store, req.params.id);
      if (userNetworkOf(c)?.spec.id === net.spec.id) {
        if (isRunning(c)) throw invalidArgument(`disconnecting a running container from ${net.spec.name} is not supported by this daemon yet`);
        // A stopped container's endpoint settings go; until a container can be on several
        // networks, its NetworkMode network is still the one it joins at start.
        setEndpointConfig(c, net, null);
        reply.code(200).send();
        return;
      }
      const extra = endpointOn(store, c.name, net.spec.id);
      if (extra && networkNameOf(c.spec.hostConfig?.NetworkMode ?? '', bridgeEnabled()) !== net.spec.name) {
        disconnectEndpoint(store, extra);
        await waitEndpoint(store, c.name, net, false, timeoutMs);
        reply.code(200).send();
        return;
      }
      const mode = c.spec.hostConfig?.NetworkMode ?? '';
      const current = networkNameOf(mode, bridgeEnabled());
      if (current !== net.spec.name) throw invalidArgument(`container ${c.name} is not connected to network ${net.spec.name}`);
      if (current === 'host') throw invalidArgument(HOST_DISCONNECT);
      // A container's only network is its builtin one; taking it away needs what user-defined networks need.
      throw invalidArgument(`disconnecting a container from the ${net.spec.name} network is not supported by this daemon yet`);
    });

    app.post('/networks/prune', async (req: FastifyRequest) => {
      if (compareVersions(req.apiVersion || '1.47', '1.25') < 0) {
        const path = (req.originalUrl ?? req.url).split('?')[0];
        throw invalidArgument(`${req.method} ${path} requires minimum API version 1.25`);
      }
      const filters = parsePruneFilters(qStr(queryOf(req), 'filters'));
      const unused = liveNetworks(store).filter(
        (n) => !isPredefinedName(n.spec.name) && Object.keys(attachedContainers(store, n)).length === 0 && pruneMatches(filters, n.spec.labels ?? {}, Date.parse(n.spec.created)),
      );
      const deleted: string[] = [];
      for (const n of unused) {
        try {
          await removeNetwork(n);
          deleted.push(n.spec.name);
        } catch (err) {
          req.log.warn({ err, network: n.spec.name }, 'prune: network not removed');
        }
      }
      return { NetworksDeleted: deleted.length ? deleted : null };
    });
  };
}
