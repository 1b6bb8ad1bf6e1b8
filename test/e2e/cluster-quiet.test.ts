// A cluster at rest writes nothing (issue 60, 5): three daemons (each in a network namespace of its
// own: a cluster stack's services join its overlay network) and five cluster stacks on one etcd,
// every replica running and every task's status published; then 30 s (ten lease TTLs, six
// resyncs of every loop) without a change, in
// which etcd's own counters of puts and deletes (its /metrics: etcd_mvcc_put_total,
// etcd_mvcc_delete_total) do not move. Lease keep-alives are not writes. And the leader compacts
// the history (ENGINE_CLUSTER_COMPACT_MS shortens its interval here): etcd's compaction revision
// moves on, and the cluster still works after it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
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
import { until } from './harness/wait.ts';

const TTL = 3;
const STACKS = 5;
const execFileP = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const engine = (d: DaemonHandle, args: string[]) => runEngine(args, { ENGINE_HOST: `unix://${d.socket}` });

/** etcd's /metrics, the counters named (summed over their labels). */
function etcdCounters(e: EtcdHandle, names: string[]): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    get(`${e.clientUrl}/metrics`, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        const out: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
        for (const line of body.split('\n')) {
          const m = /^([a-z_]+)(?:\{[^}]*\})? ([0-9.e+]+)$/.exec(line);
          if (m && m[1]! in out) out[m[1]!]! += Number(m[2]);
        }
        resolve(out);
      });
    }).on('error', reject);
  });
}

/** Whether etcd has compacted its history past revision 2 (a read at it is refused). */
async function historyCompacted(e: EtcdHandle): Promise<boolean> {
  try {
    await execFileP('etcdctl', ['--endpoints', e.endpoints.join(','), 'get', '/engine/', '--prefix', '--keys-only', '--rev', '2'], { env: { ...process.env, ETCDCTL_API: '3' } });
    return false;
  } catch (err) {
    if (/compacted/.test(String((err as { stderr?: string }).stderr))) return true;
    throw err;
  }
}

describe('a cluster at rest', { skip: !(existsSync('/usr/bin/etcd') && process.getuid?.() === 0) && 'needs root and etcd-server (hack/install.sh installs it)' }, () => {
  let net: NetnsHandle;
  let etcd: EtcdHandle;
  let imgs: TestImages;
  let dir: string;
  const ds: DaemonHandle[] = [];
  const dk = (d: DaemonHandle) => dockerOk(() => d);

  before(async () => {
    net = startNetns({ count: 3 });
    etcd = await startEtcd({ host: net.hostAddr });
    dir = mkdtempSync(join(tmpdir(), 'cluster-quiet-'));
    imgs = await testImages();
    const store = ['--cluster-store', `etcd://${etcd.clientUrl.replace(/^http:\/\//, '')}`, '--cluster-store-opt', `discovery.ttl=${TTL}`];
    ds.push(...(await Promise.all(net.names.map((ns, i) => startDaemon({ netns: ns, args: [...store, '--cluster-default-advertise-addr', net.addr(i)], env: { ENGINE_CLUSTER_COMPACT_MS: '5000' } })))));
    await Promise.all(ds.map((d) => dk(d)('load', '-i', imgs.dockerArchive)));
    await formSwarm(ds, net.names.map((_, i) => net.addr(i)));
    await until('three nodes', async () => (await dk(ds[0]!)('node', 'ls', '-q')).split('\n').filter(Boolean).length === 3);
  }, { timeout: 180_000 });
  after(async () => {
    for (const d of ds) {
      const ids = (await dk(d)('ps', '-aq').catch(() => '')).split('\n').filter(Boolean);
      if (ids.length) await dk(d)('rm', '-f', ...ids).catch(() => {});
      await d.cleanup().catch(() => {});
    }
    await etcd?.cleanup();
    net?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }, { timeout: 180_000 });

  test(`3 nodes × ${STACKS} stacks, all Ready: 30 s idle writes nothing to etcd; the leader compacts its history`, { timeout: 300_000 }, async () => {
    for (let i = 0; i < STACKS; i++) {
      const f = join(dir, `s${i}.yaml`);
      writeFileSync(f, `services:\n  web:\n    image: ${imgs.tag}\n    command: ["sleep", "600"]\n    deploy:\n      replicas: 3\n`);
      const r = await engine(ds[i % 3]!, ['apply', '--cluster', '-f', f, '-p', `q${i}`]);
      assert.equal(r.code, 0, r.stderr);
    }
    await until('every replica running and every status published', async () => {
      for (let i = 0; i < STACKS; i++) {
        const v = JSON.parse((await engine(ds[0]!, ['stack', 'inspect', '--cluster', `q${i}`])).stdout)[0];
        if (v?.Status?.Services?.web?.ready !== 3 || v.Status.Conditions[0].type !== 'Ready') return false;
      }
      return true;
    }, 120_000);
    // Settle: the last statuses and any debounced write land.
    await sleep(5000);
    const names = ['etcd_mvcc_put_total', 'etcd_mvcc_delete_total'];
    const before = await etcdCounters(etcd, names);
    await sleep(30_000);
    const after = await etcdCounters(etcd, names);
    assert.deepEqual(after, before, 'no put and no delete in 30 s at rest');
    // The compactor (every 5 s here) has compacted past the first revisions by now.
    assert.ok(await historyCompacted(etcd), 'the history is compacted');
    // And the cluster still places after its watches lived through compactions.
    const f = join(dir, 'after.yaml');
    writeFileSync(f, `services:\n  web:\n    image: ${imgs.tag}\n    command: ["sleep", "600"]\n    deploy:\n      replicas: 2\n`);
    assert.equal((await engine(ds[1]!, ['apply', '--cluster', '-f', f, '-p', 'q0'])).code, 0);
    await until('q0 scaled to 2', async () => {
      const v = JSON.parse((await engine(ds[2]!, ['stack', 'inspect', '--cluster', 'q0'])).stdout)[0];
      return v?.Status?.Services?.web?.ready === 2 && Object.values(v.Placement.web ?? []).length === 2;
    }, 60_000);
  });
});
