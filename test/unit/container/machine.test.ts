// The container lifecycle machine, walked with the pure transition function (through the
// machine driver's `step`) and a simulated clock: every legal step, the delays (grace period then
// SIGKILL, restart back-off), and illegal requests that must change nothing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { initialTransition, type SnapshotFrom } from 'xstate';
import { MachineSim } from '../controllers/machine-sim.ts';
import { containerLifecycle, INITIAL_FACTS, restoredContext, type ContainerFacts, type ContainerMemory } from '../../../reconcilers/container/machine.ts';

type Snap = SnapshotFrom<typeof containerLifecycle>;

/** The machine with a simulated clock: effects are completed by hand, timers fire on advance(). */
class Sim extends MachineSim<typeof containerLifecycle> {
  facts: ContainerFacts;

  constructor(state?: string, facts: Partial<ContainerFacts> = {}, memory: Partial<ContainerMemory> = {}) {
    const now = 1_000_000;
    const f: ContainerFacts = { ...INITIAL_FACTS, now, ...facts };
    super(containerLifecycle, state ? (containerLifecycle.resolveState({ value: state, context: restoredContext(f, memory) }) as Snap) : initialTransition(containerLifecycle, f)[0], now);
    this.facts = f;
  }

  override observe(facts: Partial<ContainerFacts> = {}): this {
    this.facts = { ...this.facts, ...facts, now: this.now };
    return this.send('OBSERVED', { facts: this.facts });
  }

  /** Runs a stop through signal to waiting: the grace period's timer is pending. */
  stopped(): this {
    return this.observe().send('STOP').done('signalStop');
  }
}

const ALWAYS = { Name: 'always', MaximumRetryCount: 0 } as const;

