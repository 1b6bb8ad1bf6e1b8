// lib/cluster/placement.ts: swarm's scheduler for one replica (chooseNode), as the orchestrator
// (lib/swarm/orchestrate.ts) runs it slot after slot: capacity and generic resources taken as
// replicas are placed, constraints, the spread, and the reasons in the scheduler's words.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chooseNode, nodeState, resourceEnv, take, type Claim, type Needs, type NodeState } from '../../../lib/cluster/placement.ts';
import { unmetConstraint } from '../../../lib/compose/placement.ts';
import type { NodeRecord } from '../../../lib/cluster/node-record.ts';
import type { GenericResource } from '../../../lib/generic-resources.ts';

function node(id: string, o: { labels?: Record<string, string>; cpus?: number; memory?: number; generic?: GenericResource[] } = {}): NodeRecord {
  return {
    id, hostname: `host-${id}`, addr: '10.0.0.1', engineVersion: '1', labels: o.labels ?? {}, os: 'linux', arch: 'x86_64',
    nanoCpus: (o.cpus ?? 4) * 1e9, memoryBytes: o.memory ?? 8 * 2 ** 30, genericResources: o.generic ?? [], state: 'ready',
    createdAt: '2024-01-01T00:00:00Z', updatedAt: '2024-01-01T00:00:00Z', version: 1,
  };
}
const discrete = (Kind: string, Value: number): GenericResource => ({ DiscreteResourceSpec: { Kind, Value } });
const named = (Kind: string, Value: string): GenericResource => ({ NamedResourceSpec: { Kind, Value } });
const needs = (o: Partial<Needs> = {}): Needs => ({ nanoCpus: 0, memoryBytes: 0, generic: [], ...o });
const gpu = (value: number) => needs({ generic: [{ kind: 'gpu', value }] });

interface Service { key: string; replicas: number; needs: Needs; constraints?: string[] }
/** The services' slots placed one after the other on `nodes`: where each went (or why not), and its claims. */
function schedule(nodes: NodeRecord[], services: Service[], states: NodeState[] = nodes.map((n) => nodeState(n))) {
  const out: Array<{ slot: string; node?: string; claims?: Claim[]; reason?: string }> = [];
  for (const s of services) {
    for (let i = 1; i <= s.replicas; i++) {
      const chosen = chooseNode(states, s.key, s.needs, (facts) => unmetConstraint(s.constraints ?? [], facts) !== undefined);
      if ('node' in chosen) {
        take(chosen.node, s.key, s.needs, chosen.claims);
        out.push({ slot: `${s.key}.${i}`, node: chosen.node.record.id, claims: chosen.claims });
      } else out.push({ slot: `${s.key}.${i}`, reason: chosen.reason });
    }
  }
  return out;
}
const where = (r: ReturnType<typeof schedule>) => r.map((x) => `${x.slot}@${x.node ?? '-'}`);

test('replicas spread by the service\'s count on a node, then the total', () => {
  const r = schedule([node('a'), node('b'), node('c')], [{ key: 'db', replicas: 1, needs: needs() }, { key: 'web', replicas: 3, needs: needs() }]);
  assert.deepEqual(where(r), ['db.1@a', 'web.1@b', 'web.2@c', 'web.3@a']);
});

test('constraints: replicas spread over the zone=b nodes only; none meets it: the reason', () => {
  const nodes = [node('n1', { labels: { zone: 'a' } }), node('n2', { labels: { zone: 'b' } }), node('n3', { labels: { zone: 'b' } })];
  assert.deepEqual(where(schedule(nodes, [{ key: 'web', replicas: 4, needs: needs(), constraints: ['engine.labels.zone==b'] }])), ['web.1@n2', 'web.2@n3', 'web.3@n2', 'web.4@n3']);
  assert.deepEqual(schedule(nodes, [{ key: 'web', replicas: 1, needs: needs(), constraints: ['engine.labels.zone==z'] }])[0]!.reason, 'no suitable node (scheduling constraints not satisfied on 3 nodes)');
});

test('gpu=1 is placed only on the node advertising it, with DOCKER_RESOURCE_GPU', () => {
  const r = schedule([node('a'), node('b', { generic: [discrete('gpu', 2)] }), node('c')], [{ key: 'ml', replicas: 3, needs: gpu(1) }]);
  assert.deepEqual(where(r), ['ml.1@b', 'ml.2@b', 'ml.3@-']);
  assert.deepEqual(r[0]!.claims, [{ kind: 'gpu', count: 1 }]);
  assert.deepEqual(resourceEnv(r[0]!.claims!), { DOCKER_RESOURCE_GPU: '1' });
  assert.equal(r[2]!.reason, 'no suitable node (insufficient resources on 3 nodes)');
});

