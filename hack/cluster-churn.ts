// Churn (issue 60, 5): does the cluster keep etcd's history bounded while stacks change all the
// time? Three daemons on one etcd started with a 64 MiB backend quota
// (--quota-backend-bytes=67108864); for --minutes M (default 30) stacks are applied, scaled,
// changed and removed in turn, as fast as the daemons take them (five stacks, three replicas at
// most each). Every minute it prints etcd's revision, database size (total and in use) and alarms
// (`etcdctl endpoint status`, `alarm list`). The leader compacts every --compact-ms (default the
// daemon's 5 minutes); etcd's defragmentation is not run (the in-use size is what compaction
// bounds). Exits 1 on a NOSPACE alarm or a failed apply. Needs root, etcd and the test images.
//
//   node hack/cluster-churn.ts [--minutes 30] [--compact-ms 300000]
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { dockerOk, testImages } from '../test/e2e/harness/clients.ts';
import { startDaemon, type DaemonHandle } from '../test/e2e/harness/daemon.ts';
import { formSwarm } from '../test/e2e/harness/swarm.ts';
import { runEngine } from '../test/e2e/harness/engine-cli.ts';
import { startEtcd, type EtcdHandle } from '../test/e2e/harness/etcd.ts';
import { startNetns } from '../test/e2e/harness/netns.ts';

const execFileP = promisify(execFile);
const { values } = parseArgs({ options: { minutes: { type: 'string', default: '30' }, 'compact-ms': { type: 'string', default: '300000' } } });
const MINUTES = Number(values.minutes);
const STACKS = 5;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function etcdctl(etcd: EtcdHandle, ...args: string[]): Promise<string> {
  const { stdout } = await execFileP('etcdctl', ['--endpoints', etcd.endpoints.join(','), ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
  return stdout.trim();
}

async function status(etcd: EtcdHandle): Promise<{ revision: number; dbSize: number; dbSizeInUse: number; alarms: string }> {
  const s = (JSON.parse(await etcdctl(etcd, 'endpoint', 'status', '-w', 'json')) as Array<{ Status: { header: { revision: number }; dbSize: number; dbSizeInUse: number } }>)[0]!.Status;
  return { revision: s.header.revision, dbSize: s.dbSize, dbSizeInUse: s.dbSizeInUse, alarms: await etcdctl(etcd, 'alarm', 'list') };
}

async function main(): Promise<number> {
  // Each daemon in a network namespace of its own: a cluster stack's services join its overlay network.
  const net = startNetns({ count: 3 });
  const etcd = await startEtcd({ host: net.hostAddr, args: ['--quota-backend-bytes=67108864'] });
  const dir = mkdtempSync(join(tmpdir(), 'cluster-churn-'));
  const ds: DaemonHandle[] = [];
  let failed = '';
  try {
    const imgs = await testImages();
    const store = ['--cluster-store', `etcd://${etcd.clientUrl.replace(/^http:\/\//, '')}`, '--cluster-store-opt', 'discovery.ttl=5'];
    for (let i = 0; i < 3; i++) ds.push(await startDaemon({ netns: net.names[i]!, args: [...store, '--cluster-default-advertise-addr', net.addr(i)], env: { ENGINE_CLUSTER_COMPACT_MS: String(values['compact-ms']) } }));
    for (const d of ds) await dockerOk(() => d)('load', '-i', imgs.dockerArchive);
    await formSwarm(ds, net.names.map((_, i) => net.addr(i)));
    const end = Date.now() + MINUTES * 60_000;
    let nextReport = 0;
    let applies = 0;
    for (let i = 0; Date.now() < end && !failed; i++) {
      const s = i % STACKS;
      const d = ds[i % ds.length]!;
      const env = { ENGINE_HOST: `unix://${d.socket}` };
      if (i % 7 === 6) {
        const r = await runEngine(['stack', 'rm', '--cluster', `churn${s}`], env);
        if (r.code !== 0 && !/not found|no such/i.test(r.stderr)) failed = `stack rm: ${r.stderr}`;
      } else {
        const f = join(dir, `churn${s}.yaml`);
        writeFileSync(f, `services:\n  web:\n    image: ${imgs.tag}\n    command: ["sleep", "3600"]\n    environment:\n      ROUND: "${i}"\n    deploy:\n      replicas: ${1 + (i % 3)}\n`);
        const r = await runEngine(['apply', '--cluster', '-f', f, '-p', `churn${s}`], env);
        if (r.code !== 0) failed = `apply: ${r.stderr}`;
        applies++;
      }
      if (Date.now() >= nextReport) {
        nextReport = Date.now() + 60_000;
        const st = await status(etcd);
        console.log(`${new Date().toISOString()} applies ${applies}; revision ${st.revision}; db ${(st.dbSize / 2 ** 20).toFixed(1)} MiB (in use ${(st.dbSizeInUse / 2 ** 20).toFixed(1)} MiB); alarms: ${st.alarms || 'none'}`);
        if (/NOSPACE/.test(st.alarms)) failed = 'NOSPACE';
      }
      await sleep(500);
    }
    const st = await status(etcd);
    console.log(JSON.stringify({ minutes: MINUTES, applies, ...st, failed: failed || null }));
  } finally {
    for (const d of ds) {
      const ids = (await dockerOk(() => d)('ps', '-aq').catch(() => '')).split('\n').filter(Boolean);
      if (ids.length) await dockerOk(() => d)('rm', '-f', ...ids).catch(() => {});
      await d.cleanup().catch(() => {});
    }
    await etcd.cleanup();
    net.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
  if (failed) console.error(`cluster-churn: ${failed}`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`cluster-churn: ${err instanceof Error ? err.stack : String(err)}`);
    process.exit(1);
  },
);