describe('container lifecycle machine', () => {
  test('created + START -> starting (startRun) -> running', () => {
    const m = new Sim().observe({ wantUp: true }).send('START');
    assert.equal(m.state, 'starting');
    assert.deepEqual(m.pending, ['startRun']);
    assert.equal(m.done('startRun', { started: true, neverRan: true }).state, 'running');
  });

  test('a start that fails stays created when it never ran, exited otherwise', () => {
    assert.equal(new Sim().send('START').done('startRun', { started: false, neverRan: true }).state, 'created');
    assert.equal(new Sim('exited').send('START').done('startRun', { started: false, neverRan: false }).state, 'exited');
  });

  test('running + PAUSE -> pausing -> paused; RESUME -> resuming -> running', () => {
    const m = new Sim('running').send('PAUSE');
    assert.equal(m.state, 'pausing');
    assert.equal(m.done('pauseRun').state, 'paused');
    assert.equal(m.send('RESUME').state, 'resuming');
    assert.equal(m.done('resumeRun').state, 'running');
  });

  test('STOP signals, waits out the grace period on a timer, then SIGKILL, again every recheck', () => {
    const m = new Sim('running', { stopTimeoutS: 10 }).stopped();
    assert.equal(m.state, 'stopping.waiting');
    assert.equal(m.ctx.stopDeadline, m.now + 10_000);
    assert.deepEqual(m.timers.map((t) => t.at), [m.now + 10_000]);
    m.advance(9_999);
    assert.equal(m.state, 'stopping.waiting', 'not before the deadline');
    m.advance(1);
    assert.equal(m.state, 'killing.signalling');
    m.done('killRun').advance(5_000);
    assert.deepEqual(m.started, ['signalStop', 'killRun', 'killRun']);
  });

  test('the exit during the grace period collects the run; the pending SIGKILL is cancelled', () => {
    const m = new Sim('running').stopped().send('EXITED');
    assert.equal(m.state, 'collecting');
    assert.deepEqual(m.timers, []);
    m.done('collectRun', { exitCode: 143, ranMs: 50, leftover: false });
    assert.equal(m.state, 'exited');
    assert.equal(m.ctx.stopDeadline, null);
  });

  test('a stop with no end (-t -1) waits for the exit alone: no timer', () => {
    const m = new Sim('running', { stopTimeoutS: -1 }).stopped();
    assert.equal(m.state, 'stopping.waiting');
    assert.equal(m.ctx.stopDeadline, -1);
    assert.deepEqual(m.timers, []);
  });

  test('a stop resumed after a crash keeps the deadline in status: past it, SIGKILL at once', () => {
    const m = new Sim('running', {}, { stopDeadline: 999_000 }).stopped();
    assert.equal(m.ctx.stopDeadline, 999_000);
    m.advance(0);
    assert.equal(m.state, 'killing.signalling');
  });

  test('a stopped paused container is signalled from paused', () => {
    assert.equal(new Sim('paused').stopped().state, 'stopping.waiting');
  });

  test('restart policy always: restarting after 100 ms, then starting with RestartCount 1', () => {
    const m = new Sim('running', { wantUp: true, policy: ALWAYS }).observe().send('EXITED').done('collectRun', { exitCode: 1, ranMs: 50, leftover: false });
    assert.equal(m.state, 'restarting');
    assert.equal(m.ctx.restartAt, m.now + 100);
    m.advance(99);
    assert.equal(m.state, 'restarting');
    m.advance(1);
    assert.equal(m.state, 'starting');
    assert.equal(m.ctx.restartCount, 1);
    assert.equal(m.ctx.restartAt, null);
  });

  test('back-off doubles while runs stay short, resets after 10 s of running', () => {
    const m = new Sim('running', { wantUp: true, policy: ALWAYS }).observe();
    const delays: number[] = [];
    for (const ranMs of [10, 10, 10, 10, 12_000]) {
      m.send('EXITED').done('collectRun', { exitCode: 1, ranMs });
      delays.push(m.ctx.restartDelayMs);
      m.advance(m.ctx.restartDelayMs).done('startRun', { started: true, neverRan: false });
    }
    assert.deepEqual(delays, [100, 200, 400, 800, 100]);
    assert.equal(m.ctx.restartCount, 5);
  });

  test('on-failure:3 restarts a failing command three times, then it stays exited', () => {
    const m = new Sim('running', { wantUp: true, policy: { Name: 'on-failure', MaximumRetryCount: 3 } }).observe();
    for (let i = 0; i < 3; i++) {
      m.send('EXITED').done('collectRun', { exitCode: 2, ranMs: 5, leftover: false });
      assert.equal(m.state, 'restarting');
      m.advance(m.ctx.restartDelayMs).done('startRun', { started: true, neverRan: false });
    }
    m.send('EXITED').done('collectRun', { exitCode: 2, ranMs: 5, leftover: false });
    assert.equal(m.state, 'exited');
    assert.equal(m.ctx.restartCount, 3);
  });

  test('on-failure does not restart a clean exit; a manual stop is never restarted by policy', () => {
    const m = new Sim('running', { wantUp: true, policy: { Name: 'on-failure', MaximumRetryCount: 0 } }).observe();
    assert.equal(m.send('EXITED').done('collectRun', { exitCode: 0, ranMs: 5, leftover: false }).state, 'exited');
    const s = new Sim('running', { wantUp: false, manuallyStopped: true, policy: ALWAYS }).observe().send('STOP').done('signalStop').send('EXITED');
    assert.equal(s.done('collectRun', { exitCode: 143, ranMs: 5, leftover: false }).state, 'exited');
  });

  test('RESTART stops the run and starts a new one, not counted as a policy restart', () => {
    const m = new Sim('running', { wantUp: true, policy: ALWAYS }).observe().send('RESTART');
    assert.equal(m.state, 'stopping.signalling');
    m.done('signalStop').send('EXITED').done('collectRun', { exitCode: 137, ranMs: 5, leftover: false });
    assert.equal(m.state, 'starting');
    assert.equal(m.ctx.restartCount, 0);
    assert.equal(m.done('startRun', { started: true, neverRan: false }).state, 'running');
    assert.equal(m.ctx.thenStart, false);
  });

  test('REMOVE of a running container kills it, collects it, then tears down to the final state', () => {
    const m = new Sim('running', { policy: ALWAYS, wantUp: true }).observe().send('REMOVE');
    assert.equal(m.state, 'killing.signalling');
    m.done('killRun').send('EXITED').done('collectRun', { exitCode: 137, ranMs: 5, leftover: false });
    assert.equal(m.state, 'removing', 'removal wins over the restart policy');
    assert.equal(m.done('teardown').state, 'removed');
    assert.equal(m.snap.status, 'done');
  });

  test('auto-remove after an exit; a restarting container stops or is removed on request', () => {
    assert.equal(new Sim('running', { autoRemove: true }).observe().send('EXITED').done('collectRun', { exitCode: 0, ranMs: 5, leftover: false }).state, 'removing');
    assert.equal(new Sim('restarting').send('STOP').state, 'exited');
    assert.equal(new Sim('restarting').send('REMOVE').state, 'removing');
    assert.equal(new Sim('restarting').send('START').state, 'starting');
  });

  test('illegal requests change nothing and start no effect', () => {
    const cases: Array<[string, string]> = [
      ['exited', 'PAUSE'],
      ['exited', 'RESUME'],
      ['exited', 'STOP'],
      ['created', 'STOP'],
      ['created', 'PAUSE'],
      ['running', 'RESUME'],
      ['running', 'START'],
      ['paused', 'PAUSE'],
      ['paused', 'START'],
      ['restarting', 'PAUSE'],
      ['dead', 'START'],
    ];
    for (const [state, ev] of cases) {
      const m = new Sim(state).send(ev);
      assert.equal(m.state, state, `${ev} in ${state}`);
      assert.deepEqual(m.started, [], `${ev} in ${state} started nothing`);
    }
    const removing = new Sim().send('REMOVE');
    assert.equal(removing.state, 'removing');
    assert.equal(removing.send('START').send('PAUSE').state, 'removing', 'a container being removed cannot start');
  });
});
