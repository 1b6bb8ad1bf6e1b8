// The machine host: effects are promise actors that get { input, signal }; the host aborts an
// effect when it stops (daemon shutdown), when the reconcile is cut off and at the effect's
// deadline; a transient machine is held between passes, a settled or final one is let go.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assign, createActor, fromPromise, setup } from 'xstate';
import { MachineHost } from '../../../controllers/machine-host.ts';
import { topState } from '../../../controllers/machine-driver.ts';
import { isCode } from '../../../lib/errors.ts';

interface Seen {
  input?: { id: string };
  aborted: boolean;
  reason?: unknown;
}

/** A machine whose `work` effect runs until its signal is aborted (or `finish` is called). */
function hangingMachine(seen: Seen) {
  let finish: (v: string) => void = () => {};
  const machine = setup({
    types: { context: {} as { id: string; error: string }, events: {} as { type: 'GO' } | { type: 'WAIT' } },
    actors: {
      work: fromPromise<string, { id: string }>(
        ({ input, signal }) =>
          new Promise<string>((resolve, reject) => {
            seen.input = input;
            finish = resolve;
            signal.addEventListener('abort', () => {
              seen.aborted = true;
              seen.reason = signal.reason;
              reject(signal.reason);
            });
          }),
      ),
    },
  }).createMachine({
    id: 'hang',
    context: { id: 'k1', error: '' },
    initial: 'idle',
    states: {
      idle: { on: { GO: 'working', WAIT: 'waiting' } },
      waiting: { after: { 1000: 'idle' } },
      working: {
        invoke: {
          src: 'work',
          input: ({ context }) => ({ id: context.id }),
          onDone: 'done',
          onError: { target: 'failed', actions: assign({ error: ({ event }) => String((event.error as Error)?.message ?? event.error) }) },
        },
      },
      failed: {},
      done: { type: 'final' },
    },
  });
  return { machine, finish: (v: string) => finish(v) };
}

const fresh = <M extends Parameters<typeof createActor>[0]>(m: M) => ({ snapshot: createActor(m).getSnapshot(), timers: [] });
const never = new AbortController().signal;

test('stopping the host aborts the effect under way: its signal fires, the pass throws Canceled, nothing is held', async () => {
  const seen: Seen = { aborted: false };
  const { machine } = hangingMachine(seen);
  const host = new MachineHost(machine, { name: 'thing' });
  const pass = host.run('k1', fresh(machine), [{ type: 'GO' }], { signal: never, now: Date.now });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(seen.input, { id: 'k1' }, 'the effect got its input');
  host.stop(new Error('shutting down'));
  await assert.rejects(pass, (err: unknown) => isCode(err, 'Canceled') && /thing k1: reconcile canceled/.test((err as Error).message));
  assert.equal(seen.aborted, true, 'the effect saw its signal aborted');
  assert.equal(host.size, 0);
});

test('a reconcile cut off aborts its effect the same way', async () => {
  const seen: Seen = { aborted: false };
  const { machine } = hangingMachine(seen);
  const host = new MachineHost(machine, { name: 'thing' });
  const cut = new AbortController();
  const pass = host.run('k1', fresh(machine), [{ type: 'GO' }], { signal: cut.signal, now: Date.now });
  await new Promise((r) => setImmediate(r));
  cut.abort(new Error('controller gave up'));
  await assert.rejects(pass, (err: unknown) => isCode(err, 'Canceled'));
  assert.equal(seen.aborted, true);
});

test('an effect past its deadline is aborted and the machine gets its error event', async () => {
  const seen: Seen = { aborted: false };
  const { machine } = hangingMachine(seen);
  const host = new MachineHost(machine, { name: 'thing', effectDeadlineMs: 20 });
  const res = await host.run('k1', fresh(machine), [{ type: 'GO' }], { signal: never, now: Date.now });
  assert.equal(topState(res.snapshot), 'failed');
  assert.match(res.snapshot.context.error, /hang effect work: no result within 20 ms/, JSON.stringify(res.snapshot.context));
  assert.equal(seen.aborted, true, 'the effect was told to stop');
});

test('an effect that ends reports its output; a transient machine is held, a settled or final one let go', async () => {
  const seen: Seen = { aborted: false };
  const { machine, finish } = hangingMachine(seen);
  const host = new MachineHost(machine, { name: 'thing' });
  const waiting = await host.run('k2', fresh(machine), [{ type: 'WAIT' }], { signal: never, now: () => 0 });
  assert.equal(waiting.requeueAfter, 1000, 'the delayed event is a timer, answered as a requeue');
  host.keep('k2', waiting);
  assert.equal(host.size, 1, 'held for the next pass');
  assert.equal(host.current('k2', () => assert.fail('held, not restored')), host.current('k2', () => fresh(machine)));
  host.keep('k2', waiting, true);
  assert.equal(host.size, 0, 'a settled state is rebuilt from status instead');
  const pass = host.run('k3', fresh(machine), [{ type: 'GO' }], { signal: never, now: Date.now });
  await new Promise((r) => setImmediate(r));
  finish('ok');
  const done = await pass;
  assert.equal(done.snapshot.status, 'done');
  host.keep('k3', done);
  assert.equal(host.size, 0);
  assert.equal(seen.aborted, false);
});