test('named units serve a discrete request, each unit to one replica', () => {
  const nodes = [node('a', { generic: [named('gpu', 'UUID1'), named('gpu', 'UUID2'), named('gpu', 'UUID3')] }), node('b')];
  const r = schedule(nodes, [{ key: 'one', replicas: 2, needs: gpu(1) }, { key: 'two', replicas: 1, needs: gpu(2) }]);
  assert.deepEqual(where(r), ['one.1@a', 'one.2@a', 'two.1@-']);
  assert.deepEqual(r.slice(0, 2).map((x) => resourceEnv(x.claims!).DOCKER_RESOURCE_GPU), ['UUID1', 'UUID2']);
  assert.equal(r[2]!.reason, 'no suitable node (insufficient resources on 2 nodes)');
  assert.deepEqual(resourceEnv(schedule(nodes, [{ key: 'two', replicas: 1, needs: gpu(2) }])[0]!.claims!), { DOCKER_RESOURCE_GPU: 'UUID1,UUID2' });
});

test('resourceEnv is swarmkit EnvFormat with prefix DOCKER_RESOURCE (kind upper-cased, values joined by ",")', () => {
  assert.deepEqual(resourceEnv([{ kind: 'nvidia.gpu', unit: 'g0' }, { kind: 'fpga', count: 2 }, { kind: 'nvidia.gpu', unit: 'g1' }]), { 'DOCKER_RESOURCE_NVIDIA.GPU': 'g0,g1', DOCKER_RESOURCE_FPGA: '2' });
  assert.deepEqual(resourceEnv([]), {});
});

test('the reason counts each node once, the resource filter first; more failures first; no node at all', () => {
  const nodes = [node('a', { generic: [discrete('gpu', 3)] }), node('b', { labels: { zone: 'x' } }), node('c', { labels: { zone: 'x' } })];
  const r = schedule(nodes, [{ key: 'ml', replicas: 2, needs: gpu(2), constraints: ['engine.labels.zone!=x'] }]);
  assert.deepEqual(r.map((x) => x.reason ?? x.node), ['a', 'no suitable node (insufficient resources on 3 nodes)']);
  const tie = schedule([node('d', { labels: { zone: 'x' }, cpus: 1 }), node('e')], [{ key: 'w', replicas: 1, needs: needs({ nanoCpus: 2e9 }), constraints: ['engine.labels.zone==x'] }]);
  assert.equal(tie[0]!.reason, 'no suitable node (insufficient resources on 1 node; scheduling constraints not satisfied on 1 node)');
  const more = schedule([node('a', { labels: { zone: 'b' }, cpus: 1 }), node('b'), node('c')], [{ key: 'w', replicas: 1, needs: needs({ nanoCpus: 2e9 }), constraints: ['engine.labels.zone==b'] }]);
  assert.equal(more[0]!.reason, 'no suitable node (scheduling constraints not satisfied on 2 nodes; insufficient resources on 1 node)');
  assert.equal(schedule([], [{ key: 'w', replicas: 1, needs: needs() }])[0]!.reason, 'no suitable node');
});

test('cpu and memory reservations are capacity, less what other replicas on the node reserve', () => {
  const r = schedule([node('a', { cpus: 4 }), node('b', { cpus: 2 })], [{ key: 'w', replicas: 4, needs: needs({ nanoCpus: 1.5e9 }) }]);
  assert.deepEqual(where(r), ['w.1@a', 'w.2@b', 'w.3@a', 'w.4@-']);
  const mem = schedule([node('a', { memory: 8 * 2 ** 30 })], [{ key: 'w', replicas: 3, needs: needs({ memoryBytes: 3 * 2 ** 30 }) }]);
  assert.deepEqual(where(mem), ['w.1@a', 'w.2@a', 'w.3@-']);
});

test('node.id and node.hostname constraints pin a service to one node', () => {
  const nodes = [node('n1'), node('n2'), node('n3')];
  assert.deepEqual(where(schedule(nodes, [{ key: 'web', replicas: 2, needs: needs(), constraints: ['node.id == n2'] }])), ['web.1@n2', 'web.2@n2']);
  assert.deepEqual(where(schedule(nodes, [{ key: 'web', replicas: 2, needs: needs(), constraints: ['node.hostname != host-n1', 'node.hostname != host-n2'] }])), ['web.1@n3', 'web.2@n3']);
});
