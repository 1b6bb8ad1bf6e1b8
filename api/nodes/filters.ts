// GET /nodes' filters as the reference reads them (moby's daemon/cluster/filters.go, swarmkit's
// ListNodes): `name` a prefix of the node's spec name or hostname, `id` a prefix of its id, `label`
// its engine labels, `node.label` its spec labels, `role`, `membership` (every node here is
// accepted); another key, or a role or membership it does not know, is refused in dockerd 20.10's
// words (a 400 here: it answers 500 to a bad role or membership).
import { invalidArgument } from '../../lib/errors.ts';
import type { NodeSpec } from '../../lib/swarm/node-spec.ts';
import { matchKVList, parseFilters } from '../filters.ts';

const NODE_FILTERS: ReadonlySet<string> = new Set(['id', 'label', 'membership', 'name', 'node.label', 'role']);

/** What a node filter reads of a node. */
export interface FilterableNode {
  id: string;
  hostname: string;
  spec: NodeSpec;
  engineLabels: Record<string, string>;
}

/** The `filters` query of GET /nodes as a predicate. */
export function nodeFilter(raw: string | undefined): (n: FilterableNode) => boolean {
  const f = parseFilters(raw);
  // dockerd 20.10's words for the nodes' filters (capitalised, unlike its other routes').
  for (const k of f.keys()) if (!NODE_FILTERS.has(k)) throw invalidArgument(`Invalid filter '${k}'`);
  const ids = f.get('id') ?? [];
  const names = f.get('name') ?? [];
  const roles = (f.get('role') ?? []).map((r) => {
    if (r !== '' && !['manager', 'worker'].includes(r.toLowerCase())) throw invalidArgument(`Invalid role filter: '${r}'`);
    return r.toLowerCase();
  }).filter(Boolean);
  const memberships = (f.get('membership') ?? []).map((m) => {
    if (m !== '' && !['accepted', 'pending'].includes(m.toLowerCase())) throw invalidArgument(`Invalid membership filter: '${m}'`);
    return m.toLowerCase();
  }).filter(Boolean);
  return (n) =>
    (!ids.length || ids.some((x) => n.id.startsWith(x))) &&
    (!names.length || names.some((x) => (n.spec.Name || n.hostname).startsWith(x))) &&
    matchKVList(f.get('label'), n.engineLabels) &&
    matchKVList(f.get('node.label'), n.spec.Labels) &&
    (!roles.length || roles.includes(n.spec.Role)) &&
    (!memberships.length || memberships.includes('accepted'));
}
