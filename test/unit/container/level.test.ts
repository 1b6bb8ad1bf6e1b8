// Desired state is a level: containers written straight into the real store (no API) converge,
// a stop holds no worker while its grace period runs, a restart is a generation, and a daemon
// that crashed finds its leftovers and brings them to their desired state through the same steps.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Controller } from '../../../controllers/controller.ts';
import { unavailable } from '../../../lib/errors.ts';
import { newId } from '../../../lib/ids.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { type ContainerSpec, type ContainerStatus, Containers, type ContainerResource as C } from '../../../store/kinds/container.ts';
import { ContainerReconciler } from '../../../reconcilers/container/reconciler.ts';
import { RunRegistry } from '../../../reconcilers/container/runs.ts';
import { containerRecord, fakeWorld, startContainerController, type ContainerRecordOverrides, type FakeWorld } from './fake-world.ts';


let world: FakeWorld;
let store: Store;
let controller: Controller | null;

beforeEach(() => {
  world = fakeWorld();
  store = openStore(join(world.dir, 'engine.db'));
  controller = null;
});

afterEach(async () => {
  await controller?.stop();
  store.close();
  world.cleanup();
});

function get(id: string): C {
  return store.get(Containers, id)!;
}

function setSpec(id: string, fn: (s: ContainerSpec) => ContainerSpec): void {
  store.updateSpec(Containers, id, fn);
}

async function waitStatus(id: string, pred: (s: ContainerStatus) => boolean, timeoutMs = 3000): Promise<C> {
  const r = await store.waitFor(Containers, id, (x) => !!x && pred(x.status), { timeoutMs });
  assert.ok(r && pred(r.status), `status of ${id} not reached in time: ${JSON.stringify(r?.status)}`);
  return r;
}

/** A container whose spec says running from the start: no API call, no request counter. */
function running(overrides: ContainerRecordOverrides = {}): string {
  const id = newId();
  const { spec, status } = containerRecord(id, { ...overrides, spec: { desired: 'running', runGeneration: 1, ...overrides.spec } });
  store.create(Containers, id, spec, status);
  return id;
}

