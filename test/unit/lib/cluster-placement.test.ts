// lib/cluster/placement.ts: where the leader places the replicas of cluster stacks (a pure function).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { place, resourceEnv, type Assignment, type PlacementInput } from '../../../lib/cluster/placement.ts';
import type { NodeRecord } from '../../../lib/cluster/node-record.ts';
import type { ComposeApp } from '../../../lib/compose/schema.ts';
import type { GenericResource } from '../../../lib/generic-resources.ts';

function node(id: string, o: { labels?: Record<string, string>; cpus?: number; memory?: number; generic?: GenericResource[] } = {}): NodeRecord {
  return {
    id, hostname: `host-${id}`, addr: '10.0.0.1', engineVersion: '1', labels: o.labels ?? {}, os: 'linux', arch: 'x86_64',
    nanoCpus: (o.cpus ?? 4) * 1e9, memoryBytes: o.memory ?? 8 * 2 ** 30, genericResources: o.generic ?? [], state: 'ready',
    createdAt: '2024-01-01T00:00:00Z', updatedAt: '2024-01-01T00:00:00Z', version: 1,
  };
}
const app = (services: Record<string, unknown>) => ({ services }) as unknown as ComposeApp;
const svc = (replicas: number, deploy: Record<string, unknown> = {}) => ({ image: 'busybox', deploy: { replicas, ...deploy } });
const gpu = (value: number) => ({ resources: { reservations: { generic_resources: [{ discrete_resource_spec: { kind: 'gpu', value } }] } } });
const discrete = (Kind: string, Value: number): GenericResource => ({ DiscreteResourceSpec: { Kind, Value } });
const named = (Kind: string, Value: string): GenericResource => ({ NamedResourceSpec: { Kind, Value } });
const where = (r: { assignments: Assignment[] }) => r.assignments.map((a) => `${a.stack}/${a.service}.${a.slot}@${a.node}`);

test('every service gets slots 1..replicas (default 1), spread by service count, total, then id', () => {
  const input: PlacementInput = { stacks: [{ name: 's', document: app({ web: svc(3), db: { image: 'x' } }) }], nodes: [node('c'), node('a'), node('b')], previous: [] };
  const r = place(input);
  // db.1 goes first (services sorted) to a; web spreads a, b, c by service count then total (a has db).
  assert.deepEqual(where(r), ['s/db.1@a', 's/web.1@b', 's/web.2@c', 's/web.3@a']);
  assert.deepEqual(r.pending, []);
  assert.deepEqual(place(input), r, 'deterministic');
  assert.deepEqual(place({ ...input, nodes: [...input.nodes].reverse(), stacks: [...input.stacks].reverse() }), r, 'input order does not matter');
});

test('constraints: replicas spread over the zone=b nodes only', () => {
  const nodes = [node('n1', { labels: { zone: 'a' } }), node('n2', { labels: { zone: 'b' } }), node('n3', { labels: { zone: 'b' } })];
  const r = place({ stacks: [{ name: 's', document: app({ web: svc(4, { placement: { constraints: ['node.labels.zone==b'] } }) }) }], nodes, previous: [] });
  assert.deepEqual(where(r), ['s/web.1@n2', 's/web.2@n3', 's/web.3@n2', 's/web.4@n3']);
  const none = place({ stacks: [{ name: 's', document: app({ web: svc(1, { placement: { constraints: ['node.labels.zone==z'] } }) }) }], nodes, previous: [] });
  assert.deepEqual(none.pending, [{ stack: 's', service: 'web', slot: 1, reason: 'no suitable node (scheduling constraints not satisfied on 3 nodes)' }]);
});

test('gpu=1 is placed only on the node advertising it, with DOCKER_RESOURCE_GPU', () => {
  const nodes = [node('a'), node('b', { generic: [discrete('gpu', 2)] }), node('c')];
  const r = place({ stacks: [{ name: 's', document: app({ ml: svc(2, gpu(1)) }) }], nodes, previous: [] });
  assert.deepEqual(where(r), ['s/ml.1@b', 's/ml.2@b']);
  assert.deepEqual(r.assignments[0]!.claims, [{ kind: 'gpu', count: 1 }]);
  assert.deepEqual(r.assignments[0]!.env, { DOCKER_RESOURCE_GPU: '1' });
});

