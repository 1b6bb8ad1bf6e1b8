// Self-fencing over a real network (issue 60, 2): etcd on the host's address of a bridge, three
// daemons each in its own network namespace (test/e2e/harness/netns.ts). A cluster stack with a
// replica per node; one node cut off from etcd (iptables inside its namespace). Polled every
// 200 ms, by the processes on the host and not only by what the daemons say: the cut node's
// replica process is gone before its lease can expire (TTL - margin after its last renewal), its
// replica runs again on another node within TTL + 5 s, and never does one replica run on two
// nodes at once; a local container on the cut node keeps running. Healed, the node comes back,
// starts nothing it is no longer assigned, and still no replica runs twice.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { runEngine } from './harness/engine-cli.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';
import { startNetns, type NetnsHandle } from './harness/netns.ts';
import { until } from './harness/wait.ts';

const TTL = 5;
const MARGIN = 1;
const N = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const canRun = existsSync('/usr/bin/etcd') && process.getuid?.() === 0;
const alive = (pid: number) => pid > 0 && existsSync(`/proc/${pid}`);

describe('self-fencing nodes', { skip: !canRun && 'needs root and etcd-server (hack/install.sh installs it)' }, () => {
  let net: NetnsHandle;
  let etcd: EtcdHandle;
  let imgs: TestImages;
  let dir: string;
  const ds: DaemonHandle[] = [];
  const dk = (d: DaemonHandle) => dockerOk(() => d);
  /** Replica name -> host PID, of the project's running containers on daemon `d`. */
  const replicas = async (d: DaemonHandle): Promise<Map<string, number>> => {
    const out = await dk(d)('ps', '--filter', 'label=com.docker.compose.project=fenced', '--format', '{{.Names}}');
    const names = out.split('\n').filter(Boolean);
    const m = new Map<string, number>();
    for (const n of names) m.set(n, Number(await dk(d)('inspect', '-f', '{{.State.Pid}}', n).catch(() => '0')));
    return m;
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
    await until('three nodes', async () => (await dk(ds[0]!)('node', 'ls', '-q')).split('\n').filter(Boolean).length === N, 30_000);
  });
  after(async () => {
    for (const d of ds) {
      const ids = (await dk(d)('ps', '-aq').catch(() => '')).split('\n').filter(Boolean);
      if (ids.length) await dk(d)('rm', '-f', ...ids).catch(() => {});
    }
    await Promise.all(ds.map((d) => d.cleanup().catch(() => {})));
    await etcd?.cleanup();
    net?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a node cut off from etcd kills its replicas before its lease can expire; they run elsewhere within TTL + 5 s; never twice; local containers untouched', { timeout: 180_000 }, async () => {
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

    const cutAt = Date.now();
    net.cut(2);
    let goneAfter = -1;
    // When the process went, to 20 ms (the loop below asks the daemons too, a few hundred ms a turn).
    const watchGone = setInterval(() => {
      if (goneAfter < 0 && !alive(pid!)) goneAfter = Date.now() - cutAt;
    }, 20);
    let elsewhereAfter = -1;
    let doubles = 0;
    const samples: string[] = [];
    for (let t = 0; Date.now() - cutAt < (TTL + 8) * 1000; t++) {
      const here = alive(pid!);
      const there = (await Promise.all(ds.slice(0, 2).map((d) => replicas(d)))).some((m) => [...m].some(([n, p]) => n === name && alive(p)));
      const ms = Date.now() - cutAt;
      if (there && elsewhereAfter < 0) elsewhereAfter = ms;
      if (here && there) doubles++;
      if (t % 5 === 0) samples.push(`${ms}:${here ? 'H' : '-'}${there ? 'E' : '-'}`);
      if (goneAfter >= 0 && elsewhereAfter >= 0 && Date.now() - cutAt > TTL * 1000 + 2000) break;
      await sleep(200);
    }
    clearInterval(watchGone);
    const trace = `gone after ${goneAfter} ms, elsewhere after ${elsewhereAfter} ms; ${samples.join(' ')}`;
    console.log(trace);
    assert.equal(doubles, 0, `never on two nodes at once (${trace})`);
    assert.ok(goneAfter >= 0 && goneAfter <= (TTL - MARGIN) * 1000 + 500, `the cut node's replica is gone by TTL - margin (${trace})`);
    assert.ok(elsewhereAfter >= 0 && elsewhereAfter <= (TTL + 5) * 1000, `running elsewhere within TTL + 5 s (${trace})`);
    assert.equal(await dk(ds[2]!)('inspect', '-f', '{{.State.Running}}', local), 'true', 'a local container on the cut node keeps running');

    // Healed: the node joins again, starts nothing no longer assigned to it, and nothing runs twice.
    net.heal(2);
    await until('node 2 Ready again', async () => (await dk(ds[0]!)('node', 'ls', '--format', '{{.Status}}')).split('\n').filter((s) => s === 'Ready').length === N, 30_000);
    for (const end = Date.now() + 8000; Date.now() < end; await sleep(200)) {
      const counts = new Map<string, number>();
      for (const d of ds) for (const [n, p] of await replicas(d)) if (alive(p)) counts.set(n, (counts.get(n) ?? 0) + 1);
      for (const [n, c] of counts) assert.ok(c <= 1, `replica ${n} runs on ${c} nodes after the heal`);
    }
    await until('three replicas running', async () => {
      let total = 0;
      for (const d of ds) total += (await replicas(d)).size;
      return total === N;
    }, 30_000);
  });
});
