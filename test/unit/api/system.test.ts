// System routes: ping, version, info (live counts), swarm answers, data usage.
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { systemRoutes } from '../../../api/system/routes.ts';
import { type ContainerStatus, Containers } from '../../../store/kinds/container.ts';
import { type ImageSpec, type ImageStatus, Images } from '../../../store/kinds/image.ts';

import { containerRecord } from '../container/fake-world.ts';
import { routeHarness, type RouteHarness } from './route-harness.ts';
import type { ClusterPort } from '../../../api/nodes/port.ts';
import type { NodeRecord } from '../../../lib/cluster/node-record.ts';

/** The system routes on a fresh real store, closed when the test ends. */
async function setup(t: TestContext, cluster?: () => ClusterPort | undefined): Promise<RouteHarness> {
  const h = await routeHarness((store) => [
    systemRoutes({
      store,
      info: {
        info: async () => ({ Driver: 'overlay2', NCPU: 4, MemTotal: 1024, KernelVersion: '6.1.0', Containers: 99 }),
        components: async () => [{ Name: 'supervisor', Version: '2.0.0' }],
      },
      versionInfo: { version: '0.1.0', apiVersion: '1.47', minApiVersion: '1.24', gitCommit: 'abc123' },
      experimental: false,
      cluster,
    }),
  ]);
  t.after(() => h.close());
  return h;
}

/** A complete image record (as api/images/records.ts writes one); `seed` picks its id. */
function image(seed: string, phase: ImageStatus['phase'], spec: Partial<ImageSpec> = {}): [string, ImageSpec, ImageStatus] {
  const id = `sha256:${createHash('sha256').update(seed).digest('hex')}`;
  return [
    id,
    { id, rawConfig: '{}', diffIds: [], chainId: null, size: 0, repoDigests: [], parent: '', loadedAt: '2024-01-01T00:00:00Z', desired: 'present', ...spec },
    { observedGeneration: phase === 'pending' ? 0 : 1, phase, error: '' },
  ];
}

