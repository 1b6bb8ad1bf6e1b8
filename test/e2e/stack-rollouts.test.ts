// Stacks roll changes safely, through bin/engine and the docker CLI: depends_on conditions hold
// dependants until they are met; a start-first rolling update of two replicas behind a service
// name that never stops answering; a failing update rolled back with the reason (apply --wait
// exits non-zero naming it, stack inspect shows the rollout); scaling up and down without
// recreating; `engine stack diff`; an unhealthy replica replaced, with an event.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dockerOk, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { runEngine } from './harness/engine-cli.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const engine = runEngine;

/** The web service: busybox httpd answering $V, healthy once its probe passes. */
function webDoc(image: string, o: { v: string; replicas?: number; health?: string; prober?: boolean }): string {
  return `services:
  web:
    image: ${image}
    command: ["sh", "-c", "mkdir -p /www && echo $$V > /www/index.html && exec httpd -f -p 80 -h /www"]
    environment:
      V: ${o.v}
    healthcheck:
      test: ${o.health ?? '["CMD", "true"]'}
      interval: 300ms
      retries: 1
    deploy:
      replicas: ${o.replicas ?? 2}
      update_config:
        parallelism: 1
        order: start-first
        failure_action: rollback
        monitor: 1s
${o.prober === false ? '' : `  prober:
    image: ${image}
    command:
      - sh
      - -c
      - |
        while true; do
          # Up to three tries of a second each, as a client retries: a connection in flight to the
          # replica being removed can be cut (no connection draining yet); the name must keep leading
          # to a serving replica.
          r=FAIL
          for t in 1 2 3; do
            if printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 1 web 80 | grep -q '^v'; then r=ok; break; fi
            sleep 0.3
          done
          if [ $$r = FAIL ]; then echo "FAIL $$(date +%s.%N) $$(nslookup web 2>&1 | grep Address | tr '\\n' ' ')"; else echo ok; fi
          sleep 0.1
        done
`}`;
}

