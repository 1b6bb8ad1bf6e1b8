// Cluster stacks placed across nodes: `engine apply --cluster` makes a stack of the swarm's services
// (labelled com.docker.stack.namespace, on the overlay NAME_default, as `docker stack deploy`
// makes them), so the services' orchestrator places them. One etcd and three daemons, each in a
// network namespace of its own (overlay devices are per host): A: zone=a with a named gpu unit,
// B and C: zone=b. A service reserving gpu=1 runs only on A and sees DOCKER_RESOURCE_GPU; a second
// replica that fits nowhere stays pending with the reason; a service constrained to zone=b is
// spread over B and C; kill -9 of a node moves its replica; the node coming back runs nothing of
// it; a changed stack rolls; the leader killed and placement still working; `engine stack rm
// --cluster` removes it everywhere; the docker CLI's stack ls sees the stack and its stack rm
// removes it.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { formSwarm } from './harness/swarm.ts';
import { runEngine } from './harness/engine-cli.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';
import { startNetns, type NetnsHandle } from './harness/netns.ts';
import { until } from './harness/wait.ts';

const TTL = 3;

const engine = (d: DaemonHandle, args: string[]) => runEngine(args, { ENGINE_HOST: `unix://${d.socket}` });

describe('cluster stacks: placement and failover', { skip: !(existsSync('/usr/bin/etcd') && process.getuid?.() === 0) && 'needs root and etcd-server (hack/install.sh installs it)' }, () => {
  let net: NetnsHandle;
  let etcd: EtcdHandle;
  let imgs: TestImages;
  let dir: string;
  const ds: Record<'a' | 'b' | 'c', DaemonHandle> = {} as never;
  const dk = (d: DaemonHandle) => dockerOk(() => d);
  /** The stack's running task containers on `d`, as SERVICE.SLOT (their names without the task id). */
  const running = async (d: DaemonHandle, stack: string) =>
    (await dk(d)('ps', '--filter', `label=com.docker.stack.namespace=${stack}`, '--format', '{{.Names}}')).split('\n').filter(Boolean).map((n) => n.split('.').slice(0, 2).join('.')).sort();
  const containerIds = (d: DaemonHandle, stack: string, all = false) => dk(d)('ps', ...(all ? ['-a'] : []), '-q', '--filter', `label=com.docker.stack.namespace=${stack}`);
  const file = (name: string, text: string) => {
    const p = join(dir, `${name}.yaml`);
    writeFileSync(p, text);
    return p;
  };
  const webDoc = (replicas: number, v = 'one') => `services:
  web:
    image: ${imgs.tag}
    command: ["sleep", "300"]
    environment:
      V: ${v}
    deploy:
      replicas: ${replicas}
      placement:
        constraints: ["engine.labels.zone == b"]
`;

  before(async () => {
    net = startNetns({ count: 3 });
    etcd = await startEtcd({ host: net.hostAddr });
    dir = mkdtempSync(join(tmpdir(), 'cluster-placement-'));
    imgs = await testImages();
    const store = ['--cluster-store', `etcd://${etcd.clientUrl.replace(/^http:\/\//, '')}`, '--cluster-store-opt', `discovery.ttl=${TTL}`];
    const own = (i: number, labels: string[]) => startDaemon({ netns: net.names[i]!, args: [...store, '--cluster-default-advertise-addr', net.addr(i), ...labels] });
    [ds.a, ds.b, ds.c] = await Promise.all([own(0, ['--label', 'zone=a', '--node-generic-resource', 'gpu=GPU-aaa']), own(1, ['--label', 'zone=b']), own(2, ['--label', 'zone=b'])]);
    await Promise.all(Object.values(ds).map((d) => dk(d)('load', '-i', imgs.dockerArchive)));
    await formSwarm([ds.a, ds.b, ds.c], [0, 1, 2].map((i) => net.addr(i)));
    await until('three nodes', async () => (await dk(ds.a)('node', 'ls', '-q')).split('\n').filter(Boolean).length === 3);
  }, { timeout: 180_000 });
  after(async () => {
    for (const d of Object.values(ds)) {
      const ids = (await dk(d)('ps', '-aq').catch(() => '')).split('\n').filter(Boolean);
      if (ids.length) await dk(d)('rm', '-f', ...ids).catch(() => {});
      await d.cleanup().catch(() => {});
    }
    await etcd?.cleanup();
    net?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }, { timeout: 180_000 });

  test('a service reserving gpu=1 runs only on the node advertising it, with DOCKER_RESOURCE_GPU; one more fits nowhere and stays pending', async () => {
    const f = file('gpu', `services:
  ml:
    image: ${imgs.tag}
    command: ["sleep", "300"]
    deploy:
      replicas: 2
      resources:
        reservations:
          generic_resources:
            - discrete_resource_spec:
                kind: gpu
                value: 1
`);
    const applied = await engine(ds.b, ['apply', '--cluster', '-f', f, '-p', 'gpu']);
    assert.equal(applied.code, 0, applied.stderr);
    await until('one ml replica on A', async () => (await running(ds.a, 'gpu')).length === 1);
    assert.match((await running(ds.a, 'gpu'))[0]!, /^gpu_ml\.[12]$/);
    const id = await containerIds(ds.a, 'gpu');
    assert.match(await dk(ds.a)('exec', id, 'sh', '-c', 'echo $DOCKER_RESOURCE_GPU'), /^GPU-aaa$/);
    assert.deepEqual(await running(ds.b, 'gpu'), []);
    assert.deepEqual(await running(ds.c, 'gpu'), []);
    const view = JSON.parse((await engine(ds.c, ['stack', 'inspect', '--cluster', 'gpu'])).stdout)[0];
    assert.equal(view.Scope, 'cluster');
    assert.equal(view.Pending.ml.length, 1);
    assert.match(view.Pending.ml[0].Reason, /no suitable node/);
    assert.equal(view.Placement.ml.length, 1);
    assert.equal(view.Placement.ml[0].Env.DOCKER_RESOURCE_GPU, 'GPU-aaa');
    await until('A published its status', async () => {
      const v = JSON.parse((await engine(ds.b, ['stack', 'inspect', '--cluster', 'gpu'])).stdout)[0];
      return v.Status.Services.ml.ready === 1;
    });
    assert.equal((await engine(ds.a, ['stack', 'rm', '--cluster', 'gpu'])).code, 0);
    await until('removed everywhere', async () => (await running(ds.a, 'gpu')).length === 0);
  });

  test('a service constrained to zone=b is spread over the zone-b nodes; apply again rolls it on each node', async () => {
    const r = await engine(ds.a, ['apply', '--cluster', '-f', file('web', webDoc(2)), '-p', 'web', '--wait', '--timeout', '60']);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.equal((await running(ds.b, 'web')).length, 1);
    assert.equal((await running(ds.c, 'web')).length, 1);
    assert.deepEqual([...(await running(ds.b, 'web')), ...(await running(ds.c, 'web'))].sort(), ['web_web.1', 'web_web.2']);
    assert.deepEqual(await running(ds.a, 'web'), []);
    const before = [await containerIds(ds.b, 'web'), await containerIds(ds.c, 'web')];
    // The docker CLI sees the stack and its services.
    assert.match(await dk(ds.b)('stack', 'ls', '--format', '{{.Name}} {{.Services}}'), /^web 1$/m);
    assert.match(await dk(ds.c)('stack', 'services', 'web', '--format', '{{.Name}} {{.Replicas}}'), /^web_web 2\/2$/m);
    const again = await engine(ds.a, ['apply', '--cluster', '-f', file('web', webDoc(2, 'two')), '-p', 'web', '--wait', '--timeout', '60']);
    assert.equal(again.code, 0, again.stderr + again.stdout);
    for (const [i, d] of [ds.b, ds.c].entries()) {
      const id = await containerIds(d, 'web');
      assert.equal(id.split('\n').length, 1);
      assert.equal(await dk(d)('inspect', '-f', '{{range .Config.Env}}{{println .}}{{end}}', id).then((e) => /^V=two$/m.test(e)), true);
      assert.notEqual(id, before[i], 'replaced');
    }
  });

  test('kill -9 of a node: its replica moves to another eligible node; the node back removes what is no longer assigned to it', async () => {
    await ds.b.stop({ signal: 'SIGKILL' });
    await until('both replicas on C', async () => (await running(ds.c, 'web')).length === 2, (TTL + 15) * 1000);
    assert.deepEqual(await running(ds.c, 'web'), ['web_web.1', 'web_web.2']);
    await ds.b.restart();
    await until('B runs nothing of it', async () => (await containerIds(ds.b, 'web')) === '', 30_000);
    assert.equal((await running(ds.c, 'web')).length, 2, 'C keeps both');
  });

  test('the leader killed: the next one carries on placing; stack rm --cluster removes it everywhere', async () => {
    const rows = (await dk(ds.a)('node', 'ls', '--format', '{{.Self}} {{.ManagerStatus}}')).split('\n');
    const leaderIsA = rows.some((r) => r === 'true Leader');
    const leaderId = (await dk(ds.a)('node', 'ls', '--format', '{{.ID}} {{.ManagerStatus}}')).split('\n').find((r) => r.endsWith(' Leader'))!.split(' ')[0]!;
    const byId: Record<string, DaemonHandle> = {};
    for (const d of Object.values(ds)) byId[JSON.parse(await dk(d)('info', '--format', '{{json .Swarm.NodeID}}'))] = d;
    const leader = byId[leaderId]!;
    await leader.stop({ signal: 'SIGKILL' });
    const alive = Object.values(ds).filter((d) => d !== leader);
    await until('another leader', async () => (await dk(alive[0]!)('node', 'ls', '--format', '{{.ID}} {{.ManagerStatus}}')).split('\n').some((r) => r.endsWith(' Leader') && !r.startsWith(leaderId)), (TTL + 15) * 1000);
    // Three replicas of the zone-b service: placed by the new leader on the zone-b nodes alive.
    const scaled = await engine(alive[0]!, ['apply', '--cluster', '-f', file('web', webDoc(3, 'two')), '-p', 'web']);
    assert.equal(scaled.code, 0, scaled.stderr);
    const zoneB = alive.filter((d) => d !== ds.a);
    await until('three replicas on the zone-b nodes alive', async () => {
      let n = 0;
      for (const d of zoneB) n += (await running(d, 'web')).length;
      return n === 3;
    }, 40_000);
    assert.equal((await engine(alive[0]!, ['stack', 'rm', '--cluster', 'web'])).code, 0);
    await until('removed everywhere', async () => {
      for (const d of alive) if ((await containerIds(d, 'web', true)) !== '') return false;
      return true;
    }, 30_000);
    assert.equal(await dk(alive[0]!)('network', 'ls', '-q', '--filter', 'label=com.docker.stack.namespace=web'), '');
    // One the docker CLI deployed is an engine stack too: engine stack rm --cluster removes it, and the other way round.
    const viaCli = file('cli', webDoc(1));
    await dk(alive[1]!)('stack', 'deploy', '--resolve-image', 'never', '-c', viaCli, 'cli');
    const seen = JSON.parse((await engine(alive[0]!, ['stack', 'inspect', '--cluster', 'cli'])).stdout)[0];
    assert.deepEqual(Object.keys(seen.Services), ['web']);
    assert.equal((await engine(alive[0]!, ['stack', 'rm', '--cluster', 'cli'])).code, 0);
    assert.equal(await dk(alive[1]!)('stack', 'ls', '--format', '{{.Name}}'), '');
    assert.equal((await engine(alive[0]!, ['apply', '--cluster', '-f', viaCli, '-p', 'eng'])).code, 0);
    assert.match(await dk(alive[1]!)('stack', 'ls', '--format', '{{.Name}}'), /^eng$/m);
    await dk(alive[1]!)('stack', 'rm', 'eng');
    assert.equal((await engine(alive[0]!, ['stack', 'inspect', '--cluster', 'eng'])).code, 1);
    if (!leaderIsA || leader !== ds.a) await leader.restart();
  });
});
