// GET /events through app.inject() on the real store: since/until (`-1` is absent), the order
// check with the reference's message, and filters (keys not validated, as the reference does not).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { EventRecorder } from '../../../api/events/recorder.ts';
import { eventRoutes } from '../../../api/events/routes.ts';
import { routeHarness, type RouteHarness } from './route-harness.ts';

let h: RouteHarness;
let recorder: EventRecorder;
let start = '';

before(async () => {
  h = await routeHarness((store) => {
    recorder = new EventRecorder(store);
    return [eventRoutes(recorder)];
  });
  start = (Date.now() / 1000 - 1).toFixed(3);
  recorder.emit('network', 'create', 'n1', { name: 'net1', type: 'bridge' });
  recorder.emit('volume', 'create', 'v1', { driver: 'local' });
  await sleep(5);
});
after(async () => {
  recorder.close();
  await h.close();
});

const now = () => (Date.now() / 1000).toFixed(3);
const events = (body: string) => body.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { Type: string; Action: string });

test('since and until replay the ring; a past until ends the stream', async () => {
  const r = await h.app.inject({ url: '/events', query: { since: start, until: now() } });
  assert.equal(r.statusCode, 200);
  assert.deepEqual(events(r.body).map((e) => `${e.Type}:${e.Action}`), ['network:create', 'volume:create']);
});

test('filters: the first value; keys are not validated', async () => {
  const until = now();
  const typed = await h.app.inject({ url: '/events', query: { since: start, until, filters: [JSON.stringify({ type: ['volume'] }), JSON.stringify({ type: ['network'] })] } });
  assert.deepEqual(events(typed.body).map((e) => e.Type), ['volume']);
  const unknown = await h.app.inject({ url: '/events', query: { since: start, until, filters: JSON.stringify({ nope: ['x'] }) } });
  assert.equal(unknown.statusCode, 200);
  assert.equal(events(unknown.body).length, 2);
  const bad = await h.app.inject({ url: '/events', query: { until, filters: '5' } });
  assert.equal(bad.statusCode, 400);
});

test('since after until is 400 with both values; -1 is absent', async () => {
  const r = await h.app.inject({ url: '/events?since=10&until=5' });
  assert.equal(r.statusCode, 400);
  assert.equal(r.json().message, '`since` time (10) cannot be after `until` time (5)');
  const minus = await h.app.inject({ url: '/events', query: { since: '-1', until: now() } });
  assert.equal(minus.statusCode, 200);
  assert.equal(minus.body, '');
  const garbage = await h.app.inject({ url: '/events?since=abc' });
  assert.equal(garbage.statusCode, 400);
});
