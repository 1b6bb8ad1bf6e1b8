// A stalled leader (issue 60, 1): three daemons, a cluster stack; the leader's daemon is frozen
// with SIGSTOP for 2 × TTL right after a change it has to place, a node is killed meanwhile, and
// the leader is let go on with SIGCONT. Another node is elected meanwhile and places the change
// and the killed node's replica; etcd holds no task the old leader wrote under its old term after
// the new leader's election revision (each task record names its writer and term: the old
// leader's pass, resumed, is refused by etcd); each daemon in a network namespace of its own (the
// stack's services join its overlay network); the frozen leader's replica was killed by its fencer before
// its lease expired, so no replica ever ran on two nodes at once (host processes, replica-tracker).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { formSwarm } from './harness/swarm.ts';
import { runEngine } from './harness/engine-cli.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';
import { startNetns, type NetnsHandle } from './harness/netns.ts';
import { ReplicaTracker } from './harness/replica-tracker.ts';
import { until } from './harness/wait.ts';

const execFileP = promisify(execFile);
const TTL = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Kv {
  key: string;
  value: string;
  create_revision: number;
  mod_revision: number;
}

async function etcdKvs(etcd: EtcdHandle, prefix: string): Promise<Kv[]> {
  const { stdout } = await execFileP('etcdctl', ['--endpoints', etcd.endpoints.join(','), 'get', prefix, '--prefix', '-w', 'json'], { env: { ...process.env, ETCDCTL_API: '3' } });
  const res = JSON.parse(stdout) as { kvs?: Array<{ key: string; value: string; create_revision: number; mod_revision: number }> };
  const b64 = (s: string) => Buffer.from(s, 'base64').toString();
  return (res.kvs ?? []).map((kv) => ({ key: b64(kv.key), value: b64(kv.value), create_revision: kv.create_revision, mod_revision: kv.mod_revision }));
}

async function etcdRevision(etcd: EtcdHandle): Promise<number> {
  const { stdout } = await execFileP('etcdctl', ['--endpoints', etcd.endpoints.join(','), 'get', '/', '-w', 'json'], { env: { ...process.env, ETCDCTL_API: '3' } });
  return (JSON.parse(stdout) as { header: { revision: number } }).header.revision;
}

