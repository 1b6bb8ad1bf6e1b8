// The fake world drives the real container reconciler through the real Controller and store:
// a start reaches running, an exit behind the reconciler's back is collected, and a stop
// escalates to SIGKILL when the process ignores SIGTERM.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Controller } from '../../../controllers/controller.ts';
import { newId } from '../../../lib/ids.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { type ContainerStatus, Containers, type ContainerResource as C } from '../../../store/kinds/container.ts';
import { containerRecord, fakeWorld, startContainerController, type FakeWorld } from './fake-world.ts';

let world: FakeWorld;
let store: Store;
let controller: Controller;

beforeEach(async () => {
  world = fakeWorld();
  store = openStore(join(world.dir, 'engine.db'));
  controller = await startContainerController(world, store);
});

afterEach(async () => {
  await controller.stop();
  store.close();
  world.cleanup();
});


async function waitStatus(id: string, pred: (s: ContainerStatus) => boolean, timeoutMs = 3000): Promise<C> {
  const r = await store.waitFor(Containers, id, (x) => !!x && pred(x.status), { timeoutMs });
  assert.ok(r && pred(r.status), `status of ${id} not reached in time: ${JSON.stringify(r?.status)}`);
  return r;
}

async function until(cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(2);
  }
}

async function startContainer(): Promise<string> {
  const id = newId();
  const { spec, status } = containerRecord(id);
  store.create(Containers, id, spec, status);
  await waitStatus(id, (s) => s.prepared);
  store.updateSpec(Containers, id, (sp) => ({ ...sp, desired: 'running', runGeneration: 1 }));
  await waitStatus(id, (s) => s.phase === 'running');
  return id;
}

describe('container reconciler in a fake world', () => {
  test('a start request creates and starts a task: phase running', async () => {
    const id = await startContainer();
    const r = store.get(Containers, id)!;
    const task = world.supervisor.tasks.get(id);
    assert.equal(task?.status, 'RUNNING');
    assert.equal(r.status.pid, task.pid);
    assert.equal(r.status.runGeneration, 1);
    assert.ok(world.supervisor.containers.has(id));
    assert.ok(world.layers.mounted.has(id));
    assert.ok(world.runs.get(id));
  });

  test('a task exiting behind the reconciler: phase exited with its code, supervisor cleared', async () => {
    const id = await startContainer();
    world.exitBehindBack(id, 3);
    const r = await waitStatus(id, (s) => s.phase === 'exited');
    assert.equal(r.status.exitCode, 3);
    assert.equal(r.status.exitSeq, 1);
    assert.equal(r.status.pid, 0);
    await until(() => !world.supervisor.tasks.has(id) && !world.supervisor.containers.has(id) && !world.runs.get(id));
    assert.ok(!world.layers.mounted.has(id));
    assert.deepEqual(world.signals, []);
  });

  test('stop with timeout 0 of a task ignoring SIGTERM: SIGTERM, then SIGKILL, exited 137', async () => {
    const id = await startContainer();
    world.ignore(id, 15);
    store.updateSpec(Containers, id, (sp) => ({ ...sp, desired: 'stopped', manuallyStopped: true, stopOptions: { timeout: 0 } }));
    const r = await waitStatus(id, (s) => s.phase === 'exited');
    assert.equal(r.status.exitCode, 137);
    assert.deepEqual(world.signals, [{ id, signal: 15 }, { id, signal: 9 }]);
    await until(() => !world.supervisor.tasks.has(id));
  });
});
