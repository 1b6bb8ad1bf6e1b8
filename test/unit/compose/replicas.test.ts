// One stack service brought to its replicas (reconcilers/stack/replicas.ts) against a fake engine:
// scaling, rollouts stop-first and start-first with parallelism, monitor and delay, a failed
// update paused or rolled back, an unhealthy replica replaced, dependencies holding creation.
// The engine's writes are answered at once: a removed replica holds its name until it is gone (a
// later pass, here a later call without it), and its successor is made then.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LABEL, planProject, type ServicePlan } from '../../../lib/compose/normalize.ts';
import { composeApp } from '../../../lib/compose/schema.ts';
import { reconcileService, type ServiceInput } from '../../../reconcilers/stack/replicas.ts';
import type { StackEngine } from '../../../reconcilers/stack/engine.ts';
import type { ContainerResource } from '../../../store/kinds/container.ts';
import type { ServiceStatus, StackResource } from '../../../store/kinds/stack.ts';
import { fakeLog } from '../controllers/fake-log.ts';

function plan(env: string, deploy: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): ServicePlan {
  const app = composeApp.parse({ services: { web: { image: 'busybox', environment: { V: env }, deploy: { replicas: 2, ...deploy }, ...extra } } });
  return planProject('shop', app, '/files').services[0]!;
}

const T0 = Date.parse('2026-01-01T00:00:00Z');
let seq = 0;

/** A container of `svc`'s slot n, running since `startedAgoMs`. */
function ctr(svc: ServicePlan, n: number, o: { name?: string; phase?: string; health?: string; startedAgoMs?: number; exitCode?: number; restarts?: number; createdAt?: string } = {}): ContainerResource {
  const id = `${String(++seq).padStart(4, '0')}${'a'.repeat(60)}`;
  const body = svc.body(n) as { Labels: Record<string, string> };
  return {
    kind: 'container',
    name: id,
    generation: 1,
    resourceVersion: 1,
    createdAt: o.createdAt ?? new Date(T0 - 3_600_000).toISOString(),
    spec: { name: `/${o.name ?? svc.containerName(n)}`, desired: 'running', config: { Labels: body.Labels } },
    status: {
      phase: o.phase ?? 'running',
      startedAt: new Date(T0 - (o.startedAgoMs ?? 60_000)).toISOString(),
      exitCode: o.exitCode ?? 0,
      restartCount: o.restarts ?? 0,
      ...(o.health ? { health: { Status: o.health, FailingStreak: 0, Log: [] } } : {}),
    },
  } as unknown as ContainerResource;
}

function fakeEngine() {
  const calls: string[] = [];
  const engine: StackEngine = {
    createNetwork: () => {},
    removeNetwork: () => {},
    createVolume: () => {},
    removeVolume: () => {},
    runContainer: (_stack, name) => (calls.push(`run ${name}`), `id-${name}`),
    startContainer: (id) => void calls.push(`start ${id}`),
    renameContainer: (id, name) => void calls.push(`rename ${id.slice(0, 4)} ${name}`),
    removeContainer: (id) => void calls.push(`remove ${id.slice(0, 4)}`),
  };
  return { engine, calls };
}

function run(svc: ServicePlan, owned: ContainerResource[], prev: Partial<ServiceStatus> = {}, extra: Partial<ServiceInput> = {}) {
  const { engine, calls } = fakeEngine();
  const stack = { name: 'shop', generation: 2, status: { services: { web: { desired: 2, ready: 0, conditions: [], ...prev } } } } as unknown as StackResource;
  // A name is held until its container is gone, also while it is being removed; a rename frees it at once.
  const renamed = new Set<string>();
  const byName = (n: string) => owned.find((c) => c.spec.name === `/${n}` && !renamed.has(c.name.slice(0, 4)));
  const renaming: StackEngine['renameContainer'] = engine.renameContainer;
  engine.renameContainer = (id, name) => (renamed.add(id.slice(0, 4)), renaming(id, name));
  const out = reconcileService({ stack, svc, owned, byName, now: T0, engine, log: fakeLog(), ...extra });
  return { out, calls };
}

