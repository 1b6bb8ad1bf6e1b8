// Stacks converged and kept converged, through the stack API and the docker CLI: a Compose
// application becomes Compose-named containers on the project's network (service names resolve),
// Ready once they run and are healthy; what is removed or killed out of band comes back; the same
// document applied twice recreates nothing, a changed service is recreated, a dropped one pruned;
// a name taken by someone else is Degraded; DELETE takes away what the stack owns.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { apiRequest, dockerOk, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

const execFileP = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The stack API speaks YAML here. */
const call = (d: DaemonHandle, method: string, path: string, body?: string) => apiRequest(d, method, path, body, 'application/yaml');

const doc = (image: string, extra = '', env = 'one') => `
services:
  web:
    image: ${image}
    command: ["sh", "-c", "mkdir -p /www && echo hello-web > /www/index.html && echo web-is-up && exec httpd -f -p 80 -h /www"]
    environment:
      STAGE: ${env}
    networks:
      front:
        aliases: [www]
    healthcheck:
      test: ["CMD", "true"]
      interval: 300ms
    deploy:
      replicas: 2
    volumes: ["data:/data"]
  probe:
    image: ${image}
    restart: "no"
    networks: [front]
    command: ["sh", "-c", "for i in $(seq 1 50); do echo | nc -w 1 www 80 && exit 0; sleep 0.2; done; exit 1"]
${extra}
networks:
  front: {}
volumes:
  data: {}
`;

