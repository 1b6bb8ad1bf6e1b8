// The node routes in the reference's Node shape, from the cluster membership (the records nodes
// keep alive in etcd) and, in a swarm made by `swarm init`, the node specs (role, availability,
// labels, name: `docker node update`) and the swarm's root CA; while the node is in no cluster, the
// reference's 503. `docker node ls` and `docker node inspect self` (the CLI reads /info's NodeID
// for "self") work against any node.
import * as z from 'zod';
import type { App } from '../app.ts';
import { invalidArgument, notFound, unavailable } from '../../lib/errors.ts';
import type { NodeRecord } from '../../lib/cluster/node-record.ts';
import { nodeSpecOf } from '../../lib/swarm/node-spec.ts';
import { lookup } from '../../lib/swarm/lookup.ts';
import { parseSwarmVersion, tlsInfo } from '../../lib/swarm/cluster-object.ts';
import { filtersQuery, idParams, q } from '../request.ts';
import type { SwarmPort } from '../swarm/port.ts';
import { nodeFilter } from './filters.ts';
import type { ClusterPort } from './port.ts';
import { nodeView } from './views.ts';

function reachable(cluster: ClusterPort | undefined, notInCluster: string): asserts cluster is ClusterPort {
  if (!cluster) throw unavailable(notInCluster);
  if (cluster.state !== 'active') throw unavailable(`the cluster store is not reachable${cluster.error ? `: ${cluster.error}` : ''}`);
}

/** A node by id, hostname (or spec name), or unique id prefix. */
function findNode(nodes: readonly NodeRecord[], ref: string, name: (n: NodeRecord) => string | undefined = () => undefined): NodeRecord {
  return lookup(nodes, ref, { id: (n) => n.id, names: [name, (n) => n.hostname], notFound: (r) => notFound(`node ${r} not found`), ambiguous: (r, n) => invalidArgument(`node ${r} is ambiguous (${n} matches found)`), emptyPrefix: true });
}

const nodeSpecBody = z.looseObject({
  Name: z.string().nullish(),
  Labels: z.record(z.string(), z.string()).nullish(),
  Role: z.string().nullish(),
  Availability: z.string().nullish(),
});

export interface NodeRouteDeps {
  /** The membership now (undefined while in no cluster: 503 with `notInCluster`). */
  cluster: () => ClusterPort | undefined;
  /** The node's swarm: node specs, update and remove. */
  swarm?: SwarmPort;
  notInCluster: string;
}

export function nodeRoutes(deps: NodeRouteDeps) {
  const { notInCluster } = deps;

  /** The membership's records with what the swarm adds (specs, TLS info) when the node is in one. */
  async function view() {
    const cluster = deps.cluster();
    reachable(cluster, notInCluster);
    const swarm = deps.swarm?.inSwarm ? deps.swarm : undefined;
    const specs = swarm ? await swarm.nodeSpecs() : undefined;
    const rec = swarm?.cached();
    const tls = rec ? tlsInfo(rec.rootCaPem) : undefined;
    const render = (n: NodeRecord) => nodeView(n, { leaderId: cluster.leaderId, down: n.state === 'down', spec: specs?.get(n.id), tlsInfo: tls });
    return { cluster, swarm, specs, render };
  }

  return async function register(app: App): Promise<void> {
    app.get('/nodes', { schema: { querystring: filtersQuery } }, async (req) => {
      const match = nodeFilter(req.query.filters);
      const { cluster, specs, render } = await view();
      return cluster
        .nodes()
        .filter((n) => match({ id: n.id, hostname: n.hostname, spec: specs?.get(n.id)?.spec ?? { Labels: {}, Role: n.role ?? 'manager', Availability: 'active' }, engineLabels: n.labels ?? {} }))
        .map(render);
    });

    app.get('/nodes/:id', { schema: { params: idParams } }, async (req) => {
      const { cluster, specs, render } = await view();
      return render(findNode(cluster.nodes(), req.params.id, (n) => specs?.get(n.id)?.spec.Name));
    });

    app.post('/nodes/:id/update', { schema: { params: idParams, querystring: z.looseObject({ version: q.str() }), body: nodeSpecBody.nullish() } }, async (req, reply) => {
      const version = parseSwarmVersion(req.query.version, 'node');
      const { cluster, swarm, specs } = await view();
      if (!swarm) throw unavailable(notInCluster);
      const b = req.body ?? {};
      const spec = nodeSpecOf({ Name: b.Name, Labels: b.Labels, Role: b.Role, Availability: b.Availability });
      const n = findNode(cluster.nodes(), req.params.id, (x) => specs?.get(x.id)?.spec.Name);
      await swarm.updateNode(n.id, version, spec);
      reply.code(200).send();
    });

    app.delete('/nodes/:id', { schema: { params: idParams, querystring: z.looseObject({ force: q.bool() }) } }, async (req, reply) => {
      const { cluster, swarm, specs } = await view();
      if (!swarm) throw unavailable(notInCluster);
      const n = findNode(cluster.nodes(), req.params.id, (x) => specs?.get(x.id)?.spec.Name);
      await swarm.removeNode(n.id, { force: req.query.force, down: n.state === 'down' });
      reply.code(200).send();
    });
  };
}
