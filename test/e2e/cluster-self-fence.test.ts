// Self-fencing over a real network (issue 60, 2): etcd on the host's address of a bridge, three
// daemons each in its own network namespace (test/e2e/harness/netns.ts). A cluster stack (the
// swarm's services, `engine apply --cluster`) with a replica per node; a replica is a service's
// slot, whichever task runs it; one node cut off from etcd (iptables inside its namespace). Measured on the
// host's clock since boot, by the processes and not only by what the daemons say: the cut node's
// replica process is gone (a 20 ms poller) before its lease expired at etcd (its record's deletion,
// followed by etcdctl on the host); the replica's process on another node started (its /proc start
// time) after the cut node's was last seen alive and within TTL + 5 s of the cut: never one
// replica on two nodes at once, however slowly the test itself is scheduled. A local container on
// the cut node keeps running. Healed, the node comes back, starts nothing it is no longer
// assigned, and still no replica runs twice. A daemon killed with kill -9 (issue 60, 2): its
// fencer (cmd/fencer.ts) kills its replica before its lease expired, measured the same way. Then
// (issue 60, 4) every node cut off while etcd
// restarts and compacts the history they had not read: all rejoin (their watches canceled by etcd
// and made again), every replica runs once, and the leader killed afterwards is succeeded by
// another that re-places its replica.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { formSwarm } from './harness/swarm.ts';
import { runEngine } from './harness/engine-cli.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';
import { startNetns, type NetnsHandle } from './harness/netns.ts';
import { startedAt, uptime } from './harness/replica-tracker.ts';
import { until } from './harness/wait.ts';

const execFileP = promisify(execFile);
const TTL = 5;
const MARGIN = 1;
const N = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const canRun = existsSync('/usr/bin/etcd') && process.getuid?.() === 0;
const alive = (pid: number) => pid > 0 && existsSync(`/proc/${pid}`);

