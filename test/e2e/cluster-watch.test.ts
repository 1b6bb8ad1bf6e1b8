// Watches survive (issue 60, 4) against a real etcd: a node's watch of the cluster's node records
// resumes after its connection to etcd was cut; when etcd compacted past where it had read
// meanwhile, etcd cancels the resumed watch, and the node lists and watches again, so a node whose
// record went while it was cut off is seen gone (failover keeps working).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { Etcd3 } from 'etcd3';
import { nodeKey, type NodeRecord } from '../../lib/cluster/node-record.ts';
import { ClusterMembership, type NodeFacts } from '../../reconcilers/node/membership.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';
import { exitWhenLingering } from './harness/processes.ts';
import { Relay } from './harness/relay.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = pino({ level: 'silent' });
const facts = (): NodeFacts => ({ hostname: 'h', addr: '127.0.0.1', engineVersion: 't', labels: {}, os: 'linux', arch: 'x86_64', nanoCpus: 2e9, memoryBytes: 2 ** 31, genericResources: [] });

describe('cluster watches survive', () => {
  let etcd: EtcdHandle;
  let raw: Etcd3;
  let relay: Relay;
  let a: ClusterMembership | undefined;

  before(async () => {
    etcd = await startEtcd();
    raw = new Etcd3({ hosts: etcd.endpoints });
    relay = new Relay(new URL(etcd.clientUrl));
    await relay.listen();
  });
  after(async () => {
    await a?.stop().catch(() => {});
    await relay?.close();
    raw?.close();
    await etcd?.stop();
    exitWhenLingering();
  });

  test('a node record gone while the watch was cut off and etcd compacted past it: the watch is made again and the node is seen gone', async () => {
    a = new ClusterMembership({ store: { endpoints: [`http://127.0.0.1:${relay.port}`], ttlSeconds: 10, fenceMarginSeconds: 1 }, nodeId: 'a'.repeat(25), facts, log });
    await a.start();
    for (let i = 0; i < 200 && a.state !== 'active'; i++) await sleep(50);
    assert.equal(a.state, 'active');
    const x: NodeRecord = { id: 'x'.repeat(25), ...facts(), state: 'ready', createdAt: '', updatedAt: '', version: 1 } as NodeRecord;
    await raw.put(nodeKey(x.id)).value(JSON.stringify(x));
    for (let i = 0; i < 100 && !a.nodes().some((n) => n.id === x.id); i++) await sleep(50);
    assert.ok(a.nodes().some((n) => n.id === x.id && n.state === 'ready'), 'x is seen');

    relay.sever();
    await raw.delete().key(nodeKey(x.id));
    for (let i = 0; i < 5; i++) await raw.put(`/engine/test/churn${i}`).value(String(i));
    const rev = (await raw.get('/engine/test/churn4').exec()).header.revision;
    await raw.kv.compact({ revision: rev, physical: true });
    await sleep(1500);
    relay.restore();

    for (let i = 0; i < 300 && a.nodes().some((n) => n.id === x.id); i++) await sleep(50);
    assert.ok(!a.nodes().some((n) => n.id === x.id), `x is gone from the node's view: ${JSON.stringify(a.nodes().map((n) => [n.id.slice(0, 3), n.state]))}`);
    // And the watch works again: a new node is seen.
    const y: NodeRecord = { ...x, id: 'y'.repeat(25) };
    await raw.put(nodeKey(y.id)).value(JSON.stringify(y));
    for (let i = 0; i < 200 && !a.nodes().some((n) => n.id === y.id); i++) await sleep(50);
    assert.ok(a.nodes().some((n) => n.id === y.id), 'a node added afterwards is seen: the watch is live');
  });
});
