// Who may do what in a managed swarm's etcd (drivers/swarm/etcd-access.ts), against Debian's etcd
// with certificates of the swarm's CA: the user is the certificate's CN (the node id). A manager is
// root; a worker reads the membership, its own tasks and spec, writes its own records and
// status, and is refused another node's tasks, another's status and etcd's member calls; a
// role changed follows at once; a node dropped opens nothing; every call is idempotent.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { Etcd3 } from 'etcd3';
import { issueNodeCert, makeRootCa, type KeyPair } from '../../drivers/swarm/ca.ts';
import { EtcdMember } from '../../drivers/swarm/etcd-member.ts';
import { dropNode, enableAccess, grantNode, users } from '../../drivers/swarm/etcd-access.ts';
import { memberKey, nodeKey, NODES_PREFIX } from '../../lib/cluster/node-record.ts';
import { nodeTaskKey, taskStatusKey } from '../../lib/swarm/task.ts';
import { nodeSpecKey } from '../../lib/swarm/node-spec.ts';
import { freePort } from './harness/free-port.ts';

const MANAGER = 'accessmanager000000000000';
const W1 = 'accessworker1000000000000';
const W2 = 'accessworker2000000000000';
const CLUSTER = 'accesscluster000000000000';
const log = pino({ level: 'silent' });
const denied = /permission denied|user name not found/i;

describe('a managed swarm\'s etcd users and roles', { skip: !existsSync('/usr/bin/etcd') && 'etcd-server is not installed' }, () => {
  let dir: string;
  let ca: KeyPair;
  let member: EtcdMember;
  const certs = new Map<string, KeyPair>();
  const clients: Etcd3[] = [];
  const as = (id: string) => {
    const c = certs.get(id)!;
    const client = new Etcd3({ hosts: [member.clientUrl], dialTimeout: 2000, credentials: { rootCertificate: Buffer.from(ca.certPem), certChain: Buffer.from(c.certPem), privateKey: Buffer.from(c.keyPem) } });
    clients.push(client);
    return client;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'swarm-access-'));
    ca = await makeRootCa();
    certs.set(MANAGER, await issueNodeCert(ca, { nodeId: MANAGER, clusterId: CLUSTER, role: 'swarm-manager', hosts: ['127.0.0.1'] }));
    for (const w of [W1, W2]) certs.set(w, await issueNodeCert(ca, { nodeId: w, clusterId: CLUSTER, role: 'swarm-worker', hosts: ['127.0.0.1'] }));
    const clientPort = await freePort();
    let peerPort = await freePort();
    while (peerPort === clientPort) peerPort = await freePort();
    member = new EtcdMember({ name: MANAGER, dir: join(dir, 'swarm'), runDir: join(dir, 'run'), advertiseHost: '127.0.0.1', clientPort, peerPort, tls: { caPem: ca.certPem, ...certs.get(MANAGER)! }, clusterToken: CLUSTER, log });
    await member.start();
  }, { timeout: 60_000 });
  after(async () => {
    for (const c of clients) c.close();
    await member?.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }, { timeout: 60_000 });

  test('a worker reads its own tasks and writes its own records; another node\'s are refused it', { timeout: 60_000 }, async () => {
    const m = as(MANAGER);
    for (const w of [W1, W2]) await m.put(nodeTaskKey(w, 'web')).value(`for ${w}`);
    await m.put(nodeSpecKey(W1)).value('{}');
    await m.put('/engine/swarm/cluster').value('{}');
    await grantNode(m, MANAGER, 'manager');
    await grantNode(m, W1, 'worker');
    await grantNode(m, W2, 'worker');
    await enableAccess(m);
    // Idempotent: asked again, nothing changes and nothing is refused.
    await grantNode(m, W1, 'worker');
    await enableAccess(m);
    assert.deepEqual(Object.fromEntries(await users(m)), { root: ['root'], [MANAGER]: ['root'], [W1]: [`node-${W1}`], [W2]: [`node-${W2}`] });

    const w = as(W1);
    assert.equal(await w.get(nodeTaskKey(W1, 'web')).string(), `for ${W1}`);
    assert.deepEqual(Object.keys(await w.getAll().prefix(`/engine/node-tasks/${W1}/`).strings()), [nodeTaskKey(W1, 'web')]);
    await assert.rejects(w.get(nodeTaskKey(W2, 'web')).string(), denied, 'another node\'s task');
    await assert.rejects(w.getAll().prefix('/engine/node-tasks/').strings(), denied, 'every node\'s tasks');
    await assert.rejects(w.get('/engine/swarm/cluster').string(), denied, 'the cluster object');
    assert.equal(await w.get(nodeSpecKey(W1)).string(), '{}');
    await assert.rejects(w.get(nodeSpecKey(W2)).string(), denied, 'another node\'s spec');
    // Its records: the node record under a lease, the lasting one, its status; the membership read and watched.
    const lease = w.lease(10, { autoKeepAlive: false });
    await lease.put(nodeKey(W1)).value('{"id":"w1"}');
    await lease.put(taskStatusKey(W1, 'web')).value('{}');
    await w.put(memberKey(W1)).value('{}');
    assert.deepEqual(Object.keys(await w.getAll().prefix(NODES_PREFIX).strings()), [nodeKey(W1)]);
    const watcher = await w.watch().prefix(NODES_PREFIX).create();
    await watcher.cancel();
    await assert.rejects(w.put(taskStatusKey(W2, 'web')).value('{}').exec(), denied, 'another node\'s status');
    await assert.rejects(w.put(nodeKey(W2)).value('{}').exec(), denied, 'another node\'s record');
    await assert.rejects(w.put(nodeTaskKey(W1, 'web')).value('{}').exec(), denied, 'its own tasks are the leader\'s to write');
    assert.ok(((await w.cluster.memberList({})).members ?? []).length === 1, 'the member list (where the managers are)');
    await assert.rejects(w.cluster.memberAdd({ peerURLs: ['https://127.0.0.1:1'], isLearner: true }), denied, 'member calls are the managers\'');
    await lease.revoke();
    assert.equal(await m.get(nodeKey(W1)).string(), null, 'its lease revoked, its record went');
  });

  test('promoted a worker is root; demoted it is a worker again; dropped its certificate opens nothing', { timeout: 60_000 }, async () => {
    const m = as(MANAGER);
    const w = as(W1);
    await grantNode(m, W1, 'manager');
    assert.equal(await w.get(nodeTaskKey(W2, 'web')).string(), `for ${W2}`);
    assert.deepEqual((await users(m)).get(W1), ['root']);
    await grantNode(m, W1, 'worker');
    await assert.rejects(w.get(nodeTaskKey(W2, 'web')).string(), denied);
    assert.equal(await w.get(nodeTaskKey(W1, 'web')).string(), `for ${W1}`);
    await dropNode(m, W2);
    await dropNode(m, W2);
    await assert.rejects(as(W2).get(nodeTaskKey(W2, 'web')).string(), denied, 'a node removed reads not even its own');
    assert.deepEqual([...(await users(m)).keys()].sort(), [MANAGER, W1, 'root'].sort());
  });
});
