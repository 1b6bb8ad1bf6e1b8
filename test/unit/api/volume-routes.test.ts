// The volume routes through app.inject() on the real store: params and queries as the reference
// reads them (force is Go's BoolValue), the API-version floor of prune, and the answers.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { volumeRoutes } from '../../../api/volumes/routes.ts';
import { Volumes } from '../../../store/kinds/volume.ts';
import { routeHarness, type RouteHarness } from './route-harness.ts';

let h: RouteHarness;
let manager = false;

before(async () => {
  h = await routeHarness((store) => [volumeRoutes({ store, usage: { size: async () => 0 }, waitTimeoutMs: 2000, isManager: () => manager })], {
    // The volume reconciler's observable behaviour: pending becomes ready, removed goes away.
    react(store, ev) {
      if (ev.kind !== Volumes.name) return;
      const r = store.get(Volumes, ev.name);
      if (!r) return;
      if (r.spec.desired === 'removed') store.delete(Volumes, r.name);
      else if (r.status.observedGeneration < r.generation) {
        store.updateStatus(Volumes, r.name, (s) => ({ ...s, phase: 'ready', mountpoint: `/v/${r.name}`, observedGeneration: r.generation }));
      }
    },
  });
});
after(() => h.close());

test('create, inspect, list with filters, remove', async () => {
  const made = await h.app.inject({ method: 'POST', url: '/v1.47/volumes/create', payload: { Name: 'data', Labels: { a: 'b' } } });
  assert.equal(made.statusCode, 201);
  assert.equal(made.json().Name, 'data');
  assert.equal((await h.app.inject('/volumes/data')).json().Mountpoint, '/v/data');
  const list = await h.app.inject({ url: '/volumes', query: { filters: JSON.stringify({ label: ['a=b'] }) } });
  assert.deepEqual(list.json().Volumes.map((v: { Name: string }) => v.Name), ['data']);
  assert.equal((await h.app.inject({ method: 'DELETE', url: '/volumes/data' })).statusCode, 204);
  assert.equal((await h.app.inject('/volumes/data')).statusCode, 404);
});

test('force is a Go BoolValue: first value, any non-false word is true', async () => {
  const del = (qs: string) => h.app.inject({ method: 'DELETE', url: `/volumes/nosuch?${qs}` });
  assert.equal((await del('force=1')).statusCode, 204);
  assert.equal((await del('force=off')).statusCode, 204);
  assert.equal((await del('force=0&force=1')).statusCode, 404);
  assert.equal((await del('force=')).statusCode, 404);
  assert.equal((await del('force=%20No%20')).statusCode, 404);
});

test('prune needs API 1.25; a bad all filter is 400', async () => {
  const old = await h.app.inject({ method: 'POST', url: '/v1.24/volumes/prune' });
  assert.equal(old.statusCode, 400);
  assert.equal(old.json().message, 'POST /v1.24/volumes/prune requires minimum API version 1.25');
  const bad = await h.app.inject({ method: 'POST', url: '/volumes/prune', query: { filters: JSON.stringify({ all: ['maybe'] }) } });
  assert.equal(bad.statusCode, 400);
  assert.equal((await h.app.inject({ method: 'POST', url: '/volumes/prune' })).json().SpaceReclaimed, 0);
});

test('PUT /volumes/{name} (cluster volumes): 503 outside a swarm; a manager has no such cluster volume (404), never "not a swarm manager"', async () => {
  const put = () => h.app.inject({ method: 'PUT', url: '/v1.47/volumes/nope', payload: { Spec: {} } });
  manager = false;
  assert.deepEqual([(await put()).statusCode, (await put()).json().message], [503, 'This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.']);
  manager = true;
  assert.deepEqual([(await put()).statusCode, (await put()).json().message], [404, 'volume nope not found']);
  manager = false;
});
