import assert from 'node:assert/strict';
import { test } from 'node:test';
import { composeApp } from '../../../lib/compose/schema.ts';
import { serviceSpecOf } from '../../../lib/swarm/service-spec.ts';
import { NAMESPACE_LABEL, stackObjects } from '../../../lib/swarm/stack-convert.ts';

const doc = composeApp.parse({
  services: {
    web: {
      image: 'busybox',
      command: ['sleep', '300'],
      environment: { B: 2, A: 'x' },
      ports: ['8080:80', { target: 53, published: 5353, protocol: 'udp', mode: 'host' }],
      networks: { front: { aliases: ['www'] } },
      secrets: ['token', { source: 'cert', target: 'tls.pem', mode: 0o400 }],
      configs: ['conf'],
      volumes: ['data:/data', '/srv:/srv:ro'],
      stop_grace_period: '30s',
      restart: 'on-failure:3',
      healthcheck: { test: 'true', interval: '5s' },
      deploy: {
        replicas: 2,
        placement: { constraints: ['engine.labels.zone == b'] },
        resources: { limits: { memory: '64m' }, reservations: { cpus: '0.5', generic_resources: [{ discrete_resource_spec: { kind: 'gpu', value: 1 } }] } },
        update_config: { parallelism: 2, delay: '1s', order: 'start-first' },
      },
    },
    db: { image: 'busybox' },
  },
  networks: { front: { labels: { tier: 'front' } } },
  volumes: { data: null },
  secrets: { token: { content: 's3cr€t' }, cert: { content: 'pem' } },
  configs: { conf: { content: 'a=1' } },
});

test('a Compose document as the docker CLI stack deploy converts it: names, labels, overlay networks, the default network', () => {
  const o = stackObjects('app', doc);
  assert.deepEqual(o.networks.map((n) => [n.name, n.body['Driver']]).sort(), [['app_default', 'overlay'], ['app_front', 'overlay']]);
  assert.deepEqual(o.networks.find((n) => n.key === 'front')!.body['Labels'], { tier: 'front', [NAMESPACE_LABEL]: 'app' });
  assert.deepEqual(o.secrets.map((s) => [s.name, Buffer.from(s.spec.Data, 'base64').toString()]), [['app_token', 's3cr€t'], ['app_cert', 'pem']]);
  assert.deepEqual(o.configs.map((s) => s.spec.Labels), [{ [NAMESPACE_LABEL]: 'app' }]);
  const web = o.services.find((s) => s.key === 'web')!.spec as any;
  assert.equal(web.Name, 'app_web');
  assert.deepEqual(web.Labels, { [NAMESPACE_LABEL]: 'app' });
  const cs = web.TaskTemplate.ContainerSpec;
  assert.deepEqual(cs.Args, ['sleep', '300']);
  assert.deepEqual(cs.Env, ['A=x', 'B=2']);
  assert.deepEqual(cs.Labels, { [NAMESPACE_LABEL]: 'app' });
  assert.equal(cs.StopGracePeriod, 30e9);
  assert.deepEqual(cs.Healthcheck, { Test: ['CMD-SHELL', 'true'], Interval: 5e9 });
  assert.deepEqual(cs.Secrets, [
    { File: { Name: 'token', UID: '0', GID: '0', Mode: 0o444 }, SecretName: 'app_token' },
    { File: { Name: 'tls.pem', UID: '0', GID: '0', Mode: 0o400 }, SecretName: 'app_cert' },
  ]);
  assert.deepEqual(cs.Mounts, [
    { Type: 'volume', Source: 'app_data', Target: '/data', VolumeOptions: { Labels: { [NAMESPACE_LABEL]: 'app' } } },
    { Type: 'bind', Source: '/srv', Target: '/srv', ReadOnly: true },
  ]);
  assert.deepEqual(web.TaskTemplate.Networks, [{ Target: 'app_front', Aliases: ['web', 'www'] }]);
  assert.deepEqual(web.TaskTemplate.RestartPolicy, { Condition: 'on-failure', MaxAttempts: 3 });
  assert.deepEqual(web.TaskTemplate.Placement, { Constraints: ['engine.labels.zone == b'] });
  assert.deepEqual(web.TaskTemplate.Resources, { Limits: { MemoryBytes: 64 * 1024 * 1024 }, Reservations: { NanoCPUs: 5e8, GenericResources: [{ DiscreteResourceSpec: { Kind: 'gpu', Value: 1 } }] } });
  assert.deepEqual(web.Mode, { Replicated: { Replicas: 2 } });
  assert.deepEqual(web.UpdateConfig, { Parallelism: 2, Delay: 1e9, Order: 'start-first' });
  assert.deepEqual(web.EndpointSpec.Ports, [
    { Protocol: 'tcp', TargetPort: 80, PublishedPort: 8080, PublishMode: 'ingress' },
    { Protocol: 'udp', TargetPort: 53, PublishedPort: 5353, PublishMode: 'host' },
  ]);
  const db = o.services.find((s) => s.key === 'db')!.spec as any;
  assert.deepEqual(db.TaskTemplate.Networks, [{ Target: 'app_default', Aliases: ['db'] }]);
  assert.deepEqual(db.Mode, { Replicated: { Replicas: 1 } });
});

test('a converted service passes the service checks (network names resolved to ids)', () => {
  const o = stackObjects('app', doc);
  const networks = o.networks.map((n, i) => ({ ID: `net${i}`, Name: n.name }));
  for (const s of o.services) {
    const spec = serviceSpecOf(s.spec, () => s.name, { networks: networks as never });
    assert.equal(spec.Name, s.name);
  }
});

test('what a swarm cannot do is refused in words: a bridge network, a host address, a port range', () => {
  const one = (extra: object, top: object = {}) => composeApp.parse({ services: { web: { image: 'busybox', ...extra } }, ...top });
  assert.throws(() => stackObjects('app', one({}, { networks: { default: { driver: 'bridge' } } })), /networks\.default\.driver: a cluster stack's networks are overlay/);
  assert.throws(() => stackObjects('app', one({ ports: ['127.0.0.1:80:80'] })), /host address/);
  assert.throws(() => stackObjects('app', one({ ports: ['8000-8001:80-81'] })), /port ranges/);
});
