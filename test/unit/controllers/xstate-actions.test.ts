// The machine driver (controllers/machine-driver.ts) reads XState's own action objects from the
// pure `transition`: `xstate.spawnChild` (an invoked effect), `xstate.raise` with and without a delay
// (`after`, `raise`), and `xstate.cancel` (leaving a state with a pending delay). These names and
// their params are XState internals: this test pins them, so an XState version that changes them
// fails here before the driver silently drops effects or timers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createActor, fromPromise, raise, setup, transition } from 'xstate';
import { pureTransition } from '../../../controllers/machine-driver.ts';

const machine = setup({
  actors: { work: fromPromise(async () => 'done') },
  delays: { later: 250 },
}).createMachine({
  id: 'pin',
  initial: 'idle',
  states: {
    idle: { on: { GO: 'working', WAIT: 'waiting', NOW: { actions: raise({ type: 'GO' }) } } },
    working: { invoke: { id: 'job', src: 'work' } },
    waiting: { after: { later: 'idle' }, on: { LEAVE: 'idle' } },
  },
});

type Action = { type: string; params?: Record<string, unknown> };

test('XState still names its actions as the machine driver reads them', () => {
  const start = createActor(machine).getSnapshot();

  const [, spawn] = transition(machine, start, { type: 'GO' });
  const child = (spawn as unknown as Action[]).find((a) => a.type === 'xstate.spawnChild');
  assert.ok(child, `an invoke is xstate.spawnChild: ${spawn.map((a) => a.type).join(', ')}`);
  assert.equal(child.params?.id, 'job');
  assert.equal(child.params?.src, 'work');
  assert.ok(child.params?.actorRef, 'with the actor to run');
  assert.equal((child.params?.actorRef as { logic?: unknown }).logic, machine.implementations.actors.work, 'whose logic the driver runs as a root actor');
  assert.ok('input' in (child.params ?? {}), 'with the resolved input beside it');

  const [waiting, delayed] = transition(machine, start, { type: 'WAIT' });
  const timer = (delayed as unknown as Action[]).find((a) => a.type === 'xstate.raise');
  assert.ok(timer, `an after delay is xstate.raise: ${delayed.map((a) => a.type).join(', ')}`);
  assert.equal(timer.params?.delay, 250);
  assert.equal((timer.params?.event as { type: string }).type.startsWith('xstate.after.'), true);
  assert.ok(timer.params?.id, 'with the send id that cancel names');

  const [, left] = transition(machine, waiting, { type: 'LEAVE' });
  const cancel = (left as unknown as Action[]).find((a) => a.type === 'xstate.cancel');
  assert.ok(cancel, `leaving a state with a pending delay is xstate.cancel: ${left.map((a) => a.type).join(', ')}`);
  assert.equal(cancel.params?.sendId, timer.params?.id);

  const [, now] = transition(machine, start, { type: 'NOW' });
  const raised = (now as unknown as Action[]).find((a) => a.type === 'xstate.raise');
  assert.ok(raised, 'an immediate raise is xstate.raise');
  assert.equal(raised.params?.delay, undefined);
  assert.deepEqual(raised.params?.event, { type: 'GO' });
});

test("the driver's transition answers as XState's transition() does, without an initial snapshot per call", () => {
  let contexts = 0;
  const counted = setup({
    actors: { work: fromPromise(async () => 'done') },
    delays: { later: 250 },
  }).createMachine({
    id: 'counted',
    initial: 'idle',
    context: () => ({ made: ++contexts }),
    states: {
      idle: { on: { GO: 'working', WAIT: 'waiting', NOW: { actions: raise({ type: 'GO' }) } } },
      working: { invoke: { id: 'job', src: 'work' }, on: { DONE: 'idle' } },
      waiting: { after: { later: 'idle' }, on: { LEAVE: 'idle' } },
    },
  });
  const start = createActor(counted).getSnapshot();
  const shape = (r: [unknown, unknown[]]) => {
    const [snap, actions] = r as [{ value: unknown; context: unknown; status: string }, Action[]];
    return { value: snap.value, context: snap.context, status: snap.status, actions: actions.map((a) => ({ type: a.type, id: a.params?.id, delay: a.params?.delay, event: a.params?.event, sendId: a.params?.sendId })) };
  };
  let a = start;
  let b = start;
  for (const type of ['WAIT', 'LEAVE', 'NOW', 'GO', 'DONE', 'GO']) {
    const ours = pureTransition(counted, a, { type } as never);
    const theirs = transition(counted, b, { type } as never);
    assert.deepEqual(shape(ours), shape(theirs as [unknown, unknown[]]), `after ${type}`);
    [a, b] = [ours[0], theirs[0]];
  }
  // The scope the driver's transitions run in was made once; XState's made one (with an initial
  // snapshot, here a context) per call.
  const before = contexts;
  for (let i = 0; i < 10; i++) pureTransition(counted, start, { type: 'WAIT' } as never);
  assert.equal(contexts, before);
  transition(counted, start, { type: 'WAIT' } as never);
  assert.equal(contexts, before + 1);
});