const reason = (out: { status: ServiceStatus; state: string }) => out.status.conditions.find((c) => c.type === out.state)!.reason;

test('the config hash ignores replicas, update_config and depends_on: scaling recreates nothing', () => {
  assert.equal(plan('1').configHash, plan('1', { replicas: 5, update_config: { parallelism: 2 } }, { depends_on: ['db'] }).configHash);
  assert.notEqual(plan('1').configHash, plan('2').configHash);
});

test('scaling: missing slots are created, the highest numbers removed first', async () => {
  const v = plan('1');
  const up = run(plan('1', { replicas: 3 }), [ctr(v, 1), ctr(v, 2)]);
  assert.deepEqual(up.calls, ['run shop-web-3']);
  const down = run(plan('1', { replicas: 1 }), [ctr(v, 1), ctr(v, 2), ctr(v, 3)]);
  assert.deepEqual(down.calls.map((c) => c.split(' ')[0]), ['remove', 'remove']);
  assert.equal(down.out.state, 'Ready');
});

test('stop-first, parallelism 1: one slot at a time, each counted up once healthy and past monitor', async () => {
  const old = plan('1', {}, { healthcheck: { test: ['CMD', 'true'] } });
  const neu = plan('2', { update_config: { parallelism: 1, monitor: '2s' } }, { healthcheck: { test: ['CMD', 'true'] } });
  const o1 = ctr(old, 1, { health: 'healthy' });
  const o2 = ctr(old, 2, { health: 'healthy' });
  const stable = { configHash: old.configHash, generation: 1 };
  const removing = run(neu, [o1, o2], { stable });
  assert.deepEqual(removing.calls, [`remove ${o1.name.slice(0, 4)}`], 'its successor waits for the name');
  assert.deepEqual(removing.out.status.lastRollout!.inFlight, [1]);
  assert.ok(removing.out.requeueAfterMs! <= 200);
  // Still being removed (owned no longer lists it, its name is held): nothing yet.
  const held = run(neu, [o2], removing.out.status, { byName: (n) => (n === 'shop-web-1' ? o1 : n === 'shop-web-2' ? o2 : undefined) });
  assert.deepEqual(held.calls, []);
  assert.deepEqual(held.out.status.lastRollout!.inFlight, [1]);
  const first = run(neu, [o2], held.out.status);
  assert.deepEqual(first.calls, ['run shop-web-1']);
  assert.equal(first.out.status.lastRollout!.state, 'RollingOut');
  assert.deepEqual(first.out.status.lastRollout!.inFlight, [1]);
  assert.equal(reason(first.out), 'RollingUpdate');
  // Healthy but inside monitor: still watched, nothing else started.
  const n1 = ctr(neu, 1, { health: 'healthy', startedAgoMs: 500 });
  const second = run(neu, [n1, o2], first.out.status);
  assert.deepEqual(second.calls, []);
  assert.ok(second.out.requeueAfterMs! <= 1500);
  // Past monitor: slot 1 is up, slot 2 goes.
  const n1up = ctr(neu, 1, { health: 'healthy', startedAgoMs: 3000 });
  const third = run(neu, [n1up, o2], second.out.status);
  assert.deepEqual(third.calls, [`remove ${o2.name.slice(0, 4)}`]);
  const made = run(neu, [n1up], third.out.status);
  assert.deepEqual(made.calls, ['run shop-web-2']);
  const fourth = run(neu, [n1up, ctr(neu, 2, { health: 'healthy', startedAgoMs: 3000 })], made.out.status);
  assert.equal(fourth.out.status.lastRollout!.state, 'Completed');
  assert.equal(fourth.out.state, 'Ready');
  assert.deepEqual(fourth.out.status.stable, { configHash: neu.configHash, generation: 2 });
});

