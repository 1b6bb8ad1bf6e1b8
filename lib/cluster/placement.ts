// Swarm's scheduler for one replica, which the leader's orchestrator runs for each task to place
// (lib/swarm/orchestrate.ts): reservations (cpus, memory, generic resources) are subtracted from a
// node's capacity, a node is checked for resources before constraints, a replica goes to the
// eligible node with the fewest replicas of its service, then the fewest in total, and an
// unplaceable one is "no suitable node (…)" in the scheduler's words.
import type { NodeFacts } from '../compose/placement.ts';
import type { NodeRecord } from './node-record.ts';

export type Claim = { kind: string; count: number } | { kind: string; unit: string };

/** swarmkit's genericresource.EnvFormat with the prefix the engine gives it (DOCKER_RESOURCE). */
export function resourceEnv(claims: readonly Claim[]): Record<string, string> {
  const byKind = new Map<string, string[]>();
  for (const c of claims) {
    const v = 'unit' in c ? c.unit : String(c.count);
    const list = byKind.get(c.kind);
    if (list) list.push(v);
    else byKind.set(c.kind, [v]);
  }
  const env: Record<string, string> = {};
  for (const [kind, vals] of byKind) env[`DOCKER_RESOURCE_${kind}`.toUpperCase()] = vals.join(',');
  return env;
}

/** A node as the scheduler sees it: what is left of its capacity, what runs there. */
export interface NodeState {
  record: NodeRecord;
  facts: NodeFacts;
  nanoCpus: number;
  memoryBytes: number;
  discrete: Map<string, number>; // what remains of each discrete kind
  named: Map<string, string[]>; // the units of each named kind, in the node's order
  claimed: Set<string>; // `${kind}\0${unit}` taken by a replica
  perService: Map<string, number>;
  total: number;
}

/** What one replica reserves. */
export interface Needs { nanoCpus: number; memoryBytes: number; generic: Array<{ kind: string; value: number }> }

const unitKey = (kind: string, unit: string) => `${kind}\0${unit}`;

/** `record` as the scheduler starts from it (a swarm node's own labels as its node.labels, when given). */
export function nodeState(record: NodeRecord, nodeLabels?: Record<string, string>): NodeState {
  const discrete = new Map<string, number>();
  const named = new Map<string, string[]>();
  for (const g of record.genericResources) {
    if ('DiscreteResourceSpec' in g) discrete.set(g.DiscreteResourceSpec.Kind, (discrete.get(g.DiscreteResourceSpec.Kind) ?? 0) + g.DiscreteResourceSpec.Value);
    else named.set(g.NamedResourceSpec.Kind, [...(named.get(g.NamedResourceSpec.Kind) ?? []), g.NamedResourceSpec.Value]);
  }
  const facts: NodeFacts = { id: record.id, hostname: record.hostname, role: record.role ?? 'manager', os: record.os, arch: record.arch, labels: record.labels, ...(nodeLabels ? { nodeLabels } : {}), cpus: record.nanoCpus / 1e9, memoryBytes: record.memoryBytes };
  return { record, facts, nanoCpus: record.nanoCpus, memoryBytes: record.memoryBytes, discrete, named, claimed: new Set(), perService: new Map(), total: 0 };
}

/** The claims serving `needs` on `n` (a discrete count, else as many free named units), or undefined. */
export function freshClaims(n: NodeState, needs: Needs): Claim[] | undefined {
  const claims: Claim[] = [];
  const taken = new Set<string>();
  const discreteTaken = new Map<string, number>();
  for (const { kind, value } of needs.generic) {
    const left = (n.discrete.get(kind) ?? 0) - (discreteTaken.get(kind) ?? 0);
    if (n.discrete.has(kind) && left >= value) {
      claims.push({ kind, count: value });
      discreteTaken.set(kind, (discreteTaken.get(kind) ?? 0) + value);
      continue;
    }
    const free = (n.named.get(kind) ?? []).filter((u) => !n.claimed.has(unitKey(kind, u)) && !taken.has(unitKey(kind, u)));
    if (free.length < value) return undefined;
    for (const unit of free.slice(0, value)) {
      claims.push({ kind, unit });
      taken.add(unitKey(kind, unit));
    }
  }
  return claims;
}

/** Counts a replica of `key` on `n`: its reservations and claims taken from what is left. */
export function take(n: NodeState, key: string, needs: Needs, claims: readonly Claim[]): void {
  n.nanoCpus -= needs.nanoCpus;
  n.memoryBytes -= needs.memoryBytes;
  for (const c of claims) {
    if ('unit' in c) n.claimed.add(unitKey(c.kind, c.unit));
    else n.discrete.set(c.kind, n.discrete.get(c.kind)! - c.count);
  }
  n.perService.set(key, (n.perService.get(key) ?? 0) + 1);
  n.total++;
}

/**
 * A replica of `key` on `n` no longer counts for spreading (it is being shut down: swarmkit's
 * scheduler drops a task whose desired state is past running); its reservations stay taken until
 * it has stopped.
 */
export function uncount(n: NodeState, key: string): void {
  n.perService.set(key, Math.max(0, (n.perService.get(key) ?? 0) - 1));
  n.total = Math.max(0, n.total - 1);
}

export const fitsCapacity = (n: NodeState, needs: Needs) => needs.nanoCpus <= n.nanoCpus && needs.memoryBytes <= n.memoryBytes;
const nodes = (count: number) => (count === 1 ? '1 node' : `${count} nodes`);

/**
 * Swarm's scheduler for one replica of `key`: the nodes that fit its reservations and meet its
 * constraints (`unmet` says which do not), the one with the fewest replicas of `key`, then the
 * fewest in total; or, when none is eligible, the reason in the scheduler's words.
 */
export function chooseNode(states: readonly NodeState[], key: string, needs: Needs, unmet: (facts: NodeFacts) => boolean): { node: NodeState; claims: Claim[] } | { reason: string } {
  let resources = 0;
  let constraints = 0;
  let best: { node: NodeState; claims: Claim[] } | undefined;
  for (const n of states) {
    // Swarm's pipeline: the resource filter runs before the constraint filter; a node counts once.
    const claims = fitsCapacity(n, needs) ? freshClaims(n, needs) : undefined;
    if (!claims) resources++;
    else if (unmet(n.facts)) constraints++;
    else if (!best || (n.perService.get(key) ?? 0) < (best.node.perService.get(key) ?? 0) || ((n.perService.get(key) ?? 0) === (best.node.perService.get(key) ?? 0) && n.total < best.node.total)) best = { node: n, claims };
  }
  if (best) return best;
  // Explain: most failures first; on a tie the pipeline's order (resources, then constraints).
  const parts = [
    { count: resources, text: `insufficient resources on ${nodes(resources)}` },
    { count: constraints, text: `scheduling constraints not satisfied on ${nodes(constraints)}` },
  ].filter((p) => p.count > 0).sort((a, b) => b.count - a.count);
  return { reason: parts.length ? `no suitable node (${parts.map((p) => p.text).join('; ')})` : 'no suitable node' };
}