test('named units serve a discrete request, each unit to one replica', () => {
  const nodes = [node('a', { generic: [named('gpu', 'UUID1'), named('gpu', 'UUID2'), named('gpu', 'UUID3')] }), node('b')];
  const r = place({ stacks: [{ name: 's', document: app({ one: svc(2, gpu(1)), two: svc(1, gpu(2)) }) }], nodes, previous: [] });
  assert.deepEqual(where(r), ['s/one.1@a', 's/one.2@a']);
  assert.deepEqual(r.assignments.map((a) => a.env.DOCKER_RESOURCE_GPU), ['UUID1', 'UUID2']);
  assert.deepEqual(r.assignments[1]!.claims, [{ kind: 'gpu', unit: 'UUID2' }]);
  assert.deepEqual(r.pending, [{ stack: 's', service: 'two', slot: 1, reason: 'no suitable node (insufficient resources on 2 nodes)' }]);
  const both = place({ stacks: [{ name: 's', document: app({ two: svc(1, gpu(2)) }) }], nodes, previous: [] });
  assert.deepEqual(both.assignments[0]!.env, { DOCKER_RESOURCE_GPU: 'UUID1,UUID2' });
});

test('resourceEnv is swarmkit EnvFormat with prefix DOCKER_RESOURCE (kind upper-cased, values joined by ",")', () => {
  assert.deepEqual(resourceEnv([{ kind: 'nvidia.gpu', unit: 'g0' }, { kind: 'fpga', count: 2 }, { kind: 'nvidia.gpu', unit: 'g1' }]), { 'DOCKER_RESOURCE_NVIDIA.GPU': 'g0,g1', DOCKER_RESOURCE_FPGA: '2' });
  assert.deepEqual(resourceEnv([]), {});
});

test('discrete count exhaustion leaves replicas pending with swarm\'s reason', () => {
  const nodes = [node('a', { generic: [discrete('gpu', 3)] }), node('b', { labels: { zone: 'x' } }), node('c', { labels: { zone: 'x' } })];
  const doc = app({ ml: svc(3, { ...gpu(2), placement: { constraints: ['node.labels.zone!=x'] } }) });
  const r = place({ stacks: [{ name: 's', document: doc }], nodes, previous: [] });
  assert.deepEqual(where(r), ['s/ml.1@a']);
  // a fails on resources; b and c have no gpu either: the resource filter runs first, so 3 nodes.
  assert.deepEqual(r.pending.map((p) => [p.slot, p.reason]), [
    [2, 'no suitable node (insufficient resources on 3 nodes)'],
    [3, 'no suitable node (insufficient resources on 3 nodes)'],
  ]);
  // A tie keeps the pipeline's order: resources, then constraints.
  const tie = place({ stacks: [{ name: 's', document: app({ w: svc(1, { resources: { reservations: { cpus: 2 } }, placement: { constraints: ['node.labels.zone==x'] } }) }) }], nodes: [node('d', { labels: { zone: 'x' }, cpus: 1 }), node('e')], previous: [] });
  assert.deepEqual(tie.pending.map((p) => p.reason), ['no suitable node (insufficient resources on 1 node; scheduling constraints not satisfied on 1 node)']);
  assert.deepEqual(place({ stacks: [{ name: 's', document: app({ w: svc(1) }) }], nodes: [], previous: [] }).pending, [{ stack: 's', service: 'w', slot: 1, reason: 'no suitable node' }]);
});

test('more constraint failures come first in the reason', () => {
  const nodes = [node('a', { labels: { zone: 'b' }, cpus: 1 }), node('b'), node('c')];
  const r = place({ stacks: [{ name: 's', document: app({ w: svc(1, { resources: { reservations: { cpus: 2 } }, placement: { constraints: ['node.labels.zone==b'] } }) }) }], nodes, previous: [] });
  assert.deepEqual(r.pending.map((p) => p.reason), ['no suitable node (scheduling constraints not satisfied on 2 nodes; insufficient resources on 1 node)']);
});

test('kept assignments stay put across recomputation, even against the spread', () => {
  const nodes = [node('a', { generic: [named('gpu', 'g0'), named('gpu', 'g1')] }), node('b', { generic: [named('gpu', 'g2')] })];
  const stacks = [{ name: 's', document: app({ ml: svc(3, gpu(1)), web: svc(2) }) }];
  const first = place({ stacks, nodes, previous: [] });
  assert.deepEqual(place({ stacks, nodes, previous: first.assignments }), first);
  // A placement the spread would not choose is kept as long as it stays valid.
  const previous: Assignment[] = [
    { stack: 's', service: 'web', slot: 1, node: 'b', env: {}, claims: [] },
    { stack: 's', service: 'web', slot: 2, node: 'b', env: {}, claims: [] },
    { stack: 's', service: 'ml', slot: 2, node: 'a', env: { DOCKER_RESOURCE_GPU: 'g1' }, claims: [{ kind: 'gpu', unit: 'g1' }] },
  ];
  const r = place({ stacks, nodes, previous });
  // Fresh ml.1 goes to b (no ml there yet); ml.3 then to a (ml tied, fewer replicas in total).
  assert.deepEqual(where(r), ['s/ml.1@b', 's/ml.2@a', 's/ml.3@a', 's/web.1@b', 's/web.2@b']);
  assert.deepEqual(r.assignments.map((a) => a.env.DOCKER_RESOURCE_GPU ?? ''), ['g2', 'g1', 'g0', '', '']);
  // A kept claim that conflicts with another (same unit twice) or no longer matches the request is redone.
  const clash = place({ stacks: [{ name: 's', document: app({ ml: svc(2, gpu(1)) }) }], nodes, previous: [
    { stack: 's', service: 'ml', slot: 1, node: 'a', env: {}, claims: [{ kind: 'gpu', unit: 'g1' }] },
    { stack: 's', service: 'ml', slot: 2, node: 'a', env: {}, claims: [{ kind: 'gpu', unit: 'g1' }] },
  ] });
  assert.deepEqual(clash.assignments.map((a) => `${a.slot}@${a.node}:${a.env.DOCKER_RESOURCE_GPU}`), ['1@a:g1', '2@b:g2']);
});

