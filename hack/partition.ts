// Partition rounds (issue 60, 3): does any cluster replica ever run on two nodes at once?
//
//   node hack/partition.ts [--rounds N] [--cut-seconds S] [--ttl T]
//
// Three daemons, each in its own network namespace (test/e2e/harness/netns.ts: a bridge this
// script makes, veths, iptables rules inside the namespaces only), etcd on the bridge's host
// address, a cluster stack of three replicas. Rounds alternate: a partition (one node, in turn,
// cut off from etcd for S seconds, then healed) and a kill -9 (one node's daemon killed, started
// again S seconds later). Throughout, test/e2e/harness/replica-tracker.ts follows every replica
// process on the host (PIDs from the APIs, life and start times from /proc every 200 ms). A round
// passes when no replica ran on two nodes at once and every replica of the node hit runs again
// elsewhere within TTL + 5 s; then the script waits for three replicas before the next round.
// Prints a line per round and a JSON summary; exits 1 if any round failed. Needs root, etcd and
// the test images (hack/install.sh; node hack/images/build-busybox.ts). The suite runs it with
// two rounds (test/e2e/partition.test.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { dockerOk, testImages } from '../test/e2e/harness/clients.ts';
import { startDaemon, type DaemonHandle } from '../test/e2e/harness/daemon.ts';
import { formSwarm } from '../test/e2e/harness/swarm.ts';
import { runEngine } from '../test/e2e/harness/engine-cli.ts';
import { startEtcd } from '../test/e2e/harness/etcd.ts';
import { startNetns } from '../test/e2e/harness/netns.ts';
import { ReplicaTracker, uptime } from '../test/e2e/harness/replica-tracker.ts';
import { until } from '../test/e2e/harness/wait.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '2' }, 'cut-seconds': { type: 'string', default: '30' }, ttl: { type: 'string', default: '5' } } });
const ROUNDS = Number(values.rounds);
const CUT_S = Number(values['cut-seconds']);
const TTL = Number(values.ttl);
const N = 3;
const PROJECT = 'part';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Round {
  round: number;
  kind: 'partition' | 'kill';
  node: number;
  replicas: string[];
  /** Seconds from the cut/kill until each replica of the node hit ran elsewhere (-1: never). */
  elsewhereS: number[];
  doubles: number;
  ok: boolean;
}

async function main(): Promise<number> {
  const net = startNetns({ count: N });
  const dir = mkdtempSync(join(tmpdir(), 'partition-'));
  const ds: DaemonHandle[] = [];
  let etcd: Awaited<ReturnType<typeof startEtcd>> | undefined;
  const rounds: Round[] = [];
  let tracker: ReplicaTracker | undefined;
  try {
    etcd = await startEtcd({ host: net.hostAddr });
    const imgs = await testImages();
    const store = `etcd://${etcd.clientUrl.replace(/^http:\/\//, '')}`;
    ds.push(...(await Promise.all(net.names.map((ns, i) => startDaemon({ netns: ns, args: ['--cluster-store', store, '--cluster-store-opt', `discovery.ttl=${TTL}`, '--cluster-default-advertise-addr', net.addr(i)] })))));
    for (const d of ds) await dockerOk(() => d)('load', '-i', imgs.dockerArchive);
    await formSwarm(ds, net.names.map((_, i) => net.addr(i)));
    await until('three nodes', async () => (await dockerOk(() => ds[0]!)('node', 'ls', '-q')).split('\n').filter(Boolean).length === N, 60_000);
    const f = join(dir, 'stack.yaml');
    writeFileSync(f, `services:\n  web:\n    image: ${imgs.tag}\n    command: ["sleep", "3600"]\n    stop_grace_period: 30s\n    deploy:\n      replicas: ${N}\n`);
    const applied = await runEngine(['apply', '--cluster', '-f', f, '-p', PROJECT], { ENGINE_HOST: `unix://${ds[0]!.socket}` });
    if (applied.code !== 0) throw new Error(`apply: ${applied.stderr}`);
    tracker = new ReplicaTracker(ds, PROJECT);
    tracker.start();
    const t = tracker;
    const settled = () => until('three replicas, each once', async () => {
      const alive = t.aliveNow();
      return alive.size === N && [...alive.values()].every((ps) => ps.length === 1);
    }, 90_000);
    await settled();

    for (let r = 1; r <= ROUNDS; r++) {
      const kind = r % 2 === 1 ? 'partition' : 'kill';
      // The node hit: in turn, among those running a replica.
      const alive = [...t.aliveNow().values()].flat();
      const k = [0, 1, 2].map((i) => (r + i) % N).find((i) => alive.some((p) => p.node === i)) ?? r % N;
      const hit = alive.filter((p) => p.node === k);
      const before = t.doubles().length;
      const at = uptime();
      if (kind === 'partition') net.cut(k);
      else await ds[k]!.stop({ signal: 'SIGKILL' });
      await sleep(CUT_S * 1000);
      const elsewhereS = hit.map((h) => {
        const next = t.procs.filter((p) => p.replica === h.replica && p.node !== k && p.startUp >= at).sort((a, b) => a.startUp - b.startUp)[0];
        return next ? Math.round((next.startUp - at) * 100) / 100 : -1;
      });
      if (kind === 'partition') net.heal(k);
      else await ds[k]!.restart();
      await settled();
      const doubles = t.doubles().length - before;
      const ok = doubles === 0 && elsewhereS.every((s) => s >= 0 && s <= TTL + 5);
      const round: Round = { round: r, kind, node: k, replicas: hit.map((h) => h.replica), elsewhereS, doubles, ok };
      rounds.push(round);
      console.log(`round ${r} (${kind}, node ${k}): ${ok ? 'ok' : 'FAILED'}; running elsewhere after ${elsewhereS.join(', ')} s; double-runs ${doubles}`);
    }
  } finally {
    tracker?.stop();
    for (const d of ds) {
      const ids = (await dockerOk(() => d)('ps', '-aq').catch(() => '')).split('\n').filter(Boolean);
      if (ids.length) await dockerOk(() => d)('rm', '-f', ...ids).catch(() => {});
    }
    await Promise.all(ds.map((d) => d.cleanup().catch(() => {})));
    await etcd?.cleanup();
    net.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
  const doubles = rounds.reduce((n, r) => n + r.doubles, 0);
  console.log(JSON.stringify({ rounds: rounds.length, failed: rounds.filter((r) => !r.ok).length, doubleRuns: doubles, ttl: TTL, cutSeconds: CUT_S, details: rounds }));
  return rounds.length === ROUNDS && rounds.every((r) => r.ok) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`partition: ${err instanceof Error ? err.stack : String(err)}`);
    process.exit(1);
  },
);