describe('stacks', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  before(async () => {
    ({ d, imgs } = await startWithImages({ bridge: true }));
  });
  after(() => removeAllAndCleanup(d));

  async function until(name: string, pred: (s: any) => boolean, what: string, timeoutMs = 30_000): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
    const end = Date.now() + timeoutMs;
    let last: any; // eslint-disable-line @typescript-eslint/no-explicit-any
    while (Date.now() < end) {
      last = (await call(d, 'GET', `/stacks/${name}`)).body;
      if (last && pred(last)) return last;
      await sleep(200);
    }
    assert.fail(`${what}: ${JSON.stringify(last?.Status)}`);
  }
  const cond = (s: any, type: string) => s.Status.Conditions.find((c: { type: string }) => c.type === type); // eslint-disable-line @typescript-eslint/no-explicit-any
  const ready = (s: any) => s.Status.ObservedGeneration === s.Generation && cond(s, 'Ready')?.status === 'True'; // eslint-disable-line @typescript-eslint/no-explicit-any
  const ids = async () => (await dk('ps', '-a', '--filter', 'label=com.docker.compose.project=shop', '--format', '{{.Names}} {{.ID}}')).split('\n').filter(Boolean).sort();

  test('apply: Compose-named containers, Ready once running and healthy; service names resolve', async () => {
    assert.equal((await call(d, 'PUT', '/stacks/shop', doc(imgs.tag))).status, 201);
    const s = await until('shop', ready, 'the stack became Ready');
    assert.equal(s.Status.Services.web.ready, 2);
    assert.equal(cond(s, 'Ready').reason, 'AllServicesReady');
    assert.equal(s.Status.Services.probe.conditions.find((c: { type: string }) => c.type === 'Ready').reason, 'Completed', 'the probe reached web by its alias');
    const names = (await ids()).map((l) => l.split(' ')[0]);
    assert.deepEqual(names, ['shop-probe-1', 'shop-web-1', 'shop-web-2']);
    assert.equal(await dk('inspect', '-f', '{{index .Config.Labels "com.docker.compose.service"}} {{index .Config.Labels "com.docker.compose.container-number"}}', 'shop-web-2'), 'web 2');
    assert.match(await dk('network', 'ls', '--format', '{{.Name}}'), /^shop_front$/m);
    assert.match(await dk('volume', 'ls', '--format', '{{.Name}}'), /^shop_data$/m);
  });

  test('kept converged: a container removed or killed out of band comes back', async () => {
    const before = await ids();
    await dk('rm', '-f', 'shop-web-1');
    await dk('kill', 'shop-web-2');
    await until('shop', (s) => ready(s) && s.Status.Services.web.ready === 2, 'the stack healed');
    assert.equal(await dk('inspect', '-f', '{{.State.Running}}', 'shop-web-1'), 'true');
    assert.equal(await dk('inspect', '-f', '{{.State.Running}}', 'shop-web-2'), 'true');
    const after = await ids();
    assert.notEqual(after.find((l) => l.startsWith('shop-web-1 ')), before.find((l) => l.startsWith('shop-web-1 ')), 'a new shop-web-1');
    assert.equal(after.find((l) => l.startsWith('shop-web-2 ')), before.find((l) => l.startsWith('shop-web-2 ')), 'shop-web-2 started again, not recreated');
  });

  test('the same document twice recreates nothing; a changed service is recreated; a dropped one pruned', async () => {
    const before = await ids();
    assert.equal((await call(d, 'PUT', '/stacks/shop', doc(imgs.tag))).status, 200);
    await until('shop', ready, 'the same document converged');
    assert.deepEqual(await ids(), before, 'no container recreated');
    const gen = (await call(d, 'PUT', '/stacks/shop', doc(imgs.tag, '', 'two'))).body.Generation;
    await until('shop', (s) => ready(s) && s.Status.ObservedGeneration >= gen, 'the changed document converged');
    const changed = await ids();
    for (const n of ['shop-web-1', 'shop-web-2']) assert.notEqual(changed.find((l) => l.startsWith(`${n} `)), before.find((l) => l.startsWith(`${n} `)), `${n} recreated`);
    assert.equal(changed.find((l) => l.startsWith('shop-probe-1 ')), before.find((l) => l.startsWith('shop-probe-1 ')), 'the unchanged service kept its container');
    assert.equal(await dk('inspect', '-f', '{{range .Config.Env}}{{println .}}{{end}}', 'shop-web-1').then((e) => /STAGE=two/.test(e)), true);
    const dropped = doc(imgs.tag, '', 'two').replace(/  probe:[\s\S]*?exit 1"\]\n/, '');
    assert.doesNotMatch(dropped, /probe/);
    await call(d, 'PUT', '/stacks/shop', dropped);
    await until('shop', (s) => ready(s) && !('probe' in s.Status.Services), 'the dropped service');
    for (let i = 0; i < 50 && (await ids()).some((l) => l.startsWith('shop-probe-1 ')); i++) await sleep(100);
    assert.deepEqual((await ids()).map((l) => l.split(' ')[0]), ['shop-web-1', 'shop-web-2']);
  });

  test('a name taken by a container the stack did not create: Degraded with the reason, the container left alone', async () => {
    await dk('create', '--name', 'clash-web-1', imgs.tag, 'true');
    await call(d, 'PUT', '/stacks/clash', `services:\n  web:\n    image: ${imgs.tag}\n    command: ["sleep", "300"]\n`);
    const s = await until('clash', (x) => cond(x, 'Degraded')?.status === 'True', 'Degraded');
    assert.match(cond(s, 'Degraded').message, /container clash-web-1 exists and was not created by this stack/);
    assert.equal((await call(d, 'DELETE', '/stacks/clash')).status, 204);
    assert.equal(await dk('inspect', '-f', '{{.Name}}', 'clash-web-1'), '/clash-web-1', 'not removed with the stack');
  });

  test('placement and reservations this node does not meet keep a service Pending with the reason, and nothing runs', async () => {
    const pend = `services:\n  far:\n    image: ${imgs.tag}\n    command: ["sleep", "300"]\n    deploy:\n      placement:\n        constraints: ["node.labels.zone == mars"]\n  big:\n    image: ${imgs.tag}\n    command: ["sleep", "300"]\n    deploy:\n      resources:\n        reservations:\n          cpus: "64"\n`;
    await call(d, 'PUT', '/stacks/pend', pend);
    const s = await until('pend', (x) => x.Status.ObservedGeneration === x.Generation && cond(x, 'Progressing')?.status === 'True', 'Pending');
    const svcCond = (svc: string) => s.Status.Services[svc].conditions.find((c: { type: string }) => c.type === 'Progressing');
    assert.equal(svcCond('far').reason, 'Pending');
    assert.match(svcCond('far').message, /constraint "node.labels.zone == mars" is not met by this node/);
    assert.match(svcCond('big').message, /reservation of 64 CPUs exceeds this node's \d+/);
    assert.equal(await dk('ps', '-aq', '--filter', 'label=com.docker.compose.project=pend'), '', 'nothing was created');
    assert.equal((await call(d, 'DELETE', '/stacks/pend')).status, 204);
  });

  test('a daemon restart: the stack re-converges from the store', async () => {
    await d.restart();
    await until('shop', (s) => ready(s) && s.Status.Services.web.ready === 2, 'Ready again after the restart', 60_000);
  });

  test('a kill -9 of the daemon: the stack re-converges from the store', async () => {
    const pids = async () => (await dk('inspect', '-f', '{{.State.Running}} {{.State.Pid}}', 'shop-web-1', 'shop-web-2')).split('\n');
    const before = await pids();
    await d.stop({ signal: 'SIGKILL' });
    await d.restart();
    // The containers the killed daemon left were stopped at start-up (no live restore) and the stack
    // starts them again: new processes, Ready once they run.
    let now: string[] = [];
    for (let i = 0; i < 300; i++) {
      now = await pids();
      if (now.every((p, j) => /^true [1-9]/.test(p) && p !== before[j])) break;
      await sleep(200);
    }
    for (const [i, p] of now.entries()) {
      assert.match(p, /^true [1-9]/);
      assert.notEqual(p, before[i], 'started again by this daemon');
    }
    await until('shop', (s) => ready(s) && s.Status.Services.web.ready === 2, 'Ready again after kill -9', 60_000);
    assert.deepEqual((await ids()).map((l) => l.split(' ')[0]), ['shop-web-1', 'shop-web-2']);
  });

  test('docker-compose 1.29 sees the stack: ps lists its containers, logs shows their output', { skip: !existsSync('/usr/bin/docker-compose') && 'docker-compose is not installed' }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stack-compose-'));
    try {
      const file = join(dir, 'compose.yaml');
      writeFileSync(file, doc(imgs.tag, '', 'two').replace(/  probe:[\s\S]*?exit 1"\]\n/, ''));
      const compose = (...args: string[]) => execFileP('docker-compose', ['-p', 'shop', '-f', file, ...args], { env: { ...process.env, DOCKER_HOST: d.dockerHost, COMPOSE_INTERACTIVE_NO_CLI: '1' }, timeout: 60_000 });
      const ps = (await compose('ps')).stdout;
      assert.match(ps, /shop-web-1\s.*Up/);
      assert.match(ps, /shop-web-2\s.*Up/);
      const q = (await compose('ps', '-q')).stdout.split('\n').filter(Boolean).sort();
      assert.deepEqual(q, (await ids()).map((l) => l.split(' ')[1]).sort().map((id) => q.find((x) => x.startsWith(id)) ?? id), 'the same containers');
      const logs = (await compose('logs', '--no-color', 'web')).stdout;
      assert.match(logs, /web_1 .*\| web-is-up|shop-web-1 .*\| web-is-up/);
      assert.match(logs, /web_2 .*\| web-is-up|shop-web-2 .*\| web-is-up/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('DELETE takes away the containers and the network; the named volume only with volumes=1', async () => {
    assert.equal((await call(d, 'DELETE', '/stacks/shop')).status, 204);
    assert.deepEqual(await ids(), []);
    assert.doesNotMatch(await dk('network', 'ls', '--format', '{{.Name}}'), /shop_front/);
    assert.match(await dk('volume', 'ls', '--format', '{{.Name}}'), /^shop_data$/m, 'kept without volumes=1');
    assert.equal((await call(d, 'PUT', '/stacks/shop', doc(imgs.tag))).status, 201);
    await until('shop', ready, 'the stack came back on its old volume');
    assert.equal((await call(d, 'DELETE', '/stacks/shop?volumes=1')).status, 204);
    assert.doesNotMatch(await dk('volume', 'ls', '--format', '{{.Name}}'), /shop_data/);
  });
});