describe('system routes', () => {
  test('GET and HEAD /_ping', async (t) => {
    const { app } = await setup(t);
    for (const url of ['/_ping', '/v1.24/_ping']) {
      const r = await app.inject(url);
      assert.equal(r.statusCode, 200);
      assert.equal(r.body, 'OK');
      assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
      assert.equal(r.headers['api-version'], '1.47');
      assert.equal(r.headers['builder-version'], '1');
      assert.equal(r.headers['docker-experimental'], 'false');
      assert.equal(r.headers.swarm, 'inactive');
      assert.equal(r.headers['cache-control'], 'no-cache, no-store, must-revalidate');
      assert.equal(r.headers.pragma, 'no-cache');
      assert.equal(r.headers.ostype, 'linux');
    }
    const h = await app.inject({ method: 'HEAD', url: '/_ping' });
    assert.equal(h.statusCode, 200);
    assert.equal(h.body, '');
    assert.equal(h.headers['content-length'], '0');
    assert.equal(h.headers['api-version'], '1.47');
    assert.equal(h.headers.swarm, 'inactive');
  });

  test('GET /version', async (t) => {
    const { app } = await setup(t);
    const v = (await app.inject('/version')).json();
    assert.equal(v.ApiVersion, '1.47');
    assert.equal(v.MinAPIVersion, '1.24');
    assert.equal(v.Version, '0.1.0');
    assert.equal(v.Os, 'linux');
    assert.equal(v.GitCommit, 'abc123');
    assert.equal(typeof v.Arch, 'string');
    assert.equal(typeof v.KernelVersion, 'string');
    assert.equal(v.Platform.Name, 'Engine');
    assert.equal(v.Components[0].Name, 'Engine');
    assert.equal(v.Components[0].Details.ApiVersion, '1.47');
    assert.equal(v.Components[1].Name, 'supervisor');
  });

  test('GET /info merges machine facts with live counts', async (t) => {
    const { app, store } = await setup(t);
    const phases: ContainerStatus['phase'][] = ['running', 'running', 'paused', 'exited', 'created'];
    phases.forEach((phase, i) => {
      const id = String(i).repeat(64);
      const r = containerRecord(id, { spec: { imageId: 'sha256:x' }, status: { phase } });
      store.create(Containers, id, r.spec, r.status);
    });
    store.create(Images, ...image('a', 'ready'));
    store.create(Images, ...image('b', 'pending'));
    const info = (await app.inject('/info')).json();
    assert.equal(info.Containers, 5);
    assert.equal(info.ContainersRunning, 2);
    assert.equal(info.ContainersPaused, 1);
    assert.equal(info.ContainersStopped, 2);
    assert.equal(info.Images, 1);
    assert.equal(info.Driver, 'overlay2');
    assert.equal(info.NCPU, 4);
    assert.equal(info.ServerVersion, '0.1.0');
    assert.equal(info.Swarm.LocalNodeState, 'inactive');
    assert.equal(info.OSType, 'linux');
    assert.ok(Array.isArray(info.DriverStatus));
    assert.equal(typeof info.RegistryConfig.IndexConfigs, 'object');
    assert.equal(typeof info.Runtimes, 'object');
    assert.equal(typeof info.SystemTime, 'string');
  });

  test('swarm routes are 503 not a manager', async (t) => {
    const { app } = await setup(t);
    for (const [method, url] of [['GET', '/swarm'], ['GET', '/v1.47/nodes'], ['POST', '/services/create'], ['GET', '/tasks/x'], ['POST', '/swarm/init']] as const) {
      const r = await app.inject({ method, url });
      assert.equal(r.statusCode, 503, url);
      assert.match(r.json().message, /^This node is not a swarm manager\./);
    }
    const leave = await app.inject({ method: 'POST', url: '/swarm/leave' });
    assert.equal(leave.statusCode, 503);
    assert.equal(leave.json().message, 'This node is not part of a swarm');
  });

  test('a node that joins and leaves while the daemon runs: /info, /_ping and GET /nodes follow it', async (t) => {
    const node: NodeRecord = { id: 'n'.repeat(25), hostname: 'h1', addr: '10.0.0.1', engineVersion: '0.1.0', labels: {}, os: 'linux', arch: 'x86_64', nanoCpus: 2e9, memoryBytes: 2 ** 30, genericResources: [], state: 'ready', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', version: 1 };
    let current: ClusterPort | undefined;
    const { app } = await setup(t, () => current);
    const swarm = async () => (await app.inject('/info')).json().Swarm;
    assert.equal((await swarm())?.LocalNodeState ?? 'inactive', 'inactive');
    assert.equal((await app.inject('/nodes')).statusCode, 503);
    current = { nodeId: node.id, state: 'active', error: '', leaderId: node.id, nodes: () => [node], self: () => node };
    assert.equal((await swarm()).LocalNodeState, 'active');
    assert.equal((await swarm()).NodeID, node.id);
    assert.match(String((await app.inject('/_ping')).headers.swarm), /^active/);
    const nodes = await app.inject('/nodes');
    assert.equal(nodes.statusCode, 200);
    assert.equal(nodes.json()[0].ID, node.id);
    assert.equal((await app.inject(`/nodes/${node.id}`)).json().ManagerStatus.Leader, true);
    current = undefined;
    assert.equal((await app.inject('/nodes')).statusCode, 503);
    assert.match((await app.inject('/nodes/x')).json().message, /^This node is not a swarm manager\./);
    assert.equal((await app.inject('/_ping')).headers.swarm, 'inactive');
  });

  test('GET /system/df', async (t) => {
    const { app, store } = await setup(t);
    store.create(Images, ...image('a', 'ready', { size: 10 }));
    const df = (await app.inject('/system/df')).json();
    assert.equal(df.LayersSize, 10);
    assert.equal(df.Images.length, 1);
    assert.deepEqual(df.Containers, []);
    assert.deepEqual(df.Volumes, []);
    assert.deepEqual(df.BuildCache, []);
    const only = (await app.inject('/system/df?type=volume')).json();
    assert.deepEqual(Object.keys(only), ['Volumes']);
  });
});
