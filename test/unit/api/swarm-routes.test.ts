// The swarm routes (api/swarm/routes.ts) on a fake swarm: what reaches the node from init and
// update, refusals of bad input before anything is asked of the node, and the node's own answers.
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { systemRoutes } from '../../../api/system/routes.ts';
import type { SwarmInitRequest, SwarmPort, SwarmUpdate } from '../../../api/swarm/port.ts';
import { defaultSwarmSpec, type ClusterRecord } from '../../../lib/swarm/cluster-object.ts';
import { unavailable } from '../../../lib/errors.ts';
import { routeHarness } from './route-harness.ts';
import { REFERENCE_ROOT } from '../swarm/reference-root.ts';

class FakeSwarm implements SwarmPort {
  inSwarm = false;
  inits: SwarmInitRequest[] = [];
  updates: SwarmUpdate[] = [];
  leaves: boolean[] = [];
  local() {
    return { state: this.inSwarm ? ('active' as const) : ('inactive' as const), error: '', manager: this.inSwarm };
  }
  cached() {
    return undefined;
  }
  services(): never {
    throw unavailable('This node is not a swarm manager.');
  }
  networks(): never {
    throw unavailable('This node is not a swarm manager.');
  }
  secrets(): never {
    throw unavailable('This node is not a swarm manager.');
  }
  configs(): never {
    throw unavailable('This node is not a swarm manager.');
  }
  async init(req: SwarmInitRequest) {
    this.inits.push(req);
    this.inSwarm = true;
    return 'node0000000000000000000id';
  }
  joins: unknown[] = [];
  async join(req: unknown) {
    if (this.inSwarm) throw unavailable('This node is already part of a swarm. Use "docker swarm leave" to leave this swarm and join another one.');
    this.joins.push(req);
  }
  async leave(force: boolean) {
    this.leaves.push(force);
  }
  async inspect(): Promise<ClusterRecord> {
    if (!this.inSwarm) throw unavailable('not a manager');
    return { id: 'c', version: 7, createdAt: 'x', updatedAt: 'y', spec: defaultSwarmSpec(), rootCaPem: REFERENCE_ROOT, tokens: { worker: 'w', manager: 'm' }, defaultAddrPool: ['10.0.0.0/8'], subnetSize: 24, dataPathPort: 4789 };
  }
  async update(u: SwarmUpdate) {
    this.updates.push(u);
  }
  async nodeSpecs() {
    return new Map();
  }
  async updateNode() {}
  async removeNode() {}
  async unlockKey() {
    return '';
  }
  async unlock() {}
}

async function setup(t: TestContext) {
  const swarm = new FakeSwarm();
  const h = await routeHarness((store) => [
    systemRoutes({
      store,
      info: { info: async () => ({}), components: async () => [] },
      versionInfo: { version: '0.1.0', apiVersion: '1.47', minApiVersion: '1.24', gitCommit: 'abc123' },
      experimental: false,
      swarm,
    }),
  ]);
  t.after(() => h.close());
  return { app: h.app, swarm };
}

describe('swarm routes', () => {
  test('init answers the node id as a JSON string; nulls are zero', async (t) => {
    const { app, swarm } = await setup(t);
    const r = await app.inject({ method: 'POST', url: '/v1.41/swarm/init', payload: { ListenAddr: '0.0.0.0:2377', AdvertiseAddr: null, DefaultAddrPool: null, Spec: { Orchestration: null } } });
    assert.equal(r.statusCode, 200);
    assert.equal(r.json(), 'node0000000000000000000id');
    assert.equal(swarm.inits[0]!.ListenAddr, '0.0.0.0:2377');
    assert.equal(swarm.inits[0]!.AdvertiseAddr, undefined);
    assert.deepEqual(swarm.inits[0]!.Spec, {});
  });

  test('bad bodies are 400 and reach nothing', async (t) => {
    const { app, swarm } = await setup(t);
    for (const payload of [{ ListenAddr: 5 }, { DataPathPort: 'x' }, { Spec: { Labels: { a: 1 } } }, { ForceNewCluster: 'yes' }, { DefaultAddrPool: '10.0.0.0/8' }, { Availability: 'sometimes' }]) {
      const r = await app.inject({ method: 'POST', url: '/swarm/init', payload });
      assert.equal(r.statusCode, 400, JSON.stringify(payload));
    }
    for (const payload of [{ JoinToken: 5 }, { RemoteAddrs: 'a:2377' }, { Availability: 'x' }]) {
      const r = await app.inject({ method: 'POST', url: '/swarm/join', payload });
      assert.equal(r.statusCode, 400, JSON.stringify(payload));
    }
    assert.equal(swarm.joins.length, 0);
    const notJson = await app.inject({ method: 'POST', url: '/swarm/init', payload: 'nope', headers: { 'content-type': 'application/json' } });
    assert.equal(notJson.statusCode, 400);
    assert.equal(swarm.inits.length, 0);
  });

  test('update: the version and the rotations reach the node; a bad version is 400', async (t) => {
    const { app, swarm } = await setup(t);
    swarm.inSwarm = true;
    const r = await app.inject({ method: 'POST', url: '/swarm/update?version=7&rotateWorkerToken=true&rotateManagerToken=0', payload: { Name: 'default', Orchestration: { TaskHistoryRetentionLimit: 3 } } });
    assert.equal(r.statusCode, 200);
    assert.equal(swarm.updates[0]!.version, 7n);
    assert.deepEqual([swarm.updates[0]!.rotateWorkerToken, swarm.updates[0]!.rotateManagerToken], [true, false]);
    const bad = await app.inject({ method: 'POST', url: '/swarm/update?version=-1', payload: {} });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().message, `invalid swarm version '-1': strconv.ParseUint: parsing "-1": invalid syntax`);
    assert.equal(swarm.updates.length, 1);
  });

  test('GET /swarm, leave with force, join while in a swarm, unknown subpaths', async (t) => {
    const { app, swarm } = await setup(t);
    assert.equal((await app.inject('/swarm')).statusCode, 503);
    swarm.inSwarm = true;
    const s = (await app.inject('/swarm')).json();
    assert.deepEqual([s.ID, s.Version, s.JoinTokens], ['c', { Index: 7 }, { Worker: 'w', Manager: 'm' }]);
    assert.equal((await app.inject({ method: 'POST', url: '/swarm/leave?force=1' })).statusCode, 200);
    assert.deepEqual(swarm.leaves, [true]);
    const join = await app.inject({ method: 'POST', url: '/swarm/join', payload: {} });
    assert.deepEqual([join.statusCode, join.json().message], [503, 'This node is already part of a swarm. Use "docker swarm leave" to leave this swarm and join another one.']);
    assert.equal((await app.inject({ method: 'POST', url: '/swarm/whatever' })).statusCode, 503);
    assert.equal((await app.inject({ method: 'DELETE', url: '/swarm' })).statusCode, 503);
    assert.deepEqual((await app.inject('/swarm/unlockkey')).json(), { UnlockKey: '' });
  });
});
