// The managed etcd member of a swarm manager (drivers/swarm/etcd-member.ts) with Debian's etcd and
// certificates from the swarm's CA (drivers/swarm/ca.ts): mTLS for clients (one without a
// certificate of the CA is refused), data kept across a stop and a start, a member a killed daemon
// left running stopped by the next one (its PID file) before it starts its own, --force-new-cluster
// from the node's data, and remove() taking data and certificates.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { Etcd3 } from 'etcd3';
import { issueNodeCert, makeRootCa, type KeyPair } from '../../drivers/swarm/ca.ts';
import { EtcdMember, type EtcdMemberOptions } from '../../drivers/swarm/etcd-member.ts';
import { pidAlive } from './harness/processes.ts';
import { freePort } from './harness/free-port.ts';

const NODE = 'swarmmember0000000000node';
const CLUSTER = 'swarmcluster000000000test';
const log = pino({ level: 'silent' });

const alive = pidAlive;

describe('the swarm etcd member', { skip: !existsSync('/usr/bin/etcd') && 'etcd-server is not installed' }, () => {
  let dir: string;
  let ca: KeyPair;
  let node: KeyPair;
  let opts: EtcdMemberOptions;
  const members: EtcdMember[] = [];
  const member = (extra: Partial<EtcdMemberOptions> = {}) => {
    const m = new EtcdMember({ ...opts, ...extra });
    members.push(m);
    return m;
  };
  const client = (m: EtcdMember, withCert = true) =>
    new Etcd3({ hosts: [m.clientUrl], dialTimeout: 2000, credentials: { rootCertificate: Buffer.from(ca.certPem), ...(withCert ? { certChain: Buffer.from(node.certPem), privateKey: Buffer.from(node.keyPem) } : {}) } });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'swarm-member-'));
    ca = await makeRootCa();
    node = await issueNodeCert(ca, { nodeId: NODE, clusterId: CLUSTER, role: 'swarm-manager', hosts: ['127.0.0.1'] });
    const clientPort = await freePort();
    let peerPort = await freePort();
    while (peerPort === clientPort) peerPort = await freePort();
    opts = { name: NODE, dir: join(dir, 'swarm'), runDir: join(dir, 'run'), advertiseHost: '127.0.0.1', clientPort, peerPort, tls: { caPem: ca.certPem, ...node }, clusterToken: CLUSTER, log };
  });
  after(async () => {
    for (const m of members) await m.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }, { timeout: 60_000 });

  test('mTLS for clients; the data is kept across a stop and a start', { timeout: 90_000 }, async () => {
    const m = member();
    await m.start();
    assert.ok(m.pid > 0);
    const c = client(m);
    await c.put('/swarm/test').value('kept');
    c.close();
    const noCert = client(m, false);
    await assert.rejects(noCert.get('/swarm/test').string(), 'a client without a certificate of the CA is refused');
    noCert.close();
    await m.stop();
    assert.equal(m.pid, 0);
    assert.equal(await m.healthy(500), false);
    await m.start();
    const c2 = client(m);
    assert.equal(await c2.get('/swarm/test').string(), 'kept');
    c2.close();
  });

  test('a member a killed daemon left running is stopped by the next start, which keeps the data', { timeout: 90_000 }, async () => {
    const left = members.at(-1)!;
    const oldPid = left.pid;
    assert.ok(oldPid > 0, 'the member of the previous case still runs');
    // The daemon "died": a new one (a new EtcdMember) starts the member again.
    const m = member();
    await m.start();
    assert.equal(alive(oldPid), false, 'the leftover was stopped');
    assert.notEqual(m.pid, oldPid);
    const c = client(m);
    assert.equal(await c.get('/swarm/test').string(), 'kept');
    c.close();
    await m.stop();
  });

  test('--force-new-cluster starts from the node data; remove() takes data and certificates', { timeout: 90_000 }, async () => {
    const m = member({ forceNewCluster: true });
    await m.start();
    const c = client(m);
    assert.equal(await c.get('/swarm/test').string(), 'kept');
    const members = await c.cluster.memberList({});
    assert.equal(members.members.length, 1);
    c.close();
    await m.remove();
    assert.equal(existsSync(join(opts.dir, 'etcd')), false);
    assert.equal(existsSync(join(opts.dir, 'etcd-tls')), false);
  });
});