async function etcdctl(etcd: EtcdHandle, ...args: string[]): Promise<string> {
  const { stdout } = await execFileP('etcdctl', ['--endpoints', etcd.endpoints.join(','), ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
  return stdout.trim();
}

/** Follows `key` with etcdctl on the host: seenUp is when its deletion was seen (-1 until then). */
function watchDelete(etcd: EtcdHandle, key: string): { seenUp: number; stop(): void } {
  const child = spawn('etcdctl', ['--endpoints', etcd.endpoints.join(','), 'watch', key], { env: { ...process.env, ETCDCTL_API: '3' }, stdio: ['ignore', 'pipe', 'ignore'] });
  const out = { seenUp: -1, stop: () => void child.kill('SIGKILL') };
  child.stdout.on('data', (b: Buffer) => {
    if (out.seenUp < 0 && b.toString().includes('DELETE')) out.seenUp = uptime();
  });
  return out;
}

describe('self-fencing nodes', { skip: !canRun && 'needs root and etcd-server (hack/install.sh installs it)' }, () => {
  let net: NetnsHandle;
  let etcd: EtcdHandle;
  let imgs: TestImages;
  let dir: string;
  const ds: DaemonHandle[] = [];
  const dk = (d: DaemonHandle) => dockerOk(() => d);
  /** Replica (SERVICE.SLOT: its task container's name without the task id) -> host PID, of the stack's running containers on daemon `d`. */
  const replicas = async (d: DaemonHandle): Promise<Map<string, number>> => {
    const out = await dk(d)('ps', '--filter', 'label=com.docker.stack.namespace=fenced', '--format', '{{.Names}}');
    const names = out.split('\n').filter(Boolean);
    const m = new Map<string, number>();
    for (const n of names) m.set(n.split('.').slice(0, 2).join('.'), Number(await dk(d)('inspect', '-f', '{{.State.Pid}}', n).catch(() => '0')));
    return m;
  };

  /**
   * Node k loses its lease by `act` (a cut, a kill): measured on the host's clock since boot, its
   * replica `name` (process `pid`) is gone — a 20 ms poller — before the lease expired at etcd (the
   * node's record deleted, followed by etcdctl), and the replica's process on another node started
   * (its /proc start time) after the old one was last seen alive and within TTL + 5 s.
   */
  const failover = async (k: number, name: string, pid: number, what: string, act: () => unknown): Promise<void> => {
    const nodeId = await dk(ds[k]!)('info', '-f', '{{.Swarm.NodeID}}');
    const expiry = watchDelete(etcd, `/engine/nodes/${nodeId}`);
    await sleep(300); // the watch is made
    const actUp = uptime();
    await act();
    let lastAliveUp = actUp;
    let goneUp = -1;
    const watchGone = setInterval(() => {
      if (goneUp >= 0) return;
      const now = uptime();
      if (alive(pid)) lastAliveUp = now;
      else goneUp = now;
    }, 20);
    let elsewhere: { pid: number; startUp: number } | undefined;
    const samples: string[] = [];
    const others = ds.filter((_, i) => i !== k);
    try {
      for (let t = 0; uptime() - actUp < TTL + 15; t++) {
        for (const m of await Promise.all(others.map((d) => replicas(d)))) {
          const p = m.get(name);
          if (!elsewhere && p && alive(p)) elsewhere = { pid: p, startUp: startedAt(p) };
        }
        if (t % 5 === 0) samples.push(`${(uptime() - actUp).toFixed(2)}:${goneUp < 0 ? 'H' : '-'}${elsewhere ? 'E' : '-'}`);
        if (goneUp >= 0 && elsewhere && expiry.seenUp >= 0) break;
        await sleep(200);
      }
    } finally {
      clearInterval(watchGone);
      expiry.stop();
    }
    const rel = (up: number) => (up < 0 ? 'never' : `${(up - actUp).toFixed(2)} s`);
    const trace = `after the ${what}: replica last seen alive ${rel(lastAliveUp)}, gone ${rel(goneUp)}; lease expired (seen) ${rel(expiry.seenUp)}; run elsewhere from ${elsewhere ? rel(elsewhere.startUp) : 'never'}; ${samples.join(' ')}`;
    console.log(trace);
    assert.ok(goneUp >= 0, `node ${k}'s replica is gone (${trace})`);
    assert.ok(expiry.seenUp >= 0, `node ${k}'s lease expired (${trace})`);
    assert.ok(goneUp < expiry.seenUp, `node ${k}'s replica is gone before its lease expired at etcd (${trace})`);
    assert.ok(elsewhere, `the replica runs again on another node (${trace})`);
    assert.ok(elsewhere.startUp >= lastAliveUp, `never on two nodes at once: it started elsewhere after node ${k}'s process was last seen alive (${trace})`);
    assert.ok(elsewhere.startUp - actUp <= TTL + 5, `running elsewhere within TTL + 5 s (${trace})`);
  };

  /** Converged: every replica runs (by its process on the host), each on one node (more is "not yet": `until` retries). */
  const eachOnce = async (): Promise<boolean> => {
    const counts = new Map<string, number>();
    for (const d of ds) for (const [n, p] of await replicas(d)) if (alive(p)) counts.set(n, (counts.get(n) ?? 0) + 1);
    for (const [n, c] of counts) assert.ok(c <= 1, `replica ${n} runs on ${c} nodes`);
    return counts.size === N;
  };

  before(async () => {
    net = startNetns({ count: N });
    etcd = await startEtcd({ host: net.hostAddr });
    dir = mkdtempSync(join(tmpdir(), 'cluster-fence-'));
    imgs = await testImages();
    const store = `etcd://${etcd.clientUrl.replace(/^http:\/\//, '')}`;
    ds.push(
      ...(await Promise.all(
        net.names.map((ns, i) =>
          startDaemon({
            netns: ns,
            args: ['--cluster-store', store, '--cluster-store-opt', `discovery.ttl=${TTL}`, '--cluster-store-opt', `fence.margin=${MARGIN}`, '--cluster-default-advertise-addr', net.addr(i)],
          }),
        ),
      )),
    );
    for (const d of ds) await dk(d)('load', '-i', imgs.dockerArchive);
    await formSwarm(ds, net.names.map((_, i) => net.addr(i)));
    await until('three nodes', async () => (await dk(ds[0]!)('node', 'ls', '-q')).split('\n').filter(Boolean).length === N, 30_000);
  }, { timeout: 180_000 });
  after(async () => {
    for (const d of ds) {
      const ids = (await dk(d)('ps', '-aq').catch(() => '')).split('\n').filter(Boolean);
      if (ids.length) await dk(d)('rm', '-f', ...ids).catch(() => {});
    }
    await Promise.all(ds.map((d) => d.cleanup().catch(() => {})));
    await etcd?.cleanup();
    net?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, { timeout: 180_000 });

  test('a node cut off from etcd kills its replicas before its lease can expire; they run elsewhere within TTL + 5 s; never twice; local containers untouched', { timeout: 240_000 }, async () => {
    const f = join(dir, 'fenced.yaml');
    writeFileSync(f, `services:\n  web:\n    image: ${imgs.tag}\n    command: ["sleep", "600"]\n    stop_grace_period: 30s\n    deploy:\n      replicas: ${N}\n`);
    const applied = await runEngine(['apply', '--cluster', '-f', f, '-p', 'fenced'], { ENGINE_HOST: `unix://${ds[0]!.socket}` });
    assert.equal(applied.code, 0, applied.stderr);
    await until('a replica on every node', async () => {
      for (const d of ds) if ((await replicas(d)).size !== 1) return false;
      return true;
    }, 60_000);
    const local = await dk(ds[2]!)('run', '-d', '--name', 'local-one', imgs.tag, 'sleep', '600');
    const [[name, pid]] = [...(await replicas(ds[2]!))];
    assert.ok(alive(pid!), 'the replica on the node to cut runs');

    await failover(2, name!, pid!, 'cut', () => net.cut(2));
    assert.equal(await dk(ds[2]!)('inspect', '-f', '{{.State.Running}}', local), 'true', 'a local container on the cut node keeps running');

    // Healed: the node joins again, starts nothing no longer assigned to it, and nothing runs twice.
    net.heal(2);
    await until('node 2 Ready again', async () => (await dk(ds[0]!)('node', 'ls', '--format', '{{.Status}}')).split('\n').filter((s) => s === 'Ready').length === N, 60_000);
    for (const end = Date.now() + 8000; Date.now() < end; await sleep(200)) {
      const counts = new Map<string, number>();
      for (const d of ds) for (const [n, p] of await replicas(d)) if (alive(p)) counts.set(n, (counts.get(n) ?? 0) + 1);
      for (const [n, c] of counts) assert.ok(c <= 1, `replica ${n} runs on ${c} nodes after the heal`);
    }
    await until('three replicas running', async () => {
      let total = 0;
      for (const d of ds) total += (await replicas(d)).size;
      return total === N;
    }, 60_000);
  });

  test('a daemon killed (kill -9): its fencer kills its replicas before its lease can expire; they run elsewhere within TTL + 5 s; never twice', { timeout: 180_000 }, async () => {
    const k = 1;
    let picked: [string, number] | undefined;
    await until('a replica on the node to kill', async () => {
      picked = [...(await replicas(ds[k]!))].find(([, p]) => alive(p));
      return !!picked;
    }, 30_000);
    const [name, pid] = picked!;
    await failover(k, name, pid, 'kill -9', () => ds[k]!.stop({ signal: 'SIGKILL' }));
    await ds[k]!.restart();
    await until('every node Ready again', async () => (await dk(ds[0]!)('node', 'ls', '--format', '{{.Status}}')).split('\n').filter((s) => s === 'Ready').length === N, 60_000);
    await until('three replicas running, each once', eachOnce, 60_000);
  });

  test('etcd restarted and compacted while every node was cut off: all rejoin with their watches made again, every replica runs once; the leader killed afterwards: another is elected and re-places its replica', { timeout: 240_000 }, async () => {
    const before = new Map<string, number>();
    for (const d of ds) for (const [n, p] of await replicas(d)) before.set(n, p);
    assert.equal(before.size, N, 'three replicas to start from');
    for (let i = 0; i < N; i++) net.cut(i);
    await etcd.stop();
    await etcd.start();
    // History the nodes have not read, compacted away: their watches resume from a compacted revision.
    for (let i = 0; i < 5; i++) await etcdctl(etcd, 'put', `/engine/test/churn${i}`, String(i));
    const rev = (JSON.parse(await etcdctl(etcd, 'get', '/engine/test/churn4', '-w', 'json')) as { header: { revision: number } }).header.revision;
    await etcdctl(etcd, 'compact', String(rev), '--physical');
    await sleep((TTL + 1) * 1000); // every node fenced, every lease expired
    for (let i = 0; i < N; i++) net.heal(i);
    await until('every node Ready in every node\'s view', async () => {
      for (const d of ds) if ((await dk(d)('node', 'ls', '--format', '{{.Status}}')).split('\n').filter((s) => s === 'Ready').length !== N) return false;
      return true;
    }, 60_000);
    await until('three replicas running, each once', eachOnce, 60_000);

    // Failover after all that: the leader killed, another elected, its replica run elsewhere.
    const ids = await Promise.all(ds.map(async (d) => await dk(d)('info', '-f', '{{.Swarm.NodeID}}')));
    const leaderId = (await dk(ds[0]!)('node', 'ls', '--format', '{{.ID}} {{.ManagerStatus}}')).split('\n').find((r) => r.endsWith(' Leader'))?.split(' ')[0];
    const li = ids.indexOf(leaderId ?? '');
    assert.ok(li >= 0, `a leader among ${ids.join(', ')}: ${leaderId}`);
    const rest = ds.filter((_, i) => i !== li);
    await ds[li]!.stop({ signal: 'SIGKILL' });
    // (Its replica's process goes by its fencer; measured in the kill -9 case above.)
    await until('another leader', async () => (await dk(rest[0]!)('node', 'ls', '--format', '{{.ID}} {{.ManagerStatus}}')).split('\n').some((r) => r.endsWith(' Leader') && !r.startsWith(leaderId!)), (TTL + 15) * 1000);
    await until('all three replicas on the nodes alive', async () => {
      const names = new Set<string>();
      for (const d of rest) for (const [n, p] of await replicas(d)) if (alive(p)) names.add(n);
      return names.size === N;
    }, (TTL + 15) * 1000);
    await ds[li]!.restart();
  });
});
