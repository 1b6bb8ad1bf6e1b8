// Swarm mode on etcd, one manager (issue 61): the docker CLI and docker-py on one daemon that is its
// swarm's only manager. Not in a swarm, the reference's answers; `docker swarm init` makes the CA,
// the node certificate and the managed etcd member and answers the node id; GET /swarm and /info
// tell the truth; a stale update is refused, an update replaces the spec, join tokens rotate; init
// again is refused; the swarm survives a restart and a kill -9 (the member is back, the one the
// killed daemon left stopped); leave needs --force and removes the member and its data; init again
// makes a new swarm. Each daemon advertises a loopback address of its own (the member's ports are
// fixed, 2387 and 2388).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pidAlive } from './harness/processes.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { apiRequest, docker, dockerOk, pythonDocker } from './harness/clients.ts';
import { until } from './harness/wait.ts';

const NOT_MANAGER = 'This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.';
const TOKEN = /^SWMTKN-1-([0-9a-z]{50})-([0-9a-z]{25})$/;
const ADDR = `127.${20 + (process.pid % 200)}.${1 + Math.floor(Math.random() * 250)}.1`;

const alive = pidAlive;

describe('swarm init on one manager (docker CLI, docker-py)', { skip: !existsSync('/usr/bin/etcd') && 'etcd-server is not installed' }, () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  const memberPid = () => Number((() => {
    try {
      return readFileSync(join(d.execRoot, 'swarm-etcd.pid'), 'utf8').trim();
    } catch {
      return '0';
    }
  })());
  const info = async () => (await apiRequest(d, 'GET', '/info')).body.Swarm;
  let nodeId = '';
  let clusterId = '';

  before(async () => {
    d = await startDaemon({ args: ['--label', 'engine.zone=east', '--node-generic-resource', 'gpu=2'] });
  });
  after(async () => {
    const left = d ? memberPid() : 0;
    await d?.cleanup();
    if (left > 0 && alive(left)) process.kill(left, 'SIGKILL');
  }, { timeout: 60_000 });

  test('not in a swarm: the reference answers', async () => {
    const s = await info();
    assert.deepEqual(s, { NodeID: '', NodeAddr: '', LocalNodeState: 'inactive', ControlAvailable: false, Error: '', RemoteManagers: null });
    const ping = await fetchPingHeader(d);
    assert.equal(ping, 'inactive');
    for (const [method, path] of [['GET', '/swarm'], ['GET', '/swarm/unlockkey'], ['POST', '/swarm/update?version=1'], ['GET', '/nodes'], ['GET', '/services']] as const) {
      const r = await apiRequest(d, method, path, method === 'POST' ? '{}' : undefined);
      assert.equal(r.status, 503, `${method} ${path}`);
      assert.equal(r.body.message, NOT_MANAGER, `${method} ${path}`);
    }
    const leave = await apiRequest(d, 'POST', '/swarm/leave');
    assert.deepEqual([leave.status, leave.body.message], [503, 'This node is not part of a swarm']);
    const bad = await apiRequest(d, 'POST', '/swarm/init', JSON.stringify({ ListenAddr: 'nonsense' }));
    assert.deepEqual([bad.status, bad.body.message], [400, 'listen address must be an IP address or network interface (with optional port number)']);
    const badName = await apiRequest(d, 'POST', '/swarm/init', JSON.stringify({ ListenAddr: `${ADDR}:2377`, AdvertiseAddr: ADDR, Spec: { Name: 'other' } }));
    assert.deepEqual([badName.status, badName.body.message], [400, 'swarm spec must be named "default"']);
    assert.equal((await info()).LocalNodeState, 'inactive', 'a refused init changes nothing');
    assert.equal(existsSync(join(d.dataRoot, 'swarm')), false);
  });

  test('docker swarm init: the node id, the member, GET /swarm and /info', { timeout: 120_000 }, async () => {
    const out = await dk('swarm', 'init', '--advertise-addr', ADDR, '--listen-addr', `${ADDR}:2377`);
    const m = /current node \(([a-z0-9]{25})\) is now a manager/.exec(out);
    assert.ok(m, out);
    nodeId = m[1]!;
    assert.match(out, new RegExp(`docker swarm join --token SWMTKN-1-[0-9a-z]{50}-[0-9a-z]{25} ${ADDR.replace(/\./g, '\\.')}:2377`));
    assert.ok(memberPid() > 0 && alive(memberPid()), 'the etcd member runs');
    for (const f of ['swarm-node.crt', 'swarm-node.key', 'swarm-root-ca.crt']) assert.ok(existsSync(join(d.dataRoot, 'swarm', 'certificates', f)), f);
    // The listen address serves TLS with the node's certificate; a peer with one of the swarm's is known.
    const cert = (n: string) => readFileSync(join(d.dataRoot, 'swarm', 'certificates', n), 'utf8');
    const peer = await listenerPeer(ADDR, 2377, cert('swarm-root-ca.crt'), { cert: cert('swarm-node.crt'), key: cert('swarm-node.key') });
    assert.match(peer.subject, new RegExp(`CN=${nodeId}`));
    assert.match(peer.subject, /OU=swarm-manager/);
    assert.equal(peer.status, 200);

    const sw = (await apiRequest(d, 'GET', '/swarm')).body;
    clusterId = sw.ID;
    assert.match(sw.ID, /^[a-z0-9]{25}$/);
    assert.ok(sw.Version.Index > 0);
    assert.deepEqual(sw.Spec, {
      Name: 'default',
      Labels: {},
      Orchestration: { TaskHistoryRetentionLimit: 5 },
      Raft: { SnapshotInterval: 10000, KeepOldSnapshots: 0, LogEntriesForSlowFollowers: 500, ElectionTick: 10, HeartbeatTick: 1 },
      Dispatcher: { HeartbeatPeriod: 5000000000 },
      CAConfig: { NodeCertExpiry: 7776000000000000 },
      TaskDefaults: {},
      EncryptionConfig: { AutoLockManagers: false },
    });
    assert.equal(sw.TLSInfo.CertIssuerSubject, 'MBMxETAPBgNVBAMTCHN3YXJtLWNh');
    assert.match(sw.TLSInfo.TrustRoot, /^-----BEGIN CERTIFICATE-----/);
    assert.deepEqual([sw.DefaultAddrPool, sw.SubnetSize, sw.DataPathPort], [['10.0.0.0/8'], 24, 4789]);
    const w = TOKEN.exec(sw.JoinTokens.Worker);
    const mg = TOKEN.exec(sw.JoinTokens.Manager);
    assert.ok(w && mg && w[1] === mg[1] && w[2] !== mg[2], JSON.stringify(sw.JoinTokens));

    const s = await until('the node active in /info', async () => {
      const x = await info();
      return x.LocalNodeState === 'active' && x.Nodes ? x : undefined;
    });
    assert.equal(s.NodeID, nodeId);
    assert.equal(s.NodeAddr, ADDR);
    assert.equal(s.ControlAvailable, true);
    assert.deepEqual([s.Nodes, s.Managers], [1, 1]);
    assert.equal(s.Cluster.ID, clusterId);
    assert.equal(s.Cluster.JoinTokens, undefined);
    assert.deepEqual(s.Cluster.TLSInfo, sw.TLSInfo);
    assert.equal(await fetchPingHeader(d), 'active/manager');
    assert.equal(await dk('info', '--format', '{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}} {{.Swarm.Cluster.ID}}'), `active true ${clusterId}`);

    const again = await docker(d, ['swarm', 'init', '--advertise-addr', ADDR]);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /This node is already part of a swarm\. Use "docker swarm leave" to leave this swarm and join another one\./);
  });

  test('update: a stale version refused, the spec replaced, tokens rotated (CLI and docker-py)', { timeout: 120_000 }, async () => {
    const before = (await apiRequest(d, 'GET', '/swarm')).body;
    const stale = await apiRequest(d, 'POST', `/swarm/update?version=${before.Version.Index - 1}`, JSON.stringify(before.Spec));
    assert.deepEqual([stale.status, stale.body.message], [500, 'rpc error: code = Unknown desc = update out of sequence']);
    const badVersion = await apiRequest(d, 'POST', '/swarm/update?version=abc', JSON.stringify(before.Spec));
    assert.deepEqual([badVersion.status, badVersion.body.message], [400, `invalid swarm version 'abc': strconv.ParseUint: parsing "abc": invalid syntax`]);
    const badName = await apiRequest(d, 'POST', `/swarm/update?version=${before.Version.Index}`, JSON.stringify({ Name: 'other' }));
    assert.deepEqual([badName.status, badName.body.message], [400, 'swarm spec must be named "default"']);
    assert.equal((await apiRequest(d, 'GET', '/swarm')).body.Version.Index, before.Version.Index, 'refused updates change nothing');

    await dk('swarm', 'update', '--task-history-limit', '3');
    const after1 = (await apiRequest(d, 'GET', '/swarm')).body;
    assert.equal(after1.Spec.Orchestration.TaskHistoryRetentionLimit, 3);
    assert.equal(after1.Spec.Raft.SnapshotInterval, 10000, 'the CLI sends the whole spec back');
    assert.ok(after1.Version.Index > before.Version.Index);

    const rotated = await dk('swarm', 'join-token', '--rotate', '-q', 'worker');
    const after2 = (await apiRequest(d, 'GET', '/swarm')).body;
    assert.equal(rotated, after2.JoinTokens.Worker);
    assert.notEqual(after2.JoinTokens.Worker, after1.JoinTokens.Worker);
    assert.equal(after2.JoinTokens.Manager, after1.JoinTokens.Manager);
    assert.equal(TOKEN.exec(after2.JoinTokens.Worker)![1], TOKEN.exec(after1.JoinTokens.Worker)![1], 'the same CA digest');

    // An update replaces the spec: what is left out becomes zero (as dockerd 20.10).
    const py = await pythonDocker(d, `
      s = client.swarm
      s.reload()
      api.update_swarm(version=s.attrs['Version']['Index'], swarm_spec={'Name': 'default'}, rotate_manager_token=True)
      s.reload()
      print(json.dumps(s.attrs))
    `);
    const after3 = JSON.parse(py);
    assert.notEqual(after3.JoinTokens.Manager, after2.JoinTokens.Manager);
    assert.equal(after3.JoinTokens.Worker, after2.JoinTokens.Worker);
    assert.deepEqual(after3.Spec.Orchestration, { TaskHistoryRetentionLimit: 0 });
    assert.deepEqual(after3.Spec.Dispatcher, {});
    const key = await apiRequest(d, 'GET', '/swarm/unlockkey');
    assert.deepEqual([key.status, key.body], [200, { UnlockKey: '' }]);
  });

  test('nodes: ls, inspect, update (labels, availability) with filters; the refusals (CLI and docker-py)', { timeout: 120_000 }, async () => {
    const ls = await dk('node', 'ls', '--format', '{{.ID}} {{.Self}} {{.Status}} {{.Availability}} {{.ManagerStatus}}');
    assert.equal(ls, `${nodeId} true Ready Active Leader`);
    const n = JSON.parse(await dk('node', 'inspect', 'self'))[0];
    const sw = (await apiRequest(d, 'GET', '/swarm')).body;
    assert.equal(n.ID, nodeId);
    assert.deepEqual(n.Spec, { Labels: {}, Role: 'manager', Availability: 'active' });
    assert.deepEqual(n.Description.TLSInfo, sw.TLSInfo);
    assert.deepEqual(n.Description.Engine.Labels, { 'engine.zone': 'east' });
    assert.deepEqual(n.Description.Resources.GenericResources, [{ DiscreteResourceSpec: { Kind: 'gpu', Value: 2 } }]);
    assert.ok(n.Description.Resources.NanoCPUs > 0 && n.Description.Resources.MemoryBytes > 0);
    assert.deepEqual(n.Status, { State: 'ready', Addr: ADDR });
    assert.deepEqual(n.ManagerStatus, { Leader: true, Reachability: 'reachable', Addr: `${ADDR}:2377` });
    const hostname = n.Description.Hostname as string;
    assert.equal(JSON.parse(await dk('node', 'inspect', hostname))[0].ID, nodeId, 'by hostname');
    assert.equal(JSON.parse(await dk('node', 'inspect', nodeId.slice(0, 5)))[0].ID, nodeId, 'by id prefix');
    assert.equal((await apiRequest(d, 'GET', '/nodes/nosuchnode')).status, 404);

    // The CLI resolves `self` for inspect only (the reference answers `node self not found` to the rest).
    await dk('node', 'update', '--label-add', 'zone=a', '--availability', 'drain', nodeId);
    const u = JSON.parse(await dk('node', 'inspect', 'self'))[0];
    assert.deepEqual(u.Spec, { Labels: { zone: 'a' }, Role: 'manager', Availability: 'drain' });
    assert.ok(u.Version.Index > n.Version.Index);
    assert.equal(await dk('node', 'ls', '--format', '{{.Availability}}'), 'Drain');

    const q = (...f: string[]) => dk('node', 'ls', '-q', ...f.flatMap((x) => ['-f', x]));
    assert.equal(await q('node.label=zone=a'), nodeId);
    assert.equal(await q('node.label=zone=b'), '');
    assert.equal(await q('label=engine.zone=east', 'role=manager', 'membership=accepted'), nodeId);
    assert.equal(await q('role=worker'), '');
    assert.equal(await q(`name=${hostname.slice(0, 3)}`), nodeId);
    assert.equal(await q(`id=${nodeId.slice(0, 4)}`), nodeId);
    const badRole = await docker(d, ['node', 'ls', '-f', 'role=boss']);
    assert.match(badRole.stderr, /Invalid role filter: 'boss'/);
    const badKey = await docker(d, ['node', 'ls', '-f', 'nope=1']);
    assert.match(badKey.stderr, /Invalid filter 'nope'/);
    const badVersion = await apiRequest(d, 'POST', `/nodes/${nodeId}/update?version=abc`, JSON.stringify(u.Spec));
    assert.deepEqual([badVersion.status, badVersion.body.message], [400, `invalid node version 'abc': strconv.ParseUint: parsing "abc": invalid syntax`]);
    const noRole = await apiRequest(d, 'POST', `/nodes/${nodeId}/update?version=${u.Version.Index}`, JSON.stringify({ Availability: 'active' }));
    assert.deepEqual([noRole.status, noRole.body.message], [400, 'invalid Role: ""']);

    const stale = await apiRequest(d, 'POST', `/nodes/${nodeId}/update?version=${n.Version.Index}`, JSON.stringify(u.Spec));
    assert.deepEqual([stale.status, stale.body.message], [500, 'rpc error: code = Unknown desc = update out of sequence']);
    const badAvail = await apiRequest(d, 'POST', `/nodes/${nodeId}/update?version=${u.Version.Index}`, JSON.stringify({ ...u.Spec, Availability: 'bogus' }));
    assert.deepEqual([badAvail.status, badAvail.body.message], [400, 'invalid Availability: "bogus"']);
    const demote = await docker(d, ['node', 'demote', hostname]);
    assert.notEqual(demote.code, 0);
    assert.match(demote.stderr, /attempting to demote the last manager of the swarm/);
    for (const args of [['node', 'rm', nodeId], ['node', 'rm', '--force', nodeId]]) {
      const rm = await docker(d, args);
      assert.notEqual(rm.code, 0);
      assert.match(rm.stderr, new RegExp(`node ${nodeId} is a cluster manager and is a member of the raft cluster\\. It must be demoted to worker before removal`));
    }
    assert.deepEqual(JSON.parse(await dk('node', 'inspect', 'self'))[0].Spec, u.Spec, 'refused changes change nothing');

    const py = await pythonDocker(d, `
      nodes = client.nodes.list(filters={'role': 'manager'})
      n = nodes[0]
      spec = n.attrs['Spec']
      spec['Availability'] = 'active'
      spec['Labels'] = {}
      n.update(spec)
      n.reload()
      print(json.dumps([len(nodes), n.id, n.attrs['Spec']]))
    `);
    assert.deepEqual(JSON.parse(py), [1, nodeId, { Labels: {}, Role: 'manager', Availability: 'active' }]);
  });

  test('the swarm survives a restart and a kill -9: the member is back, the old one stopped', { timeout: 180_000 }, async () => {
    const first = memberPid();
    await d.restart();
    const s = await until('active again after a restart', async () => ((await info()).LocalNodeState === 'active' ? info() : undefined), 60_000);
    assert.deepEqual([s.NodeID, s.Cluster?.ID], [nodeId, clusterId]);
    assert.equal(alive(first), false, 'the member stopped with the daemon');
    const second = memberPid();
    assert.ok(second > 0 && alive(second));

    await d.stop({ signal: 'SIGKILL' });
    assert.ok(alive(second), 'a killed daemon leaves its member running');
    await d.restart();
    const s2 = await until('active again after a kill -9', async () => ((await info()).LocalNodeState === 'active' ? info() : undefined), 60_000);
    assert.deepEqual([s2.NodeID, s2.Cluster?.ID], [nodeId, clusterId]);
    await until('the member the killed daemon left stopped', async () => !alive(second), 20_000);
    assert.ok(alive(memberPid()));
    assert.equal((await apiRequest(d, 'GET', '/swarm')).body.Spec.Orchestration.TaskHistoryRetentionLimit, 0, 'the cluster object kept');
  });

  test('init --force-new-cluster on the manager: a cluster of one again from its data', { timeout: 120_000 }, async () => {
    const before = (await apiRequest(d, 'GET', '/swarm')).body;
    const r = await apiRequest(d, 'POST', '/swarm/init', JSON.stringify({ ListenAddr: `${ADDR}:2377`, AdvertiseAddr: ADDR, ForceNewCluster: true }));
    assert.deepEqual([r.status, r.body], [200, nodeId]);
    const after = (await apiRequest(d, 'GET', '/swarm')).body;
    assert.deepEqual([after.ID, after.JoinTokens], [before.ID, before.JoinTokens]);
    assert.equal((await info()).LocalNodeState, 'active');
  });

  test('leave needs --force on the last manager; it removes the member and its data; init again makes a new swarm', { timeout: 120_000 }, async () => {
    const noForce = await docker(d, ['swarm', 'leave']);
    assert.notEqual(noForce.code, 0);
    assert.match(noForce.stderr, /You are attempting to leave the swarm on a node that is participating as a manager\. Removing the last manager erases all current state of the swarm\. Use `--force` to ignore this message\./);
    const pid = memberPid();
    await dk('swarm', 'leave', '--force');
    assert.equal(alive(pid), false);
    await assert.rejects(listenerPeer(ADDR, 2377, ''), 'the listener is gone');
    assert.equal(existsSync(join(d.dataRoot, 'swarm')), false);
    assert.equal((await info()).LocalNodeState, 'inactive');
    assert.equal((await apiRequest(d, 'GET', '/swarm')).status, 503);

    const py = await pythonDocker(d, `
      print(client.swarm.init(advertise_addr='${ADDR}', listen_addr='${ADDR}:2377'))
    `);
    const id2 = py.trim();
    assert.match(id2, /^[a-z0-9]{25}$/);
    assert.notEqual(id2, nodeId);
    const sw = (await apiRequest(d, 'GET', '/swarm')).body;
    assert.notEqual(sw.ID, clusterId);
    await dk('swarm', 'leave', '--force');
  });
});

/** The listener's certificate subject and its answer to GET /v1/node with `client`'s certificate. */
async function listenerPeer(host: string, port: number, ca: string, client?: { cert: string; key: string }): Promise<{ subject: string; status: number }> {
  const { request } = await import('node:https');
  return await new Promise((resolve, reject) => {
    const req = request({ host, port, path: '/v1/node', ca, rejectUnauthorized: !!ca, ...(client ?? {}), timeout: 5000 }, (res) => {
      const c = (res.socket as import('node:tls').TLSSocket).getPeerX509Certificate();
      res.resume();
      resolve({ subject: c?.subject.replace(/\n/g, ',') ?? '', status: res.statusCode ?? 0 });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

async function fetchPingHeader(d: DaemonHandle): Promise<string | undefined> {
  const { request } = await import('node:http');
  return await new Promise((resolve, reject) => {
    const req = request({ socketPath: d.socket, path: '/_ping' }, (res) => {
      res.resume();
      resolve(res.headers.swarm as string | undefined);
    });
    req.on('error', reject);
    req.end();
  });
}