describe('stack rollouts', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  let dir: string;
  const dk = dockerOk(() => d);
  const env = () => ({ ENGINE_HOST: `unix://${d.socket}` });
  before(async () => {
    ({ d, imgs } = await startWithImages({ bridge: true }));
    dir = mkdtempSync(join(tmpdir(), 'stack-rollouts-'));
  });
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await removeAllAndCleanup(d);
  });

  const file = (name: string, text: string) => {
    const p = join(dir, `${name}.yaml`);
    writeFileSync(p, text);
    return p;
  };
  const inspect = async (name: string): Promise<any> => JSON.parse((await engine(['stack', 'inspect', name], env())).stdout)[0]; // eslint-disable-line @typescript-eslint/no-explicit-any
  const names = async (project: string) => (await dk('ps', '-a', '--filter', `label=com.docker.compose.project=${project}`, '--format', '{{.Names}}')).split('\n').filter(Boolean).sort();
  const id = (name: string) => dk('inspect', '-f', '{{.Id}}', name);
  const env1 = async (name: string) => (await dk('inspect', '-f', '{{range .Config.Env}}{{println .}}{{end}}', name)).match(/^V=(.*)$/m)?.[1];
  const probes = async () => (await dk('logs', 'shop-prober-1')).split('\n').filter(Boolean);

  test('depends_on: dependants wait for service_healthy and service_completed_successfully, and the stack says what it waits on', async () => {
    const f = file('deps', `services:
  db:
    image: ${imgs.tag}
    command: ["sh", "-c", "sleep 2; touch /tmp/ok; exec sleep 300"]
    healthcheck:
      test: ["CMD", "test", "-f", "/tmp/ok"]
      interval: 300ms
      start_period: 10s
  migrate:
    image: ${imgs.tag}
    restart: "no"
    command: ["sh", "-c", "sleep 0.5; echo migrated"]
    depends_on:
      db:
        condition: service_healthy
  app:
    image: ${imgs.tag}
    command: ["sleep", "300"]
    depends_on:
      migrate:
        condition: service_completed_successfully
      db:
        condition: service_started
`);
    const applied = await engine(['apply', '-f', f, '-p', 'deps'], env());
    assert.equal(applied.code, 0, applied.stderr);
    let waiting: any; // eslint-disable-line @typescript-eslint/no-explicit-any
    for (let i = 0; i < 50 && !waiting; i++) {
      const s = await inspect('deps');
      if (s.Status.Services.migrate?.waitingOn) waiting = s;
      else await sleep(100);
    }
    assert.ok(waiting, 'migrate waited');
    assert.equal(waiting.Status.Services.migrate.waitingOn, 'db (service_healthy)');
    assert.equal(waiting.Status.Services.migrate.conditions.find((c: { type: string }) => c.type === 'Progressing').reason, 'WaitingForDependencies');
    assert.match(waiting.Status.Conditions.find((c: { type: string }) => c.type === 'Progressing').message, /migrate: waiting for db \(service_healthy\)/);
    assert.deepEqual(await names('deps'), ['deps-db-1'], 'nothing else created while db is not healthy');
    const ready = await engine(['apply', '-f', f, '-p', 'deps', '--wait', '--timeout', '60'], env());
    assert.equal(ready.code, 0, ready.stderr);
    assert.deepEqual(await names('deps'), ['deps-app-1', 'deps-db-1', 'deps-migrate-1']);
    const t = async (name: string, field: string) => Date.parse(await dk('inspect', '-f', `{{${field}}}`, name));
    assert.ok((await t('deps-migrate-1', '.Created')) >= (await t('deps-db-1', '.State.StartedAt')) + 1500, 'migrate made after db turned healthy');
    assert.ok((await t('deps-app-1', '.Created')) >= (await t('deps-migrate-1', '.State.FinishedAt')), 'app made after migrate completed');
    assert.equal((await engine(['stack', 'rm', 'deps'], env())).code, 0);
  });

  test('a start-first rolling update of two replicas: the service name never stops answering', async () => {
    const v1 = await engine(['apply', '-f', file('shop', webDoc(imgs.tag, { v: 'v1' })), '-p', 'shop', '--wait', '--timeout', '60'], env());
    assert.equal(v1.code, 0, v1.stderr);
    for (let i = 0; i < 50 && !(await probes()).includes('ok'); i++) await sleep(100);
    const before = (await probes()).length;
    const v2 = await engine(['apply', '-f', file('shop', webDoc(imgs.tag, { v: 'v2' })), '-p', 'shop', '--wait', '--timeout', '90'], env());
    assert.equal(v2.code, 0, v2.stderr);
    assert.deepEqual(await names('shop'), ['shop-prober-1', 'shop-web-1', 'shop-web-2'], 'the replicas keep their names');
    assert.equal(await env1('shop-web-1'), 'v2');
    assert.equal(await env1('shop-web-2'), 'v2');
    // A moment for the prober's last lines to reach its log.
    await sleep(1500);
    const during = (await probes()).slice(before);
    assert.ok(during.length >= 1, `the prober kept asking (${during.length})`);
    assert.deepEqual(during.filter((l) => l !== 'ok'), [], 'every answer came');
    const s = await inspect('shop');
    assert.equal(s.Status.Services.web.lastRollout.state, 'Completed');
    assert.equal(s.Status.Services.web.lastRollout.updated, 2);
  });

  test('a failing update is rolled back: the old replicas keep serving; Degraded with the reason; apply --wait exits non-zero naming it', async () => {
    const ids = [await id('shop-web-1'), await id('shop-web-2')];
    const before = (await probes()).length;
    const bad = await engine(['apply', '-f', file('shop', webDoc(imgs.tag, { v: 'v3', health: '["CMD", "false"]' })), '-p', 'shop', '--wait', '--timeout', '60'], env());
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /Degraded/);
    assert.match(bad.stderr, /web: .*rolled back: container shop-web-1 is unhealthy/);
    let s: any; // eslint-disable-line @typescript-eslint/no-explicit-any
    for (let i = 0; i < 100; i++) {
      s = await inspect('shop');
      if (s.Status.Services.web.lastRollout.state === 'RolledBack') break;
      await sleep(100);
    }
    assert.equal(s.Status.Services.web.lastRollout.state, 'RolledBack');
    assert.match(s.Status.Services.web.lastRollout.reason, /shop-web-1 is unhealthy/);
    assert.equal(s.Status.Services.web.conditions.find((c: { type: string }) => c.type === 'Degraded').reason, 'RolledBack');
    assert.deepEqual(await names('shop'), ['shop-prober-1', 'shop-web-1', 'shop-web-2']);
    assert.deepEqual([await id('shop-web-1'), await id('shop-web-2')], ids, 'the old replicas were never stopped');
    const ps = await engine(['stack', 'ps', 'shop'], env());
    assert.match(ps.stdout, /web\s+2\s+2\s+Degraded\s+RolledBack/);
    const during = (await probes()).slice(before);
    assert.deepEqual(during.filter((l) => l !== 'ok'), [], `every answer came, from the old version ${JSON.stringify(await dk('ps', '-a', '--format', '{{.Names}} {{.Status}} {{.ID}}'))} ${Date.now() / 1000}`);
  });

  test('engine stack diff: what an apply would create, recreate or remove, without doing it', async () => {
    const ids = [await id('shop-web-1'), await id('shop-web-2')];
    const same = await engine(['stack', 'diff', '-f', file('shop', webDoc(imgs.tag, { v: 'v2' })), '-p', 'shop'], env());
    assert.equal(same.code, 0, same.stderr);
    assert.equal(same.stdout.trim(), 'stack shop: no changes');
    const changed = await engine(['stack', 'diff', '-f', file('shop-diff', webDoc(imgs.tag, { v: 'v9', replicas: 3, prober: false })), '-p', 'shop'], env());
    assert.equal(changed.code, 0, changed.stderr);
    const rows = changed.stdout.trim().split('\n').slice(1).map((l) => l.trim().split(/\s+/).join(' '));
    assert.deepEqual(rows, ['recreate container shop-web-1 web', 'recreate container shop-web-2 web', 'create container shop-web-3 web', 'remove container shop-prober-1 prober']);
    assert.deepEqual([await id('shop-web-1'), await id('shop-web-2')], ids, 'nothing changed');
    assert.deepEqual(await names('shop'), ['shop-prober-1', 'shop-web-1', 'shop-web-2']);
  });

  test('scaling: replicas added and removed, the highest numbers first, nothing recreated', async () => {
    const first = await id('shop-web-1');
    const up = await engine(['apply', '-f', file('shop', webDoc(imgs.tag, { v: 'v2', replicas: 3 })), '-p', 'shop', '--wait', '--timeout', '60'], env());
    assert.equal(up.code, 0, up.stderr);
    assert.deepEqual(await names('shop'), ['shop-prober-1', 'shop-web-1', 'shop-web-2', 'shop-web-3']);
    const down = await engine(['apply', '-f', file('shop', webDoc(imgs.tag, { v: 'v2', replicas: 1 })), '-p', 'shop', '--wait', '--timeout', '60'], env());
    assert.equal(down.code, 0, down.stderr);
    for (let i = 0; i < 50 && (await names('shop')).length > 2; i++) await sleep(100);
    assert.deepEqual(await names('shop'), ['shop-prober-1', 'shop-web-1']);
    assert.equal(await id('shop-web-1'), first, 'shop-web-1 kept');
    assert.equal((await inspect('shop')).Status.Services.web.ready, 1);
    assert.equal((await engine(['stack', 'rm', 'shop'], env())).code, 0);
  });

  test('a replica that turns unhealthy and stays so is replaced, with an event and the count in status', async () => {
    const f = file('heal', `services:
  web:
    image: ${imgs.tag}
    command: ["sh", "-c", "touch /tmp/healthy; exec sleep 300"]
    healthcheck:
      test: ["CMD", "test", "-f", "/tmp/healthy"]
      interval: 300ms
      retries: 2
`);
    const since = Math.floor(Date.now() / 1000);
    assert.equal((await engine(['apply', '-f', f, '-p', 'heal', '--wait', '--timeout', '60'], env())).code, 0);
    const old = await id('heal-web-1');
    await dk('exec', 'heal-web-1', 'rm', '/tmp/healthy');
    let s: any; // eslint-disable-line @typescript-eslint/no-explicit-any
    for (let i = 0; i < 150; i++) {
      s = await inspect('heal');
      if (s.Status.Services.web.replaced === 1 && s.Status.Conditions.find((c: { type: string }) => c.type === 'Ready').status === 'True') break;
      await sleep(100);
    }
    assert.equal(s.Status.Services.web.replaced, 1);
    assert.equal(s.Status.Services.web.lastReplaced.id, old);
    assert.match(s.Status.Services.web.lastReplaced.reason, /^unhealthy since /);
    assert.notEqual(await id('heal-web-1'), old, 'a new container in its place');
    assert.equal(await dk('inspect', '-f', '{{.State.Health.Status}}', 'heal-web-1'), 'healthy');
    const events = await dk('events', '--since', String(since), '--until', String(Math.ceil(Date.now() / 1000) + 1), '--filter', 'type=stack', '--format', '{{.Type}} {{.Action}} {{.Actor.ID}} {{.Actor.Attributes.container}}');
    assert.match(events, /^stack replace heal heal-web-1$/m);
    assert.equal((await engine(['stack', 'rm', 'heal'], env())).code, 0);
  });
});