describe('a stalled leader', { skip: !(existsSync('/usr/bin/etcd') && process.getuid?.() === 0) && 'needs root and etcd-server (hack/install.sh installs it)' }, () => {
  let net: NetnsHandle;
  let etcd: EtcdHandle;
  let imgs: TestImages;
  let dir: string;
  const ds: DaemonHandle[] = [];
  const dk = (d: DaemonHandle) => dockerOk(() => d);

  before(async () => {
    net = startNetns({ count: 3 });
    etcd = await startEtcd({ host: net.hostAddr });
    dir = mkdtempSync(join(tmpdir(), 'cluster-stall-'));
    imgs = await testImages();
    const store = ['--cluster-store', `etcd://${etcd.clientUrl.replace(/^http:\/\//, '')}`, '--cluster-store-opt', `discovery.ttl=${TTL}`];
    ds.push(...(await Promise.all(net.names.map((ns, i) => startDaemon({ netns: ns, args: [...store, '--cluster-default-advertise-addr', net.addr(i)] })))));
    await Promise.all(ds.map((d) => dk(d)('load', '-i', imgs.dockerArchive)));
    await formSwarm(ds, net.names.map((_, i) => net.addr(i)));
    await until('three nodes', async () => (await dk(ds[0]!)('node', 'ls', '-q')).split('\n').filter(Boolean).length === 3, 30_000);
  }, { timeout: 180_000 });
  after(async () => {
    for (const d of ds) {
      if (d.pid) process.kill(d.pid, 'SIGCONT');
      const ids = (await dk(d)('ps', '-aq').catch(() => '')).split('\n').filter(Boolean);
      if (ids.length) await dk(d)('rm', '-f', ...ids).catch(() => {});
      await d.cleanup().catch(() => {});
    }
    await etcd?.cleanup();
    net?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, { timeout: 180_000 });

  test('SIGSTOP of the leader for 2 × TTL mid-pass, a node killed meanwhile, SIGCONT: no write of the old term after the new election; no replica twice', { timeout: 240_000 }, async () => {
    const doc = (replicas: number) => `services:\n  web:\n    image: ${imgs.tag}\n    command: ["sleep", "600"]\n    stop_grace_period: 30s\n    deploy:\n      replicas: ${replicas}\n`;
    const f = join(dir, 'stall.yaml');
    writeFileSync(f, doc(3));
    const apply = async (d: DaemonHandle) => {
      const r = await runEngine(['apply', '--cluster', '-f', f, '-p', 'stall'], { ENGINE_HOST: `unix://${d.socket}` });
      assert.equal(r.code, 0, r.stderr);
    };
    await apply(ds[0]!);
    const tracker = new ReplicaTracker(ds, 'stall');
    tracker.start();
    try {
      await until('three replicas', async () => tracker.aliveNow().size === 3, 60_000);
      const ids = await Promise.all(ds.map((d) => dk(d)('info', '-f', '{{.Swarm.NodeID}}')));
      const leaderId = (await dk(ds[0]!)('node', 'ls', '--format', '{{.ID}} {{.ManagerStatus}}')).split('\n').find((r) => r.endsWith(' Leader'))?.split(' ')[0];
      const li = ids.indexOf(leaderId ?? '');
      assert.ok(li >= 0, `a leader among the three: ${leaderId}`);
      const oldTerm = (await etcdKvs(etcd, 'election/engine-leader/')).find((kv) => kv.value === ids[li])?.create_revision;
      assert.ok(oldTerm, 'the leader holds an election key');
      const vi = [0, 1, 2].find((i) => i !== li)!;
      const mi = [0, 1, 2].find((i) => i !== li && i !== vi)!;
      const leader = ds[li]!;

      // A change to place (one replica more), and the leader frozen right after.
      writeFileSync(f, doc(4));
      await apply(ds[mi]!);
      process.kill(leader.pid, 'SIGSTOP');
      await sleep(TTL * 1000);
      await ds[vi]!.stop({ signal: 'SIGKILL' });
      await sleep(TTL * 1000);
      const newLeader = await until('a new leader', async () => {
        const row = (await dk(ds[mi]!)('node', 'ls', '--format', '{{.ID}} {{.ManagerStatus}}')).split('\n').find((r) => r.endsWith(' Leader'));
        // Neither the frozen one nor the killed one (whose key lives until its lease expires).
        return row && !row.startsWith(ids[li]!) && !row.startsWith(ids[vi]!) ? row.split(' ')[0] : undefined;
      }, 30_000);
      const election = await etcdKvs(etcd, 'election/engine-leader/');
      const newTerm = election.find((kv) => kv.value === newLeader)?.create_revision;
      assert.ok(newTerm && newTerm > oldTerm, `the new leader's term ${newTerm} follows ${oldTerm} (${newLeader}; ${election.map((kv) => `${kv.value}@${kv.create_revision}`).join(', ')})`);
      // Everything after this revision was written while the old leader was frozen or after it resumed.
      const frozenAt = await etcdRevision(etcd);
      process.kill(leader.pid, 'SIGCONT');

      // The new leader places four replicas on the nodes alive; the old one, resumed, writes nothing.
      await until('four replicas on the nodes alive, each once', async () => {
        const alive = tracker.aliveNow();
        return alive.size === 4 && [...alive.values()].every((ps) => ps.length === 1 && ps[0]!.node !== vi);
      }, 60_000);
      await sleep(3 * TTL * 1000);
      const tasks = await etcdKvs(etcd, '/engine/swarm/tasks/');
      assert.ok(tasks.some((kv) => (JSON.parse(kv.value) as { Writer?: string }).Writer === newLeader), 'the new leader wrote tasks');
      for (const kv of tasks) {
        const rec = JSON.parse(kv.value) as { Writer?: string; Term?: string };
        assert.ok(!(kv.mod_revision > frozenAt && rec.Writer === ids[li] && rec.Term === String(oldTerm)), `${kv.key} written by the old leader under its old term ${oldTerm} at revision ${kv.mod_revision}, after the new leader (term ${newTerm}) led (revision ${frozenAt})`);
      }
      assert.deepEqual(tracker.doubles().map((x) => `${x.replica}: node ${x.a.node} and ${x.b.node}`), [], 'no replica on two nodes at once');
      await ds[vi]!.restart();
    } finally {
      tracker.stop();
    }
  });
});