test('without update_config every slot is replaced at once', async () => {
  const old = plan('1');
  const out = run(plan('2'), [ctr(old, 1), ctr(old, 2)]);
  assert.equal(out.calls.filter((c) => c.startsWith('remove')).length, 2);
  assert.deepEqual(run(plan('2'), [], out.out.status).calls, ['run shop-web-1', 'run shop-web-2']);
});

test('start-first: the old container is renamed aside and keeps serving until the new one is up, then removed', async () => {
  const old = plan('1');
  const neu = plan('2', { update_config: { order: 'start-first' } });
  const o1 = ctr(old, 1);
  const o2 = ctr(old, 2);
  const first = run(neu, [o1, o2], { stable: { configHash: old.configHash, generation: 1 } });
  assert.deepEqual(first.calls, [`rename ${o1.name.slice(0, 4)} ${o1.name.slice(0, 12)}_shop-web-1`, 'run shop-web-1'], 'renamed aside: the name is free at once');
  assert.equal(first.out.status.ready, 2, 'the renamed old one still serves');
  const aside = { ...o1, spec: { ...o1.spec, name: `/${o1.name.slice(0, 12)}_shop-web-1` } } as ContainerResource;
  const n1 = ctr(neu, 1);
  const second = run(neu, [aside, n1, o2], first.out.status);
  assert.deepEqual(second.calls.slice(0, 1), [`remove ${o1.name.slice(0, 4)}`]);
  assert.match(second.calls[1]!, /^rename .* 0.*_shop-web-2$/);
});

test('a new container failing inside monitor: pause by default; rollback returns to the stable version', async () => {
  const old = plan('1');
  const paused = plan('2', { update_config: {} });
  const failed = ctr(paused, 1, { phase: 'exited', exitCode: 3 });
  const p = run(paused, [failed, ctr(old, 2)], { stable: { configHash: old.configHash, generation: 1 }, lastRollout: { from: old.configHash, to: paused.configHash, generation: 2, state: 'RollingOut', reason: '', startedAt: new Date(T0 - 1000).toISOString(), updated: 0, inFlight: [1] } });
  assert.equal(p.out.status.lastRollout!.state, 'Paused');
  assert.equal(reason(p.out), 'UpdatePaused');
  assert.match(p.out.status.conditions.find((c) => c.type === 'Degraded')!.message, /exited with code 3/);
  assert.deepEqual(p.calls, [], 'slot 2 is left alone');

  const neu = plan('2', { update_config: { order: 'start-first', failure_action: 'rollback' } });
  const o1 = ctr(old, 1, { name: `xxxxxxxxxxxx_shop-web-1` });
  const bad = ctr(neu, 1, { health: 'unhealthy', startedAgoMs: 100, createdAt: new Date(T0 - 500).toISOString() });
  const rollout = { from: old.configHash, to: neu.configHash, generation: 2, state: 'RollingOut' as const, reason: '', startedAt: new Date(T0 - 1000).toISOString(), updated: 0, inFlight: [1] };
  const r1 = run(neu, [o1, bad, ctr(old, 2)], { stable: { configHash: old.configHash, generation: 1 }, lastRollout: rollout }, { stable: old });
  assert.equal(r1.out.status.lastRollout!.state, 'RollingBack');
  assert.equal(r1.out.state, 'Degraded');
  const r2 = run(neu, [o1, bad, ctr(old, 2)], r1.out.status, { stable: old });
  assert.deepEqual(r2.calls, [`remove ${bad.name.slice(0, 4)}`], 'the old one takes its name back once the failed one is gone');
  assert.ok(r2.out.requeueAfterMs! <= 200);
  assert.deepEqual(run(neu, [o1, ctr(old, 2)], r2.out.status, { stable: old }).calls, [`rename ${o1.name.slice(0, 4)} shop-web-1`]);
  assert.equal(r2.out.status.lastRollout!.state, 'RolledBack');
  assert.equal(reason(r2.out), 'RolledBack');
  assert.match(r2.out.status.conditions.find((c) => c.type === 'Degraded')!.message, /rolled back: container shop-web-1 is unhealthy/);
  // Applied again as is: it stays rolled back (no retry loop).
  const r3 = run(neu, [ctr(old, 1), ctr(old, 2)], r2.out.status, { stable: old });
  assert.deepEqual(r3.calls, []);
  assert.equal(reason(r3.out), 'RolledBack');
});