test('a dead node\'s replicas move to live nodes; a node that no longer meets the constraints loses its replica', () => {
  const stacks = [{ name: 's', document: app({ web: svc(2, { placement: { constraints: ['node.labels.zone==b'] } }) }) }];
  const previous: Assignment[] = [
    { stack: 's', service: 'web', slot: 1, node: 'gone', env: {}, claims: [] },
    { stack: 's', service: 'web', slot: 2, node: 'x', env: {}, claims: [] },
  ];
  const r = place({ stacks, nodes: [node('x', { labels: { zone: 'a' } }), node('y', { labels: { zone: 'b' } }), node('z', { labels: { zone: 'b' } })], previous });
  assert.deepEqual(where(r), ['s/web.1@y', 's/web.2@z']);
});

test('scale down keeps the low slots where they are; removed services and stacks are dropped', () => {
  const nodes = [node('a'), node('b'), node('c')];
  const up = place({ stacks: [{ name: 's', document: app({ web: svc(3), old: svc(1) }) }, { name: 't', document: app({ w: svc(1) }) }], nodes, previous: [] });
  const down = place({ stacks: [{ name: 's', document: app({ web: svc(1) }) }], nodes, previous: up.assignments });
  assert.deepEqual(where(down), [`s/web.1@${up.assignments.find((a) => a.service === 'web' && a.slot === 1)!.node}`]);
  assert.deepEqual(place({ stacks: [{ name: 's', document: app({ web: svc(0) }) }], nodes, previous: up.assignments }), { assignments: [], pending: [] });
});

test('cpu and memory reservations are capacity, less what other replicas on the node reserve', () => {
  const nodes = [node('a', { cpus: 4 }), node('b', { cpus: 2 })];
  const r = place({ stacks: [{ name: 's', document: app({ w: svc(4, { resources: { reservations: { cpus: '1.5' } } }) }) }], nodes, previous: [] });
  assert.deepEqual(where(r), ['s/w.1@a', 's/w.2@b', 's/w.3@a']);
  assert.deepEqual(r.pending, [{ stack: 's', service: 'w', slot: 4, reason: 'no suitable node (insufficient resources on 2 nodes)' }]);
  const mem = place({ stacks: [{ name: 's', document: app({ w: svc(3, { resources: { reservations: { memory: '3g' } } }) }) }], nodes: [node('a', { memory: 8 * 2 ** 30 })], previous: [] });
  assert.deepEqual([where(mem), mem.pending.map((p) => p.slot)], [['s/w.1@a', 's/w.2@a'], [3]]);
  // Kept replicas count first: the kept 3 CPUs on a leave room for none on a.
  const kept = place({ stacks: [{ name: 's', document: app({ big: svc(1, { resources: { reservations: { cpus: 3 } } }), w: svc(2, { resources: { reservations: { cpus: 2 } } }) }) }], nodes, previous: [{ stack: 's', service: 'big', slot: 1, node: 'a', env: {}, claims: [] }] });
  assert.deepEqual([where(kept), kept.pending.map((p) => p.slot)], [['s/big.1@a', 's/w.1@b'], [2]]);
});

test('node.id and node.hostname constraints pin a service to one node', () => {
  const nodes = [node('n1'), node('n2'), node('n3')];
  const byId = place({ stacks: [{ name: 's', document: app({ web: svc(2, { placement: { constraints: ['node.id == n2'] } }) }) }], nodes, previous: [] });
  assert.deepEqual(where(byId), ['s/web.1@n2', 's/web.2@n2']);
  const byHost = place({ stacks: [{ name: 's', document: app({ web: svc(2, { placement: { constraints: ['node.hostname != host-n1', 'node.hostname != host-n2'] } }) }) }], nodes, previous: [] });
  assert.deepEqual(where(byHost), ['s/web.1@n3', 's/web.2@n3']);
});