describe('level-triggered containers', () => {
  test('a supervisor container the store has no record of is killed and deleted at start-up; recorded ones stay', async () => {
    const orphan = newId();
    const known = running();
    for (const id of [orphan, known]) {
      await world.supervisor.createContainer({ id, spec: {}, runtime: { name: 'io.containerd.runc.v2' } });
      await world.supervisor.createTask({ containerId: id, terminal: false });
      await world.supervisor.startTask(id);
    }
    const reconciler = new ContainerReconciler(store, world.deps, new RunRegistry({ supervisor: world.supervisor, exitEventsLive: () => true }));
    assert.deepEqual(await reconciler.collectOrphans(), [orphan]);
    assert.equal(world.supervisor.containers.has(orphan), false);
    assert.equal(world.supervisor.tasks.has(orphan), false);
    assert.equal(world.supervisor.containers.has(known), true);
  });

  test('desired running starts; desired stopped stops (SIGTERM); a stopped container stays down', async () => {
    controller = await startContainerController(world, store);
    const id = running();
    await waitStatus(id, (s) => s.phase === 'running');
    setSpec(id, (sp) => ({ ...sp, desired: 'stopped', manuallyStopped: true }));
    const r = await waitStatus(id, (s) => s.phase === 'exited');
    assert.equal(r.status.exitCode, 143);
    assert.equal(r.status.stopDeadline, null, 'the deadline goes with the run');
    assert.deepEqual(world.signals.map((s) => s.signal), [15]);
    // Reconciling again (any spec write queues it) changes nothing.
    setSpec(id, (sp) => ({ ...sp, config: { ...sp.config, Labels: { touched: '1' } } }));
    await waitStatus(id, (s) => s.observedGeneration === get(id).generation);
    assert.equal(get(id).status.phase, 'exited');
    assert.equal(world.supervisor.tasks.has(id), false);
  });

  test('a task killed behind the reconciler converges: exited, and restarted when the policy says so', async () => {
    controller = await startContainerController(world, store);
    const plain = running();
    const always = running({ hostConfig: { RestartPolicy: { Name: 'always', MaximumRetryCount: 0 } } });
    await waitStatus(plain, (s) => s.phase === 'running');
    const first = (await waitStatus(always, (s) => s.phase === 'running')).status.pid;
    world.exitBehindBack(plain, 137);
    world.exitBehindBack(always, 137);
    assert.equal((await waitStatus(plain, (s) => s.phase === 'exited')).status.exitCode, 137);
    const again = await waitStatus(always, (s) => s.phase === 'running' && s.pid !== first);
    assert.equal(again.status.restartCount, 1);
    assert.equal(again.status.restartAt, null);
  });

  test('a start cut off by the supervisor being out of reach stays pending and runs once it is back; another failure is recorded', async () => {
    controller = await startContainerController(world, store);
    const sup = world.supervisor;
    const create = sup.createTask.bind(sup);
    let attempts = 0;
    // The connection refused twice (the supervisor restarting), as drivers/supervisor/rpc.ts marks it.
    sup.createTask = async (req) => {
      if (++attempts <= 2) throw Object.assign(unavailable('Connection dropped'), { unreachable: true });
      return create(req);
    };
    const id = running();
    const r = await waitStatus(id, (s) => s.phase === 'running');
    assert.equal(r.status.runGeneration, 1, 'the start request answered once, by the run');
    assert.equal(r.status.error, '');
    assert.equal(attempts, 3, 'tried again twice');
    // A refusal of its own is the start's outcome at once, with no retry.
    sup.createTask = async () => {
      throw unavailable('deadline exceeded');
    };
    setSpec(id, (sp) => ({ ...sp, desired: 'stopped', manuallyStopped: true }));
    await waitStatus(id, (s) => s.phase === 'exited');
    setSpec(id, (sp) => ({ ...sp, desired: 'running', manuallyStopped: false, runGeneration: 2 }));
    const failed = await waitStatus(id, (s) => s.runGeneration === 2);
    assert.match(failed.status.error, /deadline exceeded/);
    assert.equal(failed.status.phase, 'exited');
  });

  test('a stop waiting out its grace period holds no worker: other containers start meanwhile', async () => {
    controller = await startContainerController(world, store, { workers: 1 });
    const slow = running();
    await waitStatus(slow, (s) => s.phase === 'running');
    world.ignore(slow, 15);
    setSpec(slow, (sp) => ({ ...sp, desired: 'stopped', manuallyStopped: true, stopOptions: { timeout: 1 } }));
    const stopping = await waitStatus(slow, (s) => (s.stopDeadline ?? 0) > 0);
    assert.ok(stopping.status.stopDeadline! > Date.now() - 100, 'the deadline is in status');
    // One worker only: if the stop held it, this start would wait for the grace period.
    const quick = running();
    await waitStatus(quick, (s) => s.phase === 'running');
    assert.equal(get(slow).status.phase, 'running', 'the slow stop is still in its grace period');
    const done = await waitStatus(slow, (s) => s.phase === 'exited', 4000);
    assert.equal(done.status.exitCode, 137);
    assert.deepEqual(world.signals.filter((s) => s.id === slow).map((s) => s.signal), [15, 9]);
  });

  test('a restart is a generation: the run is stopped and a new one started', async () => {
    controller = await startContainerController(world, store);
    const id = running();
    const first = (await waitStatus(id, (s) => s.phase === 'running')).status.pid;
    setSpec(id, (sp) => ({ ...sp, runGeneration: sp.runGeneration + 1, stopOptions: { timeout: 0 } }));
    const r = await waitStatus(id, (s) => s.runGeneration === 2 && s.phase === 'running');
    assert.notEqual(r.status.pid, first);
    assert.equal(r.status.exitSeq, 1);
    assert.equal(r.status.restartCount, 0, 'a restart asked for is not a policy restart');
  });

  test('an exited container with desired running is started again only by a new generation', async () => {
    controller = await startContainerController(world, store);
    const id = running();
    await waitStatus(id, (s) => s.phase === 'running');
    world.exitBehindBack(id, 0);
    await waitStatus(id, (s) => s.phase === 'exited');
    setSpec(id, (sp) => ({ ...sp, config: { ...sp.config, Labels: { again: 'no' } } }));
    await waitStatus(id, (s) => s.observedGeneration === get(id).generation);
    assert.equal(get(id).status.phase, 'exited', 'policy "no": it stays down');
    setSpec(id, (sp) => ({ ...sp, runGeneration: sp.runGeneration + 1 }));
    await waitStatus(id, (s) => s.phase === 'running' && s.runGeneration === 2);
  });

  test('after a crash, a leftover task is stopped by the same deadline steps while new work is served', async () => {
    // The record a crashed daemon left: running, prepared, its task still alive in the supervisor.
    const id = newId();
    const { spec, status } = containerRecord(id, {
      spec: { desired: 'running', runGeneration: 1 },
      status: { phase: 'running', prepared: true, runGeneration: 1, pid: 1 },
      config: { StopTimeout: 1 },
    });
    store.create(Containers, id, spec, status);
    world.crashLeftover(id);
    world.ignore(id, 15);
    controller = await startContainerController(world, store, { workers: 1 });
    await waitStatus(id, (s) => (s.stopDeadline ?? 0) > 0);
    const fresh = running();
    await waitStatus(fresh, (s) => s.phase === 'running');
    assert.equal(get(id).status.phase, 'running', 'the leftover is still in its grace period');
    const r = await waitStatus(id, (s) => s.phase === 'exited', 4000);
    assert.equal(r.status.exitCode, 137);
    assert.equal(world.supervisor.tasks.has(id), false);
  });

  test('live restore: a leftover task still running is adopted, not stopped; its later exit is collected with its code', async () => {
    const id = newId();
    const { spec, status } = containerRecord(id, {
      spec: { desired: 'running', runGeneration: 1 },
      status: { phase: 'running', prepared: true, runGeneration: 1, pid: 1 },
    });
    store.create(Containers, id, spec, status);
    const pid = world.crashLeftover(id);
    world.deps.liveRestore = () => true;
    controller = await startContainerController(world, store, { workers: 1 });
    const r = await waitStatus(id, (s) => s.pid === pid);
    assert.equal(r.status.phase, 'running');
    assert.equal(world.runs.get(id)?.pid, pid, 'the run is registered with the task\'s pid');
    assert.deepEqual(world.signals, [], 'nothing was signalled');
    world.exitBehindBack(id, 3);
    const done = await waitStatus(id, (s) => s.phase === 'exited', 4000);
    assert.equal(done.status.exitCode, 3);
    assert.equal(world.supervisor.tasks.has(id), false, 'the task was collected');
  });

  test('a daemon restart in the middle of a stop finishes it from the deadline in status', async () => {
    controller = await startContainerController(world, store);
    const id = running();
    await waitStatus(id, (s) => s.phase === 'running');
    world.ignore(id, 15);
    setSpec(id, (sp) => ({ ...sp, desired: 'stopped', manuallyStopped: true, stopOptions: { timeout: 1 } }));
    await waitStatus(id, (s) => (s.stopDeadline ?? 0) > 0);
    await controller.stop();
    controller = await startContainerController(world, store);
    const r = await waitStatus(id, (s) => s.phase === 'exited', 4000);
    assert.equal(r.status.exitCode, 137);
    assert.deepEqual(world.signals.map((s) => s.signal), [15, 9], 'the stop signal is not sent twice');
  });

  test('removal of a running container: SIGKILL, then the record goes', async () => {
    controller = await startContainerController(world, store);
    const id = running();
    await waitStatus(id, (s) => s.phase === 'running');
    setSpec(id, (sp) => ({ ...sp, desired: 'removed', remove: { force: true, volumes: false } }));
    const gone = await store.waitFor(Containers, id, (r) => !r, { timeoutMs: 3000 });
    assert.equal(gone, undefined);
    assert.deepEqual(world.signals.map((s) => s.signal), [9]);
    assert.equal(world.supervisor.containers.has(id), false);
    assert.equal(world.layers.rw.has(id), false);
  });
});
