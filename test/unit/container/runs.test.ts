// The process registry: exit events and Wait settle a run once, late events of an earlier run
// are ignored, attach watchers see every run's hub, and what exec/attach ask goes away on exit.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { HubLike } from '../../../reconcilers/container/deps.ts';
import { RunRegistry } from '../../../reconcilers/container/runs.ts';

function fakeHub(): HubLike {
  return { subscribe: () => () => {}, ended: Promise.resolve(), writeStdin: () => {}, closeStdin: () => {} };
}

/** A supervisor whose Wait answers only when the test says so. */
function fakeSupervisor() {
  const waits: Array<{ id: string; resolve: (v: { exitStatus: number; exitedAt: Date | null }) => void }> = [];
  const resized: Array<[string, number, number]> = [];
  return {
    waits,
    resized,
    waitTask(id: string, _exec?: string, opts?: { signal?: AbortSignal }) {
      return new Promise<{ exitStatus: number; exitedAt: Date | null }>((resolve, reject) => {
        waits.push({ id, resolve });
        opts?.signal?.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' })));
      });
    },
    async resizePty(id: string, _exec: string | undefined, w: number, h: number) {
      resized.push([id, w, h]);
    },
  };
}

function addRun(reg: RunRegistry, id: string, pid = 100) {
  return reg.add(id, { io: { paths: { stdout: '' }, stdout: null as never, stderr: null, stdin: null, close() {} }, hub: fakeHub(), logger: null, pid, startedAt: Date.now(), oci: {}, rootfs: '/r' });
}

describe('run registry', () => {
  test('an exit event settles the run and queues the container', async () => {
    const sup = fakeSupervisor();
    const reg = new RunRegistry({ supervisor: sup, exitEventsLive: () => true });
    const queued: string[] = [];
    reg.exits.subscribe((k) => queued.push(k));
    const run = addRun(reg, 'c1');
    assert.ok(reg.runInfo('c1'));
    reg.notifyExit('c1', { pid: 100, exitStatus: 3, exitedAt: null });
    assert.deepEqual(await run.exited, { exitStatus: 3, exitedAt: null });
    assert.deepEqual(queued, ['c1']);
    assert.equal(reg.runInfo('c1'), undefined, 'an exited run is no longer there for exec');
    assert.equal(reg.hubOf('c1'), undefined);
    assert.equal(sup.waits.length, 0, 'no Wait while events are live');
  });

  test("a late event of an earlier run (another pid) does not end this one", async () => {
    const reg = new RunRegistry({ supervisor: fakeSupervisor(), exitEventsLive: () => true });
    const run = addRun(reg, 'c1', 200);
    reg.notifyExit('c1', { pid: 100, exitStatus: 137, exitedAt: null });
    assert.equal(run.exit, null);
    reg.notifyExit('c1', { pid: 200, exitStatus: 0, exitedAt: null });
    assert.equal((await run.exited).exitStatus, 0);
    reg.delete('c1', run);
    assert.equal(reg.get('c1'), undefined);
  });

  test('without live events the run asks Wait; events resuming wake a run to ask it', async () => {
    const sup = fakeSupervisor();
    let live = false;
    const reg = new RunRegistry({ supervisor: sup, exitEventsLive: () => live });
    const queued: string[] = [];
    reg.exits.subscribe((k) => queued.push(k));
    const a = addRun(reg, 'a');
    await new Promise((r) => setImmediate(r));
    assert.equal(sup.waits.length, 1);
    sup.waits[0]!.resolve({ exitStatus: 7, exitedAt: null });
    assert.equal((await a.exited).exitStatus, 7);
    assert.deepEqual(queued, ['a']);

    live = true;
    const b = addRun(reg, 'b');
    reg.exitEventsResumed();
    await new Promise((r) => setImmediate(r));
    assert.equal(sup.waits.length, 2, 'a resumed stream makes the run ask Wait for an exit it may have missed');
    sup.waits[1]!.resolve({ exitStatus: 1, exitedAt: null });
    assert.equal((await b.exited).exitStatus, 1);
  });

  test('attach watchers see the current run and every later one; unsubscribing stops that', () => {
    const reg = new RunRegistry({ supervisor: fakeSupervisor(), exitEventsLive: () => true });
    const seen: HubLike[] = [];
    const run = addRun(reg, 'c1');
    const stop = reg.watchRuns('c1', (h) => seen.push(h));
    assert.deepEqual(seen, [run.hub]);
    const next = fakeHub();
    reg.announce('c1', next, () => {});
    assert.equal(seen.length, 2);
    stop();
    reg.announce('c1', fakeHub(), () => {});
    assert.equal(seen.length, 2);
    reg.delete('c1');
  });

  test("an attach made once a run's output is closed waits for the next run; inspect's settled waits for the record", async () => {
    const reg = new RunRegistry({ supervisor: fakeSupervisor(), exitEventsLive: () => true });
    const run = addRun(reg, 'c1');
    let settled = false;
    await reg.settled('c1');
    reg.notifyExit('c1', { pid: 100, exitStatus: 0, exitedAt: null });
    const waiting = reg.settled('c1').then(() => (settled = true));
    // Exited, output not closed yet: the attach gets this run (its end).
    const early: HubLike[] = [];
    reg.watchRuns('c1', (h) => early.push(h))();
    assert.deepEqual(early, [run.hub]);
    // The output closed (the reference's Reset): the attach waits for the next run.
    run.reset = true;
    const late: HubLike[] = [];
    const stop = reg.watchRuns('c1', (h) => late.push(h));
    assert.deepEqual(late, []);
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(settled, false, 'not settled before the stop is recorded');
    reg.delete('c1', run);
    await waiting;
    assert.equal(settled, true);
    const next = fakeHub();
    reg.announce('c1', next, () => {});
    assert.deepEqual(late, [next]);
    stop();
    // Bounded: a record that never comes does not hold inspect.
    const stuck = addRun(reg, 'c2');
    reg.notifyExit('c2', { exitStatus: 0, exitedAt: null });
    const t0 = Date.now();
    await reg.settled('c2', 50);
    assert.ok(Date.now() - t0 < 1000);
    reg.delete('c2', stuck);
  });

  test('resize reaches the supervisor only for a live run', async () => {
    const sup = fakeSupervisor();
    const reg = new RunRegistry({ supervisor: sup, exitEventsLive: () => true });
    await reg.resize('none', 80, 24);
    addRun(reg, 'c1');
    await reg.resize('c1', 80, 24);
    assert.deepEqual(sup.resized, [['c1', 80, 24]]);
    reg.notifyExit('c1', { exitStatus: 0, exitedAt: null });
    await reg.resize('c1', 100, 30);
    assert.equal(sup.resized.length, 1);
    reg.delete('c1');
  });
});
