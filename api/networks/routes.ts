// Network routes. The builtin networks (`bridge` unless --bridge none, `host`, `none`) and
// user-defined bridge networks live in the store; create and remove write desired state and wait
// for the network reconciler. Connect and disconnect are connect.ts.
import * as z from 'zod';
import type { App } from '../app.ts';
import { EngineError, permissionDenied, unavailable } from '../../lib/errors.ts';
import { goBool, goBoolSyntax } from '../../lib/units.ts';
import { Networks, findNetwork, liveNetworks } from '../../store/kinds/network.ts';
import { parseFilters, pruneFilters, pruneMatches } from '../filters.ts';
import type { ApiStore } from '../containers/store.ts';
import { apiVersion, filtersQuery, first, idParams, q, requireApiVersion } from '../request.ts';
import { gone, waitUntil, writeAndWait } from '../write-and-wait.ts';
import type { NetworkDefaults } from '../../admission/networks/network-spec.ts';
import { admitNetwork, NetworkCreateBody } from '../../admission/networks/admit.ts';
import { attachedContainers, checkNetworkRemovable, isPredefinedName, listNetworks, networkView, type NetworkResource } from './views.ts';
import { connectRoutes } from './connect.ts';

export interface NetworkRouteDeps {
  store: ApiStore;
  /** What the daemon's options say about the networks it creates; without it create is refused. */
  defaults?: NetworkDefaults;
  /** How long a handler waits for the network reconciler before answering 503. */
  waitTimeoutMs?: number;
}

export { USER_DEFINED_UNSUPPORTED } from '../../admission/networks/admit.ts';

/** strconv.ParseBool, which the reference daemon uses for `verbose`: the one flag it refuses a bad value of. */
const verboseFlag = z.preprocess(first, z.string().optional()).transform((v, ctx) => {
  if (!v) return false;
  const b = goBool(v);
  if (b === undefined) ctx.addIssue({ code: 'custom', message: `invalid value for verbose: ${v}: ${goBoolSyntax(v)}`, input: v });
  return b ?? false;
});


export function networkRoutes(deps: NetworkRouteDeps) {
  const { store } = deps;
  const timeoutMs = deps.waitTimeoutMs ?? 60_000;

  /** Refused while containers are attached (as the reference, 403); else torn down, waited for. */
  async function removeNetwork(net: NetworkResource): Promise<void> {
    checkNetworkRemovable(store, net);
    await writeAndWait(store, Networks, net.name, (sp) => ({ ...sp, desired: 'removed' }), gone, {
      timeoutMs,
      timedOut: () => unavailable(`removal of network ${net.spec.name} did not finish in time`),
    });
  }

  return async function register(app: App): Promise<void> {
    for (const url of ['/networks', '/networks/']) {
      app.get(url, { schema: { querystring: filtersQuery } }, async (req) => {
        return listNetworks(store, req.query.filters, { detailed: apiVersion(req) < 1.28 });
      });
    }

    app.get('/networks/:id', { schema: { params: idParams, querystring: z.looseObject({ verbose: verboseFlag, scope: q.str() }) } }, async (req) => {
      const net = findNetwork(store, req.params.id, { scope: req.query.scope || undefined });
      return networkView(net, attachedContainers(store, net));
    });

    app.delete('/networks/:id', { schema: { params: idParams } }, async (req, reply) => {
      const net = findNetwork(store, req.params.id);
      if (isPredefinedName(net.spec.name)) throw permissionDenied(`${net.spec.name} is a pre-defined network and cannot be removed`);
      await removeNetwork(net);
      reply.code(204).send();
    });

    app.post('/networks/create', { schema: { body: NetworkCreateBody } }, async (req, reply) => {
      const created = admitNetwork({ store, defaults: deps.defaults }, req.body);
      const id = created.name;
      const name = created.spec.name;
      const r = await waitUntil(store, Networks, id, (x) => x.status.observedGeneration >= created.generation && x.status.phase !== 'pending', {
        timeoutMs,
        timedOut: () => unavailable(`network ${name} was not set up in time; it will be, or removed with docker network rm`),
      });
      if (!r || r.status.phase === 'failed') {
        if (r) store.updateSpec(Networks, id, (sp) => ({ ...sp, desired: 'removed' }));
        throw new EngineError('Internal', `failed to create network ${name}: ${r?.status.error || 'it was removed'}`);
      }
      reply.code(201).send({ Id: id, Warning: '' });
    });

    await connectRoutes(store, timeoutMs)(app);

    app.post('/networks/prune', { schema: { querystring: filtersQuery } }, async (req) => {
      requireApiVersion(req, '1.25');
      const filters = pruneFilters(parseFilters(req.query.filters));
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
