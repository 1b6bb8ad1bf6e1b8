// Swarm mode on an external etcd (--cluster-store, issue 61, 2), with the docker CLI: two daemons
// on one etcd are in no swarm until `docker swarm init` on one writes the swarm into the store; the
// other joins it with the worker token (`docker swarm join`): a worker — no control, `active/worker`
// in /_ping, the manager routes refused in the reference's words, never the leader, no ManagerStatus
// in the manager's `docker node ls`; a bad token is refused and changes nothing; init on a node of
// that store while the swarm is there is refused; the worker leaves without --force, the last
// manager needs it and takes the swarm's keys with it; init then works again.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, dockerOk } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';
import { until } from './harness/wait.ts';
import { freePort } from './harness/free-port.ts';

const execFileP = promisify(execFile);
const WORKER_REFUSAL = "This node is not a swarm manager. Worker nodes can't be used to view or modify cluster state. Please run this command on a manager node or promote the current node to a manager.";

function pingSwarm(d: DaemonHandle): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: d.socket, path: '/_ping' }, (res) => {
      res.resume();
      resolve(res.headers.swarm as string | undefined);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('swarm mode on an external etcd (--cluster-store)', { skip: !existsSync('/usr/bin/etcd') && 'etcd-server is not installed' }, () => {
  let etcd: EtcdHandle;
  let a: DaemonHandle;
  let b: DaemonHandle;
  const dka = dockerOk(() => a);
  const dkb = dockerOk(() => b);
  const swarmKeys = async () => (await execFileP('etcdctl', ['--endpoints', etcd.endpoints.join(','), 'get', '/engine/swarm/', '--prefix', '--keys-only'], { env: { ...process.env, ETCDCTL_API: '3' } })).stdout.split('\n').filter(Boolean);
  let aId = '';

  before(async () => {
    etcd = await startEtcd();
    const args = ['--cluster-store', `etcd://${etcd.clientUrl.replace(/^http:\/\//, '')}`, '--cluster-store-opt', 'discovery.ttl=3'];
    [a, b] = await Promise.all([startDaemon({ args }), startDaemon({ args })]);
  }, { timeout: 180_000 });
  after(async () => {
    await a?.cleanup().catch(() => {});
    await b?.cleanup().catch(() => {});
    await etcd?.cleanup();
  }, { timeout: 180_000 });

  test('in no swarm until init; init writes the swarm into the store; another init there is refused', async () => {
    for (const d of [a, b]) {
      assert.equal((await apiRequest(d, 'GET', '/info')).body.Swarm.LocalNodeState, 'inactive');
      assert.equal(await pingSwarm(d), 'inactive');
    }
    assert.deepEqual(await swarmKeys(), []);
    const out = await dka('swarm', 'init', '--advertise-addr', '127.0.0.1', '--listen-addr', `127.0.0.1:${await freePort()}`);
    aId = /current node \(([a-z0-9]{25})\)/.exec(out)![1]!;
    assert.ok((await swarmKeys()).includes('/engine/swarm/cluster'));
    assert.equal(existsSync(`${a.dataRoot}/swarm/etcd`), false, 'no managed member on an external etcd');
    const again = await docker(b, ['swarm', 'init', '--advertise-addr', '127.0.0.1', '--listen-addr', `127.0.0.1:${await freePort()}`]);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /the cluster store holds a swarm already/);
    assert.equal((await apiRequest(b, 'GET', '/info')).body.Swarm.LocalNodeState, 'inactive');
  });

  test('join: a bad token refused; the worker token makes a worker', async () => {
    const sw = (await apiRequest(a, 'GET', '/swarm')).body;
    const bad = await docker(b, ['swarm', 'join', '--token', 'SWMTKN-1-nope', '127.0.0.1:2377']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /invalid join token/);
    const forged = sw.JoinTokens.Worker.replace(/-[0-9a-z]{25}$/, `-${'0'.repeat(25)}`);
    const wrong = await docker(b, ['swarm', 'join', '--token', forged, '127.0.0.1:2377']);
    assert.notEqual(wrong.code, 0);
    assert.equal((await apiRequest(b, 'GET', '/info')).body.Swarm.LocalNodeState, 'inactive', 'refused joins change nothing');

    const out = await dkb('swarm', 'join', '--token', sw.JoinTokens.Worker, '--advertise-addr', '127.0.0.1', '127.0.0.1:2377');
    assert.match(out, /This node joined a swarm as a worker/);
    const info = (await apiRequest(b, 'GET', '/info')).body.Swarm;
    assert.equal(info.LocalNodeState, 'active');
    assert.equal(info.ControlAvailable, false);
    assert.equal(info.Cluster, undefined);
    assert.equal(await pingSwarm(b), 'active/worker');
    for (const path of ['/swarm', '/nodes']) {
      const r = await apiRequest(b, 'GET', path);
      assert.deepEqual([r.status, r.body.message], [503, WORKER_REFUSAL], path);
    }
    const rows = await until('the manager lists the worker', async () => {
      const ls = (await dka('node', 'ls', '--format', '{{.ID}} {{.Status}} {{.ManagerStatus}}')).split('\n').filter(Boolean);
      return ls.length === 2 && ls;
    });
    assert.ok(rows.includes(`${aId} Ready Leader`), rows.join(' | '));
    const worker = rows.find((r) => !r.startsWith(aId))!;
    assert.match(worker, /^[a-z0-9]{25} Ready ?$/, 'a worker has no manager status');
    const w = JSON.parse(await dka('node', 'inspect', worker.split(' ')[0]!))[0];
    assert.equal(w.Spec.Role, 'worker');
    assert.equal(w.ManagerStatus, undefined);
    assert.equal((await apiRequest(a, 'GET', '/info')).body.Swarm.Managers, 1);
    assert.equal((await apiRequest(a, 'GET', '/info')).body.Swarm.Nodes, 2);
  });

  test('the worker leaves without --force; the last manager needs it and takes the swarm with it; init works again', async () => {
    await dkb('swarm', 'leave');
    assert.equal((await apiRequest(b, 'GET', '/info')).body.Swarm.LocalNodeState, 'inactive');
    await until('the manager lists itself only', async () => (await dka('node', 'ls', '-q')) === aId);
    const refused = await docker(a, ['swarm', 'leave']);
    assert.match(refused.stderr, /Removing the last manager erases all current state of the swarm/);
    await dka('swarm', 'leave', '--force');
    assert.deepEqual(await swarmKeys(), []);
    await dkb('swarm', 'init', '--advertise-addr', '127.0.0.1', '--listen-addr', `127.0.0.1:${await freePort()}`);
    assert.equal((await apiRequest(b, 'GET', '/info')).body.Swarm.ControlAvailable, true);
    await dkb('swarm', 'leave', '--force');
  });
});