test('an unhealthy replica is replaced once it stayed unhealthy for a healthcheck interval', async () => {
  const svc = plan('1', {}, { healthcheck: { test: ['CMD', 'true'], interval: '1s' } });
  const sick = ctr(svc, 1, { health: 'unhealthy' });
  const well = ctr(svc, 2, { health: 'healthy' });
  const first = run(svc, [sick, well]);
  assert.deepEqual(first.calls, []);
  assert.equal(first.out.state, 'Degraded');
  assert.ok(first.out.status.unhealthySince?.[sick.name]);
  const later = { ...first.out.status, unhealthySince: { [sick.name]: new Date(T0 - 1500).toISOString() } };
  const second = run(svc, [sick, well], later);
  assert.deepEqual(second.calls, [`remove ${sick.name.slice(0, 4)}`]);
  assert.equal(second.out.status.replaced, 1);
  assert.equal(second.out.status.lastReplaced!.container, 'shop-web-1');
  assert.deepEqual(run(svc, [well], second.out.status).calls, ['run shop-web-1'], 'its successor once it is gone');
});

test('an unmet dependency holds creation and says what it waits on', async () => {
  const out = run(plan('1'), [], {}, { waitingOn: 'db (service_healthy)' });
  assert.deepEqual(out.calls, []);
  assert.equal(reason(out.out), 'WaitingForDependencies');
  assert.equal(out.out.status.waitingOn, 'db (service_healthy)');
});

test('a name taken by a container of no stack is a clash, never adopted', async () => {
  const v = plan('1');
  const stranger = ctr(v, 1);
  (stranger.spec.config.Labels as Record<string, string>)[LABEL.owner] = 'other';
  const { engine, calls } = fakeEngine();
  const stack = { name: 'shop', generation: 1, status: { services: {} } } as unknown as StackResource;
  const out = reconcileService({ stack, svc: v, owned: [], byName: (n) => (n === 'shop-web-1' ? stranger : undefined), now: T0, engine, log: fakeLog() });
  assert.deepEqual(calls, ['run shop-web-2']);
  assert.match(out.status.conditions.find((c) => c.type === 'Degraded')!.message, /shop-web-1 exists and was not created by this stack/);
});

test('start-first: Ready once the replaced containers are gone, not when their removal is only asked', async () => {
  const old = plan('1');
  const neu = plan('2', { update_config: { order: 'start-first' } });
  const o1 = ctr(old, 1);
  const o2 = ctr(old, 2);
  const aside = (c: ContainerResource, n: number) => ({ ...c, spec: { ...c.spec, name: `/${c.name.slice(0, 12)}_shop-web-${n}` } }) as ContainerResource;
  const first = run(neu, [o1, o2], { stable: { configHash: old.configHash, generation: 1 } });
  const n1 = ctr(neu, 1);
  const second = run(neu, [aside(o1, 1), n1, o2], first.out.status);
  const n2 = ctr(neu, 2);
  // Both new replicas up; the old ones asked to go but still there (their stop takes its grace period).
  const third = run(neu, [aside(o1, 1), n1, aside(o2, 2), n2], second.out.status);
  assert.ok(third.calls.includes(`remove ${o2.name.slice(0, 4)}`), third.calls.join(', '));
  assert.notEqual(third.out.state, 'Ready', 'not Ready while a replaced container is still there');
  assert.ok(third.out.requeueAfterMs !== undefined, 'looked at again soon');
  const fourth = run(neu, [n1, n2], third.out.status);
  assert.equal(fourth.out.state, 'Ready', reason(fourth.out));
  assert.equal(fourth.out.status.ready, 2);
});
