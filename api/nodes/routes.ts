// GET /nodes and GET /nodes/{id} in the reference's Node shape, from the cluster membership
// (--cluster-store): every node is a manager, the leader marked; while the node is in no cluster,
// the reference's 503. `docker node ls` and `docker
// node inspect self` (the CLI reads /info's NodeID for "self") work against any node. What
// changes nodes (update, rm) keeps the 503 of a daemon without a swarm.
import type { App } from '../app.ts';
import { notFound, unavailable } from '../../lib/errors.ts';
import type { NodeRecord } from '../../lib/cluster/node-record.ts';
import { parseFilters } from '../filters.ts';
import { filtersQuery, idParams } from '../request.ts';
import type { ClusterPort } from './port.ts';
import { nodeView } from './views.ts';

function reachable(cluster: ClusterPort | undefined, notInCluster: string): asserts cluster is ClusterPort {
  if (!cluster) throw unavailable(notInCluster);
  if (cluster.state !== 'active') throw unavailable(`the cluster store is not reachable${cluster.error ? `: ${cluster.error}` : ''}`);
}

/** A node by id, hostname, or unique id prefix. */
function findNode(nodes: readonly NodeRecord[], ref: string): NodeRecord {
  const exact = nodes.find((n) => n.id === ref) ?? nodes.find((n) => n.hostname === ref);
  if (exact) return exact;
  const byPrefix = nodes.filter((n) => n.id.startsWith(ref));
  if (byPrefix.length === 1) return byPrefix[0]!;
  throw notFound(`node ${ref} not found`);
}

/** `current` answers the membership now (undefined while in no cluster: 503 with `notInCluster`). */
export function nodeRoutes(current: () => ClusterPort | undefined, notInCluster: string) {
  return async function register(app: App): Promise<void> {
    app.get('/nodes', { schema: { querystring: filtersQuery } }, async (req) => {
      const cluster = current();
      reachable(cluster, notInCluster);
      // Keys are not checked: this route has never refused one (not every node filter is modelled here).
      const f = parseFilters(req.query.filters);
      const ids = f.get('id');
      const names = f.get('name');
      const roles = f.get('role');
      const leaderId = cluster.leaderId;
      return cluster
        .nodes()
        .filter((n) => !ids?.length || ids.some((x) => n.id.startsWith(x)))
        .filter((n) => !names?.length || names.some((x) => n.hostname.includes(x)))
        .filter((n) => !roles?.length || roles.includes('manager'))
        .map((n) => nodeView(n, { leaderId, down: n.state === 'down' }));
    });
    app.get('/nodes/:id', { schema: { params: idParams } }, async (req) => {
      const cluster = current();
      reachable(cluster, notInCluster);
      const n = findNode(cluster.nodes(), req.params.id);
      return nodeView(n, { leaderId: cluster.leaderId, down: n.state === 'down' });
    });
  };
}
