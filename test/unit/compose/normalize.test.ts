// A Compose application as the Engine API objects Compose v2 creates for it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planProject, undeclaredReference, durationNs, sizeBytes } from '../../../lib/compose/normalize.ts';
import { composeApp, type ComposeApp } from '../../../lib/compose/schema.ts';

const app = (doc: unknown): ComposeApp => composeApp.parse(doc);

const SHOP = app({
  services: {
    web: {
      image: 'busybox',
      command: 'httpd -f',
      environment: ['A=1', 'B'],
      ports: ['127.0.0.1:8080:80', '81/udp'],
      volumes: ['data:/data:ro', '/host:/h', { type: 'tmpfs', target: '/t', tmpfs: { size: '1m' } }],
      networks: { front: { aliases: ['www'] } },
      healthcheck: { test: 'true', interval: '1s', retries: 2 },
      restart: 'always',
      deploy: { replicas: 2, resources: { limits: { cpus: '0.5', memory: '64m' } } },
      configs: ['site'],
      secrets: [{ source: 'token', target: 'tok' }],
      stop_grace_period: '1m30s',
    },
    job: { image: 'busybox', restart: 'no' },
  },
  networks: { front: { internal: true } },
  volumes: { data: null },
  configs: { site: { content: 'hello' } },
  secrets: { token: { content: 's3cret' } },
});

test('services become Compose-named, Compose-labelled container bodies; networks and volumes the project-prefixed objects', () => {
  const plan = planProject('shop', SHOP, '/var/lib/engine/stacks/shop');
  assert.deepEqual(plan.networks.map((n) => n.name).sort(), ['shop_default', 'shop_front']);
  assert.equal(plan.networks.find((n) => n.key === 'front')!.body.Internal, true);
  assert.deepEqual(plan.volumes.map((v) => v.name), ['shop_data']);
  const web = plan.services.find((s) => s.name === 'web')!;
  assert.equal(web.replicas, 2);
  assert.equal(web.oneShot, false);
  assert.equal(web.containerName(2), 'shop-web-2');
  const b = web.body(2) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
  assert.deepEqual(b.Cmd, ['/bin/sh', '-c', 'httpd -f']);
  assert.deepEqual(b.Env, ['A=1', 'B=']);
  assert.equal(b.Labels['com.docker.compose.project'], 'shop');
  assert.equal(b.Labels['com.docker.compose.service'], 'web');
  assert.equal(b.Labels['com.docker.compose.container-number'], '2');
  assert.equal(b.Labels['com.docker.compose.oneoff'], 'False');
  assert.equal(b.Labels['engine.stack.owner'], 'shop');
  assert.deepEqual(b.HostConfig.PortBindings, { '80/tcp': [{ HostIp: '127.0.0.1', HostPort: '8080' }], '81/udp': [{ HostIp: '', HostPort: '' }] });
  assert.deepEqual(b.HostConfig.Mounts, [
    { Type: 'volume', Source: 'shop_data', Target: '/data', ReadOnly: true },
    { Type: 'bind', Source: '/host', Target: '/h', ReadOnly: false },
    { Type: 'tmpfs', Target: '/t', ReadOnly: false, TmpfsOptions: { SizeBytes: 1048576 } },
    { Type: 'bind', Source: '/var/lib/engine/stacks/shop/configs/site', Target: '/site', ReadOnly: true },
    { Type: 'bind', Source: '/var/lib/engine/stacks/shop/secrets/token', Target: '/run/secrets/tok', ReadOnly: true },
  ]);
  assert.equal(b.HostConfig.NetworkMode, 'shop_front');
  assert.deepEqual(b.NetworkingConfig.EndpointsConfig, { shop_front: { Aliases: ['web', 'www'] } });
  assert.deepEqual(b.HostConfig.RestartPolicy, { Name: 'always' });
  assert.equal(b.HostConfig.NanoCpus, 5e8);
  assert.equal(b.HostConfig.Memory, 64 * 1024 * 1024);
  assert.equal(b.StopTimeout, 90);
  assert.deepEqual(b.Healthcheck, { Test: ['CMD-SHELL', 'true'], Interval: 1e9, Timeout: undefined, Retries: 2, StartPeriod: undefined });
  const job = plan.services.find((s) => s.name === 'job')!;
  assert.equal(job.oneShot, true);
  assert.equal((job.body(1) as any).HostConfig.NetworkMode, 'shop_default'); // eslint-disable-line @typescript-eslint/no-explicit-any
});

test('the config hash changes exactly when a service must be recreated', () => {
  const hash = (doc: ComposeApp, svc: string) => planProject('p', doc, '/f').services.find((s) => s.name === svc)!.configHash;
  const base = app({ services: { a: { image: 'busybox', environment: { X: '1' } }, b: { image: 'busybox' } } });
  assert.equal(hash(base, 'a'), hash(app({ services: { b: { image: 'busybox' }, a: { environment: { X: '1' }, image: 'busybox' } } }), 'a'), 'key order does not matter');
  const changed = app({ services: { a: { image: 'busybox', environment: { X: '2' } }, b: { image: 'busybox' } } });
  assert.notEqual(hash(base, 'a'), hash(changed, 'a'));
  assert.equal(hash(base, 'b'), hash(changed, 'b'), 'another service changing leaves this one');
  const withConfig = (content: string) => app({ services: { a: { image: 'busybox', configs: ['c'] } }, configs: { c: { content } } });
  assert.notEqual(hash(withConfig('one'), 'a'), hash(withConfig('two'), 'a'), 'a config file\'s content is part of it');
});

test('undeclared networks, volumes, configs and secrets are named', () => {
  assert.equal(undeclaredReference(app({ services: { a: { image: 'b', networks: ['x'] } } })), 'services.a.networks: service "a" refers to undefined network x');
  assert.equal(undeclaredReference(app({ services: { a: { image: 'b', volumes: ['v:/v'] } } })), 'services.a.volumes: service "a" refers to undefined volume v');
  assert.equal(undeclaredReference(app({ services: { a: { image: 'b', secrets: ['s'] } } })), 'services.a.secrets: service "a" refers to undefined secret s');
  assert.equal(undeclaredReference(SHOP), undefined);
  assert.equal(durationNs('1m30s'), 90e9);
  assert.equal(sizeBytes('1.5k'), 1536);
});
