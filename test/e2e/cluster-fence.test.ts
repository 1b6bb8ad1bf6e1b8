// Fenced leadership (issue 60, 1) against a real etcd: the leader's orchestration writes are etcd
// transactions that compare its election key's create revision. A leader that still believes it
// leads after its term ended (stalled past its lease while another node was elected) has its
// writes refused by etcd — nothing of it lands — and stops leading; the new leader's task records
// name their writer and term.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { Etcd3 } from 'etcd3';
import { parseRecord, type NodeRecord } from '../../lib/cluster/node-record.ts';
import { SERVICES_PREFIX } from '../../lib/swarm/keys.ts';
import { serviceSpecOf } from '../../lib/swarm/service-spec.ts';
import { TASKS_PREFIX, type TaskRecord } from '../../lib/swarm/task.ts';
import { fencedWrite, type LeaderTerm } from '../../reconcilers/node/fence.ts';
import { ClusterMembership, type NodeFacts } from '../../reconcilers/node/membership.ts';
import { SwarmOrchestrator } from '../../reconcilers/node/orchestrator.ts';
import { orchestratorController } from '../../reconcilers/node/controllers.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';
import { exitWhenLingering } from './harness/processes.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = pino({ level: 'silent' });
const facts = (): NodeFacts => ({ hostname: 'h', addr: '127.0.0.1', engineVersion: 't', labels: {}, os: 'linux', arch: 'x86_64', nanoCpus: 2e9, memoryBytes: 2 ** 31, genericResources: [] });
const node = (id: string): NodeRecord => ({ id, ...facts(), state: 'ready', createdAt: '', updatedAt: '', version: 1 }) as NodeRecord;

async function until(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) if (ok()) return;
  assert.fail(`timed out waiting for ${what}`);
}

describe('fenced leadership', () => {
  let etcd: EtcdHandle;
  let raw: Etcd3;
  const members: ClusterMembership[] = [];
  const member = (id: string) => {
    const m = new ClusterMembership({ store: { endpoints: etcd.endpoints, ttlSeconds: 5, fenceMarginSeconds: 1 }, nodeId: id.padEnd(25, '0'), facts, log });
    members.push(m);
    return m;
  };

  before(async () => {
    etcd = await startEtcd();
    raw = new Etcd3({ hosts: etcd.endpoints });
  });
  after(async () => {
    for (const m of members) await m.stop().catch(() => {});
    raw?.close();
    await etcd?.stop();
    exitWhenLingering();
  });

  test('a write under an ended term is refused and writes nothing; under the live term it lands', async () => {
    const a = member('a');
    await a.start();
    await until('a leads', () => !!a.leaderTerm);
    const term = a.leaderTerm!;
    assert.equal(term.nodeId, a.nodeId);
    assert.ok(await fencedWrite(raw, term, [{ put: '/engine/test/one', value: '1' }]));
    assert.equal(await raw.get('/engine/test/one').string(), '1');
    // The term ends at etcd (its key goes, as when its lease expires) while a still thinks it leads.
    const stale: LeaderTerm = { ...term };
    await raw.delete().key(term.key);
    assert.equal(await fencedWrite(raw, stale, [{ put: '/engine/test/two', value: '2' }, { delete: '/engine/test/one' }]), false);
    assert.equal(await raw.get('/engine/test/two').string(), null, 'nothing of the refused transaction landed');
    assert.equal(await raw.get('/engine/test/one').string(), '1');
    await a.stop();
  });

  test('a stalled leader’s orchestration pass is refused and deposes it; the new leader makes the task, naming itself and its term', async () => {
    const b = member('b');
    const c = member('c');
    await b.start();
    await until('b leads', () => !!b.leaderTerm);
    const staleTerm = b.leaderTerm!;
    const spec = serviceSpecOf({ Name: 'shop', TaskTemplate: { ContainerSpec: { Image: 'busybox' } } }, () => 'shop');
    await raw.put(`${SERVICES_PREFIX}shop0000000000000000000000`).value(JSON.stringify({ ID: 'shop0000000000000000000000', CreatedAt: '', UpdatedAt: '', Spec: spec }));
    const tasks = async () => Object.values(await raw.getAll().prefix(TASKS_PREFIX).strings()).map((v) => parseRecord<TaskRecord>(v)!);
    // b stalls (here: its view is frozen at its old term) while its term ends and c is elected.
    await c.start();
    await raw.delete().key(staleTerm.key);
    await until('c leads', () => !!c.leaderTerm);
    assert.ok(BigInt(c.leaderTerm!.revision) > BigInt(staleTerm.revision));
    let deposedWhy = '';
    const stalled = new SwarmOrchestrator({ etcd: () => raw, nodes: () => [node(b.nodeId)], term: () => (deposedWhy ? undefined : staleTerm), deposed: (why) => (deposedWhy = why), log });
    const stalledCtl = orchestratorController(stalled).build({ reconciler: stalled, log });
    await stalledCtl.start();
    await until('the stalled leader is deposed', () => !!deposedWhy);
    await stalledCtl.stop();
    stalled.stop();
    assert.match(deposedWhy, new RegExp(`term ${staleTerm.revision} was refused`));
    assert.deepEqual(await tasks(), [], 'no task of the old leader landed');
    // The live leader's pass lands, and its record names it and its term.
    const live = new SwarmOrchestrator({ etcd: () => raw, nodes: () => [node(c.nodeId)], term: () => c.leaderTerm, deposed: (why) => assert.fail(why), log });
    const liveCtl = orchestratorController(live).build({ reconciler: live, log });
    await liveCtl.start();
    let rec: TaskRecord | undefined;
    for (let i = 0; i < 100 && !rec; i++, await sleep(50)) rec = (await tasks())[0];
    await liveCtl.stop();
    live.stop();
    assert.ok(rec, 'the live leader made the service\'s task');
    assert.deepEqual([rec.NodeID, rec.Writer, rec.Term], [c.nodeId, c.nodeId, c.leaderTerm!.revision]);
  });

  test('deposed(): the membership stops leading at once and campaigns again', async () => {
    const d = member('d');
    await d.start();
    await until('someone leads', () => members.some((m) => !!m.leaderTerm));
    assert.equal(members[0]!.leaderTerm, undefined, 'a stopped member leads nothing');
    const leader = members.find((m) => !!m.leaderTerm)!;
    const before = leader.leaderTerm!;
    leader.deposed('a test says so');
    assert.equal(leader.leaderTerm, undefined);
    assert.equal(leader.isLeader, false);
    await until('a leader again, in a new term', () => members.some((m) => !!m.leaderTerm && m.leaderTerm.revision !== before.revision));
  });
});
