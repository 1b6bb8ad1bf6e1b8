// Network routes. The builtin networks (`bridge` unless --bridge none, `host`, `none`) and
// user-defined bridge networks live in the store; create and remove write desired state and wait
// for the network reconciler. Connect and disconnect are connect.ts. On a swarm manager, the
// swarm's overlay networks (driver overlay, scope swarm) are listed, inspected, created and
// removed through the swarm (./swarm-port.ts; this node's own networks answer first).
import * as z from 'zod';
import type { App } from '../app.ts';
import { conflict, EngineError, permissionDenied, unavailable } from '../../lib/errors.ts';
import { swarmNetworkView, type SwarmNetworkRecord } from '../../lib/swarm/network.ts';
import type { SwarmNetworksPort } from './swarm-port.ts';
import { goBool, goBoolSyntax } from '../../lib/units.ts';
import { Networks, findNetwork, liveNetworks, liveNetworksNamed } from '../../store/kinds/network.ts';
import { parseFilters, pruneFilters, pruneMatches } from '../filters.ts';
import type { ApiStore } from '../containers/store.ts';
import { apiVersion, filtersQuery, first, idParams, q, requireApiVersion } from '../request.ts';
import { gone, waitUntil, writeAndWait } from '../write-and-wait.ts';
import type { NetworkDefaults } from '../../admission/networks/network-spec.ts';
import { admitNetwork, NetworkCreateBody } from '../../admission/networks/admit.ts';
import { attachedContainers, checkNetworkRemovable, isPredefinedName, listNetworks, networkMatcher, networkView, type NetworkResource } from './views.ts';
import { connectRoutes } from './connect.ts';

export interface NetworkRouteDeps {
  store: ApiStore;
  /** What the daemon's options say about the networks it creates; without it create is refused. */
  defaults?: NetworkDefaults;
  /** How long a handler waits for the network reconciler before answering 503. */
  waitTimeoutMs?: number;
  /** The swarm's overlay networks (throws the reference's 503 unless this node is a manager). */
  swarm?: () => SwarmNetworksPort;
}

export { USER_DEFINED_UNSUPPORTED } from '../../admission/networks/admit.ts';

const NOT_A_SWARM_MANAGER = 'This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.';

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

  /** The swarm's networks, when this node is a manager that can answer (undefined otherwise). */
  function swarmPort(): SwarmNetworksPort | undefined {
    try {
      return deps.swarm?.();
    } catch {
      return undefined;
    }
  }

  /** The swarm's networks (none on a node that is not a manager). */
  async function swarmList(): Promise<SwarmNetworkRecord[]> {
    return (await swarmPort()?.list()) ?? [];
  }

  /** The swarm network `ref` names, if this node is a manager and there is one (one read of etcd). */
  async function swarmFind(ref: string): Promise<SwarmNetworkRecord | undefined> {
    return swarmPort()?.find(ref).catch(() => undefined);
  }

  /** Whether one of this node's networks answers to `ref`. */
  function localNetwork(ref: string, scope?: string): boolean {
    try {
      findNetwork(store, ref, { scope });
      return true;
    } catch (err) {
      if (err instanceof EngineError && err.code === 'NotFound') return false;
      return true;
    }
  }

  return async function register(app: App): Promise<void> {
    for (const url of ['/networks', '/networks/']) {
      app.get(url, { schema: { querystring: filtersQuery } }, async (req) => {
        const local = listNetworks(store, req.query.filters, { detailed: apiVersion(req) < 1.28 });
        const match = networkMatcher(req.query.filters);
        // A swarm network this node has an instance of is listed once, as the instance.
        const here = new Set(local.map((n) => (n as { Id: string }).Id));
        const overlays = (await swarmList()).filter((n) => !here.has(n.ID) && match({ name: n.Name, id: n.ID, driver: 'overlay', scope: 'swarm', labels: n.Labels ?? {}, attached: 0 }));
        return [...local, ...overlays.map(swarmNetworkView)];
      });
    }

    app.get('/networks/:id', { schema: { params: idParams, querystring: z.looseObject({ verbose: verboseFlag, scope: q.str() }) } }, async (req) => {
      const scope = req.query.scope || undefined;
      const overlay = scope === 'swarm' || !localNetwork(req.params.id, scope) ? await swarmFind(req.params.id) : undefined;
      if (overlay) return swarmNetworkView(overlay);
      const net = findNetwork(store, req.params.id, { scope });
      return networkView(net, attachedContainers(store, net));
    });

    app.delete('/networks/:id', { schema: { params: idParams } }, async (req, reply) => {
      const overlay = !localNetwork(req.params.id, 'local') ? await swarmFind(req.params.id) : undefined;
      if (overlay) {
        await deps.swarm!().remove(overlay.ID);
        return reply.code(204).send();
      }
      const net = findNetwork(store, req.params.id);
      // This node's instance of a swarm network goes with the network, never on its own.
      if (net.spec.scope === 'swarm') throw permissionDenied(`network ${net.spec.name} is a swarm network: remove it on a manager`);
      if (isPredefinedName(net.spec.name)) throw permissionDenied(`${net.spec.name} is a pre-defined network and cannot be removed`);
      await removeNetwork(net);
      reply.code(204).send();
    });

    app.post('/networks/create', { schema: { body: NetworkCreateBody } }, async (req, reply) => {
      if (req.body.Driver === 'overlay') {
        // A swarm-scoped network, made by a manager in the swarm's etcd (a node in no swarm: the reference's 500).
        let port: SwarmNetworksPort;
        try {
          if (!deps.swarm) throw unavailable(NOT_A_SWARM_MANAGER);
          port = deps.swarm();
        } catch (err) {
          if (err instanceof EngineError && err.message.startsWith('This node is not a swarm manager.')) throw new EngineError('Internal', err.message);
          throw err;
        }
        const name = req.body.Name ?? '';
        if (name && liveNetworksNamed(store, name).length) throw conflict(`network with name ${name} already exists`);
        return reply.code(201).send({ Id: await port.create(req.body), Warning: '' });
      }
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
