// Cluster membership on etcd, on one machine: one etcd (temporary data directory, free loopback
// ports, stopped by its PID) and three daemons (own roots, sockets and chains) started with
// --cluster-store, in no swarm until `swarm init` on one and `swarm join` on the others. Node records with their resources under leases; `docker node ls` and `docker
// node inspect self` against each daemon; /info's Swarm section and /_ping's Swarm header; labels
// following a reload; the leader killed and another elected; etcd stopped with local work
// untouched, and the nodes registering again when it returns; a malformed store URL refused, an
// unreachable etcd not (an init while it does not answer refused, changing nothing).
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { join } from 'node:path';
import { apiRequest, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { REPO, startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';
import { until } from './harness/wait.ts';
import { freePort } from './harness/free-port.ts';
import { sample } from './harness/metrics-text.ts';
import { swarmInit, swarmJoin, type SwarmTokens } from './harness/swarm.ts';

const execFileP = promisify(execFile);
const ENGINED = process.env.ENGINE_E2E_ENGINED || join(REPO, 'bin', 'engined');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TTL = 3;

async function etcdctl(e: EtcdHandle, ...args: string[]): Promise<string> {
  const { stdout } = await execFileP('etcdctl', ['--endpoints', e.endpoints.join(','), ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
  return stdout;
}

async function nodeRecords(e: EtcdHandle): Promise<Array<Record<string, any>>> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const out = await etcdctl(e, 'get', '/engine/nodes/', '--prefix', '--print-value-only');
  return out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
}

function pingSwarm(d: DaemonHandle): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: d.socket, path: '/_ping' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.headers.swarm as string | undefined));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('cluster on etcd', { skip: !existsSync('/usr/bin/etcd') && 'etcd-server is not installed (hack/install.sh installs it)' }, () => {
  let etcd: EtcdHandle;
  const ds: DaemonHandle[] = [];
  let imgs: TestImages;
  let tokens: SwarmTokens;
  const dk = (d: DaemonHandle) => dockerOk(() => d);
  /** Each daemon's --metrics-addr port, by index in ds. */
  const ports: number[] = [];
  const withMetrics = async (extra: string[]) => {
    const port = await freePort();
    ports.push(port);
    return [...extra, '--experimental', '--metrics-addr', `127.0.0.1:${port}`];
  };
  const args = (extra: string[] = []) => ['--cluster-store', `etcd://${etcd.clientUrl.replace(/^http:\/\//, '')}`, '--cluster-store-opt', `discovery.ttl=${TTL}`, ...extra];

  before(async () => {
    etcd = await startEtcd();
  }, { timeout: 180_000 });
  after(async () => {
    for (const d of ds) await d.cleanup().catch(() => {});
    await etcd?.cleanup();
  }, { timeout: 180_000 });

  test('a malformed --cluster-store refuses the start; an unreachable etcd does not; the node is in no swarm until init, refused while etcd does not answer', async () => {
    const bad = spawnSync(ENGINED, ['--cluster-store', 'http://127.0.0.1:1', '--validate'], { encoding: 'utf8' });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /invalid --cluster-store "http:\/\/127.0.0.1:1": expected etcd:\/\/HOST:PORT\[,HOST:PORT\]/);
    const opt = spawnSync(ENGINED, ['--cluster-store', 'etcd://127.0.0.1:2379', '--cluster-store-opt', 'kv.path=/x', '--validate'], { encoding: 'utf8' });
    assert.notEqual(opt.status, 0);
    assert.match(opt.stderr, /invalid --cluster-store-opt kv.path/);

    await etcd.stop();
    // Labels in the file (a reload changes them below; a flag would conflict with the file).
    const d = await startDaemon({ args: args(await withMetrics(['--node-generic-resource', 'gpu=2', '--node-generic-resource', 'ssd=fast'])), daemonJson: { labels: ['zone=a'] } });
    ds.push(d);
    assert.equal(await dk(d)('info', '--format', '{{.Swarm.LocalNodeState}}'), 'inactive');
    assert.equal(await pingSwarm(d), 'inactive');
    const refused = await apiRequest(d, 'POST', '/swarm/init', JSON.stringify({ AdvertiseAddr: '127.0.0.1', ListenAddr: `127.0.0.1:${await freePort()}` }));
    assert.equal(refused.status, 503, refused.text);
    assert.equal(await dk(d)('info', '--format', '{{.Swarm.LocalNodeState}}'), 'inactive', 'a refused init changes nothing');
    await etcd.start();
    tokens = await swarmInit(d);
    assert.equal(await dk(d)('info', '--format', '{{.Swarm.LocalNodeState}}'), 'active');
    imgs = await testImages();
    await dk(d)('load', '-i', imgs.dockerArchive);
  });

  test('three nodes: records under leases with their resources; docker node ls and node inspect self against each; one leader', async () => {
    ds.push(await startDaemon({ args: args(await withMetrics(['--label', 'zone=b'])) }));
    ds.push(await startDaemon({ args: args(await withMetrics(['--label', 'zone=b', '--node-generic-resource', 'gpu=1'])) }));
    for (const d of ds.slice(1)) await swarmJoin(d, tokens.manager);
    const records = await until('three node records', async () => {
      const r = await nodeRecords(etcd);
      return r.length === 3 && r;
    });
    const first = records.find((r) => r.labels.zone === 'a')!;
    assert.deepEqual(first.genericResources, [{ DiscreteResourceSpec: { Kind: 'gpu', Value: 2 } }, { NamedResourceSpec: { Kind: 'ssd', Value: 'fast' } }]);
    assert.ok(first.nanoCpus > 0 && first.memoryBytes > 0 && first.hostname && first.engineVersion && first.addr);
    assert.match(first.id, /^[a-z0-9]{25}$/);
    const leases = await etcdctl(etcd, 'lease', 'list');
    assert.match(leases, /found \d+ leases/);

    for (const d of ds) {
      const ls = await until('docker node ls shows three nodes', async () => {
        const out = await dk(d)('node', 'ls', '--format', '{{.ID}} {{.Self}} {{.Status}} {{.Availability}} {{.ManagerStatus}}');
        const rows = out.split('\n').filter(Boolean);
        return rows.length === 3 && rows;
      });
      assert.equal(ls.filter((r) => / true /.test(r)).length, 1, 'self marked once');
      assert.equal(ls.filter((r) => / Leader$/.test(r)).length, 1, `one leader: ${ls.join(' | ')}`);
      assert.ok(ls.every((r) => / Ready Active /.test(r)), ls.join(' | '));
      const self = JSON.parse(await dk(d)('node', 'inspect', 'self'))[0];
      const info = JSON.parse(await dk(d)('info', '--format', '{{json .Swarm}}'));
      assert.equal(self.ID, info.NodeID);
      assert.equal(info.LocalNodeState, 'active');
      assert.equal(info.ControlAvailable, true);
      assert.equal(info.Nodes, 3);
      assert.equal(info.Managers, 3);
      assert.equal(self.Status.State, 'ready');
      assert.equal(self.Spec.Role, 'manager');
      assert.ok(self.Description.Resources.NanoCPUs > 0);
      assert.equal(await pingSwarm(d), 'active/manager');
    }
    const gpuNode = JSON.parse(await dk(ds[2]!)('node', 'inspect', 'self'))[0];
    assert.deepEqual(gpuNode.Description.Resources.GenericResources, [{ DiscreteResourceSpec: { Kind: 'gpu', Value: 1 } }]);
    assert.deepEqual(gpuNode.Description.Engine.Labels, { zone: 'b' });
    assert.match(await dk(ds[0]!)('info'), /Swarm: active/, 'docker info prints the swarm section without failing');
  });

  test("the cluster's loops are controllers on the runner: controller-runtime metrics on every node; the orchestrator reconciles only on the leader", async () => {
    const scrape = async (i: number) => (await fetch(`http://127.0.0.1:${ports[i]}/metrics`)).text();
    const total = (text: string, controller: string) =>
      ['success', 'requeue_after', 'error'].reduce((n, result) => n + (sample(text, 'controller_runtime_reconcile_total', { controller, result }) ?? 0), 0);
    const ids = await Promise.all(ds.map(async (d) => JSON.parse(await dk(d)('info', '--format', '{{json .Swarm.NodeID}}')) as string));
    const leaderId = (await dk(ds[0]!)('node', 'ls', '--format', '{{.ID}} {{.ManagerStatus}}')).split('\n').find((r) => r.endsWith(' Leader'))!.split(' ')[0]!;
    const first = await Promise.all(ds.map((_, i) => scrape(i)));
    await sleep(4500); // two of the orchestrator's and the task runner's 2-second resyncs
    const later = await Promise.all(ds.map((_, i) => scrape(i)));
    for (let i = 0; i < ds.length; i++) {
      const text = later[i]!;
      assert.ok(total(text, 'cluster-membership') >= 1, `node ${i}: membership reconciled`);
      assert.ok(total(text, 'swarm-tasks') > total(first[i]!, 'swarm-tasks'), `node ${i}: the task runner resyncs`);
      assert.notEqual(sample(text, 'workqueue_adds_total', { name: 'swarm-tasks' }), undefined);
      const orchestrated = total(text, 'swarm-orchestrator') - total(first[i]!, 'swarm-orchestrator');
      if (ids[i] === leaderId) assert.ok(orchestrated >= 2, `the leader's orchestrator resyncs (${orchestrated})`);
      else assert.equal(orchestrated, 0, `node ${i} does not lead: its orchestrator does not run`);
    }
  });

  test('labels follow a reload: the record is written again', async () => {
    const d = ds[0]!;
    writeFileSync(d.configFile, JSON.stringify({ labels: ['zone=a', 'tier=gold'] }));
    process.kill(d.pid, 'SIGHUP');
    await until('the record carries the new label', async () => (await nodeRecords(etcd)).some((r) => r.labels.tier === 'gold'));
    const self = JSON.parse(await dk(d)('node', 'inspect', 'self'))[0];
    assert.deepEqual(self.Description.Engine.Labels, { zone: 'a', tier: 'gold' });
  });

  test('the leader killed: another node is elected; the killed node shows down', async () => {
    const rows = (await dk(ds[0]!)('node', 'ls', '--format', '{{.ID}} {{.Self}} {{.ManagerStatus}}')).split('\n');
    const leaderId = rows.find((r) => r.endsWith(' Leader'))!.split(' ')[0]!;
    const ids = await Promise.all(ds.map(async (d) => JSON.parse(await dk(d)('info', '--format', '{{json .Swarm.NodeID}}'))));
    const li = ids.indexOf(leaderId);
    assert.ok(li >= 0);
    await ds[li]!.stop({ signal: 'SIGKILL' });
    const other = ds.find((_, i) => i !== li)!;
    const next = await until('another leader', async () => {
      const out = (await dk(other)('node', 'ls', '--format', '{{.ID}} {{.Status}} {{.ManagerStatus}}')).split('\n').filter(Boolean);
      const leader = out.find((r) => r.endsWith(' Leader'));
      return !!leader && !leader.startsWith(leaderId) && out.some((r) => r.startsWith(`${leaderId} Down`)) ? out : undefined;
    }, (TTL + 10) * 1000);
    assert.equal(next.filter((r) => r.endsWith(' Leader')).length, 1);
    await ds[li]!.restart();
    await until('the node is back, ready', async () => (await dk(other)('node', 'ls', '--format', '{{.ID}} {{.Status}}')).includes(`${leaderId} Ready`), 30_000);
  });

  test('etcd stopped: local containers keep running and the API answers; the nodes register again when it returns', async () => {
    const d = ds[0]!;
    await dk(d)('run', '-d', '--name', 'keeps-running', imgs.tag, 'sleep', '300');
    await etcd.stop();
    await sleep((TTL + 1) * 1000);
    assert.equal(await dk(d)('inspect', '-f', '{{.State.Running}}', 'keeps-running'), 'true');
    assert.equal(await dk(d)('run', '--rm', imgs.tag, 'echo', 'still-serving'), 'still-serving');
    await etcd.start();
    await until('three records again', async () => (await nodeRecords(etcd)).length === 3, 40_000);
    await until('node ls answers again', async () => (await dk(d)('node', 'ls', '-q')).split('\n').filter(Boolean).length === 3, 20_000);
    assert.equal(await dk(d)('inspect', '-f', '{{.State.Running}}', 'keeps-running'), 'true');
    await dk(d)('rm', '-f', 'keeps-running');
  });
});
