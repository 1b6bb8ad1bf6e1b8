// Network routes. The builtin networks (`bridge` unless --bridge none, `host`, `none`) and
// user-defined bridge networks live in the store; create and remove write desired state and wait
// for the network reconciler. Connect and disconnect are connect.ts.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { compareVersions } from '../app.ts';
import { conflict, EngineError, invalidArgument, permissionDenied, unavailable } from '../../lib/errors.ts';
import { newId, rfc3339Nano } from '../../lib/ids.ts';
import { liveNetworksNamed, NETWORK_KIND, type NetworkSpec, type NetworkStatus } from '../../store/network-types.ts';
import { parseFilters } from '../containers/list.ts';
import { parsePruneFilters, pruneMatches } from '../containers/prune-filters.ts';
import type { ApiStore } from '../containers/store.ts';
import { apiVersionNumber, qStr, queryOf } from '../images/query.ts';
import { buildNetworkSpec, type NetworkDefaults } from './create.ts';
import { attachedContainers, findNetwork, isPredefinedName, listNetworks, liveNetworks, networkView, type NetworkResource } from './views.ts';
import { connectHandlers } from './connect.ts';
import { parseBody } from './body.ts';

export interface NetworkRouteDeps {
  store: ApiStore;
  /** What the daemon's options say about the networks it creates; without it create is refused. */
  defaults?: NetworkDefaults;
  /** How long a handler waits for the network reconciler before answering 503. */
  waitTimeoutMs?: number;
}

type Req = FastifyRequest<{ Params: Record<string, string> }>;

export const USER_DEFINED_UNSUPPORTED = 'user-defined networks are not supported by this daemon yet';

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

/** strconv.ParseBool, which the reference daemon uses for `verbose`. */
function parseGoBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}


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
  const bridgeEnabled = () => liveNetworksNamed(store, 'bridge').length > 0;

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
      if (liveNetworksNamed(store, name).length) throw conflict(`network with name ${name} already exists`);
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

    const { connect, disconnect } = connectHandlers(store, timeoutMs);
    app.post('/networks/:id/connect', connect);
    app.post('/networks/:id/disconnect', disconnect);

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
