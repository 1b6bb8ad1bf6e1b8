// POST /containers/{id}/stop and /restart write the level and wait on what the reconciler decides:
// the end of the grace period it records (status.stopDeadline), not one the route works out itself.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { containerRoutes, type ContainerRouteDeps } from '../../../api/containers/routes.ts';
import { Containers } from '../../../store/kinds/container.ts';
import type { Store } from '../../../store/store.ts';
import { containerRecord } from '../container/fake-world.ts';
import { routeHarness, type RouteHarness } from './route-harness.ts';

const WAIT_MS = 300;
let h: RouteHarness;
/** The grace period the fake reconciler grants (ms), and whether it ever ends. */
let graceMs = 0;

/** The container reconciler's observable behaviour: a stop records its deadline, then the exit comes when it passes. */
function reconcile(store: Store, name: string): void {
  const r = store.get(Containers, name);
  if (!r) return;
  const wantsRun = r.spec.desired === 'running' && r.status.runGeneration < r.spec.runGeneration;
  const wantsStop = (r.spec.desired === 'stopped' || wantsRun) && r.status.phase === 'running';
  if (wantsStop && r.status.stopDeadline == null) {
    const deadline = graceMs < 0 ? -1 : Date.now() + graceMs;
    store.updateStatus(Containers, name, (s) => ({ ...s, stopDeadline: deadline }));
    if (graceMs >= 0) {
      setTimeout(() => {
        store.updateStatus(Containers, name, (s) => ({ ...s, phase: 'exited', stopDeadline: null, observedGeneration: r.generation }));
      }, graceMs);
    }
    return;
  }
  if (wantsRun && r.status.phase !== 'running') {
    store.updateStatus(Containers, name, (s) => ({ ...s, phase: 'running', runGeneration: r.spec.runGeneration, observedGeneration: r.generation }));
  }
}

before(async () => {
  h = await routeHarness(
    (store) => [containerRoutes({ store, waitTimeoutMs: WAIT_MS, parseSignal: () => 15 } as unknown as ContainerRouteDeps)],
    { react: (store, ev) => ev.kind === Containers.name && ev.type === 'put' && reconcile(store, ev.name) },
  );
});
after(() => h.close());

function running(id: string): void {
  const r = containerRecord(id, { spec: { name: `/c${id.slice(0, 4)}`, desired: 'running', runGeneration: 1 }, status: { phase: 'running', pid: 7, runGeneration: 1 } });
  h.store.create(Containers, id, r.spec, r.status);
}

test('stop with t=0 waits for the deadline the reconciler recorded, longer than the route would have guessed', async () => {
  const id = '1'.repeat(64);
  running(id);
  graceMs = 3 * WAIT_MS;
  const t0 = Date.now();
  const r = await h.app.inject({ method: 'POST', url: `/containers/${id}/stop?t=0` });
  assert.equal(r.statusCode, 204, r.body);
  assert.ok(Date.now() - t0 >= graceMs - 20);
  assert.equal(h.store.get(Containers, id)?.status.phase, 'exited');
});

test('restart goes through the recorded stop, then waits for the new run', async () => {
  const id = '2'.repeat(64);
  running(id);
  graceMs = 2 * WAIT_MS;
  const r = await h.app.inject({ method: 'POST', url: `/containers/${id}/restart?t=0` });
  assert.equal(r.statusCode, 204, r.body);
  const c = h.store.get(Containers, id);
  assert.equal(c?.status.phase, 'running');
  assert.equal(c?.status.runGeneration, 2);
});

test('a reconciler that never records the stop answers 503 after the route\'s own wait', async () => {
  const id = '3'.repeat(64);
  const rec = containerRecord(id, { spec: { name: '/stuck', desired: 'running', runGeneration: 1 }, status: { phase: 'paused', pid: 7, runGeneration: 1 } });
  h.store.create(Containers, id, rec.spec, rec.status);
  const r = await h.app.inject({ method: 'POST', url: `/containers/${id}/stop` });
  assert.equal(r.statusCode, 503);
  assert.match(r.json().message, /did not stop in time: it is still paused/);
});

test('a removal under way is never undone: restart and pause answer 409 and leave it removed, stop waits for it', async () => {
  // The fuzzer's finding: a restart that landed after a forced remove wrote `running` over `removed`,
  // and the remove waited for a removal nobody would do.
  const id = '4'.repeat(64);
  const rec = containerRecord(id, { spec: { name: '/going', desired: 'removed', runGeneration: 1 }, status: { phase: 'running', pid: 7, runGeneration: 1 } });
  h.store.create(Containers, id, rec.spec, rec.status);
  const restart = await h.app.inject({ method: 'POST', url: `/containers/${id}/restart` });
  assert.equal(restart.statusCode, 409, restart.body);
  assert.match(restart.json().message, /container is marked for removal and cannot be started/);
  const pause = await h.app.inject({ method: 'POST', url: `/containers/${id}/pause` });
  assert.equal(pause.statusCode, 409, pause.body);
  const stopping = h.app.inject({ method: 'POST', url: `/containers/${id}/stop` });
  setTimeout(() => h.store.delete(Containers, id), 50);
  assert.equal((await stopping).statusCode, 204);
  assert.equal(h.store.get(Containers, id), undefined);
});
