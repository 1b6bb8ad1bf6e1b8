// The network lifecycle machine, walked with the pure transition function (through the machine
// driver's `step`) and a simulated clock: apply, the 30 s drift re-check as a machine delay,
// failure and its retry, cancellation, teardown, and requests that must change nothing. The last
// cases run it through `drive` with stand-in effects, as the reconciler does.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fromPromise, initialTransition, type SnapshotFrom } from 'xstate';
import { drive } from '../../../controllers/machine-driver.ts';
import { MachineSim } from '../controllers/machine-sim.ts';
import { EngineError } from '../../../lib/errors.ts';
import { INITIAL_FACTS, networkLifecycle, RECHECK_MS, restoredContext, settledStateOf, type NetworkFacts } from '../../../reconcilers/network/machine.ts';

type Snap = SnapshotFrom<typeof networkLifecycle>;

/** The machine with a simulated clock: effects are completed by hand, timers fire on advance(). */
class Sim extends MachineSim<typeof networkLifecycle> {
  facts: NetworkFacts;

  constructor(state?: string, facts: Partial<NetworkFacts> = {}) {
    const now = 1_000_000;
    const f: NetworkFacts = { ...INITIAL_FACTS, id: 'net1', bridge: true, now, ...facts };
    super(networkLifecycle, state ? (networkLifecycle.resolveState({ value: state, context: restoredContext(f) }) as Snap) : initialTransition(networkLifecycle, f)[0], now);
    this.facts = f;
  }

  override observe(facts: Partial<NetworkFacts> = {}): this {
    this.facts = { ...this.facts, ...facts, now: this.now };
    return this.send('OBSERVED', { facts: this.facts });
  }

  /** A reconcile of a network the spec wants present. */
  apply(): this {
    return this.observe().send('APPLY');
  }
}

describe('network lifecycle machine', () => {
  test('pending + APPLY -> applying (converge) -> ready, with the recheck due in 30 s', () => {
    const m = new Sim().apply();
    assert.equal(m.state, 'applying');
    assert.deepEqual(m.pending, ['converge']);
    m.done('converge', ['created bridge br0']);
    assert.equal(m.state, 'ready');
    assert.deepEqual(m.ctx.repairs, ['created bridge br0']);
    assert.deepEqual(m.timers.map((t) => t.at), [m.now + RECHECK_MS]);
  });

  test('the recheck delay brings ready back to applying after exactly 30 s: the drift repair', () => {
    const m = new Sim().apply().done('converge', []);
    m.advance(29_999);
    assert.equal(m.state, 'ready', 'not before the recheck is due');
    assert.deepEqual(m.started, ['converge']);
    m.advance(1);
    assert.equal(m.state, 'applying');
    assert.deepEqual(m.ctx.repairs, [], 'the last repairs are forgotten when applying again');
    m.done('converge', ['bridge br0: address', 'iptables: 2 changes']);
    assert.equal(m.state, 'ready');
    assert.deepEqual(m.ctx.repairs, ['bridge br0: address', 'iptables: 2 changes']);
    assert.deepEqual(m.timers.map((t) => t.at), [m.now + RECHECK_MS], 'the next recheck is armed');
    m.advance(RECHECK_MS);
    assert.deepEqual(m.started, ['converge', 'converge', 'converge']);
  });

  test('the recheck period is a fact (recheckMs), read when ready is entered', () => {
    const m = new Sim(undefined, { recheckMs: 5_000 }).apply().done('converge', []);
    assert.deepEqual(m.timers.map((t) => t.at), [m.now + 5_000]);
    m.advance(5_000);
    assert.equal(m.state, 'applying');
  });

  test('an APPLY before the recheck is due converges at once and re-arms the timer from then', () => {
    const m = new Sim().apply().done('converge', []);
    m.advance(10_000).send('APPLY');
    assert.equal(m.state, 'applying');
    assert.equal(m.timers.length, 0, 'the pending recheck is cancelled on leaving ready');
    m.done('converge', []);
    assert.deepEqual(m.timers.map((t) => t.at), [m.now + RECHECK_MS]);
    m.advance(20_000);
    assert.equal(m.state, 'ready', 'the old due time does not fire');
  });

  test('a network with nothing on the host (host, none) is ready at once: no effect, no recheck', () => {
    const m = new Sim(undefined, { bridge: false }).apply();
    assert.equal(m.state, 'ready');
    assert.deepEqual(m.started, []);
    assert.deepEqual(m.timers, []);
    m.advance(10 * RECHECK_MS).send('APPLY');
    assert.equal(m.state, 'ready');
    assert.deepEqual(m.started, []);
    assert.equal(new Sim('failed', { bridge: false }).apply().state, 'ready');
  });

  test('a converge that fails: failed with the message and the error; no recheck; APPLY retries', () => {
    const err = new EngineError('FailedPrecondition', 'br0 exists and is not a bridge');
    const m = new Sim().apply().fail('converge', err);
    assert.equal(m.state, 'failed');
    assert.equal(m.ctx.error, 'br0 exists and is not a bridge');
    assert.equal(m.ctx.cause, err);
    assert.deepEqual(m.timers, [], 'the retry is the controller back-off, not a timer');
    m.advance(RECHECK_MS);
    assert.equal(m.state, 'failed');
    m.apply();
    assert.equal(m.state, 'applying');
    assert.equal(m.ctx.error, '');
    assert.equal(m.done('converge', []).state, 'ready');
    assert.equal(m.ctx.cause, null);
  });

  test('a cancelled converge is no failure: back to pending, no message, the error kept to throw', () => {
    const err = new EngineError('Canceled', 'ip: canceled');
    const m = new Sim('ready').apply().fail('converge', err);
    assert.equal(m.state, 'pending');
    assert.equal(m.ctx.error, '');
    assert.equal(m.ctx.cause, err);
    assert.equal(m.apply().state, 'applying');
  });

  test('REMOVE tears down from any settled state; the recheck is cancelled; removed is final', () => {
    for (const from of ['pending', 'ready', 'failed']) {
      const m = new Sim(from).observe().send('REMOVE');
      assert.equal(m.state, 'removing.tearingDown', from);
      assert.equal(m.done('teardown').state, 'removed');
      assert.equal(m.snap.status, 'done');
    }
    const m = new Sim().apply().done('converge', []).send('REMOVE');
    assert.deepEqual(m.timers, []);
  });

  test('a teardown that fails stalls with the error; the next REMOVE tries again', () => {
    const err = new Error('iptables: busy');
    const m = new Sim('ready').send('REMOVE').fail('teardown', err);
    assert.equal(m.state, 'removing.stalled');
    assert.equal(m.ctx.cause, err);
    assert.equal(m.send('APPLY').state, 'removing.stalled', 'a network being removed is not applied again');
    assert.equal(m.send('REMOVE').state, 'removing.tearingDown');
    assert.deepEqual(m.started, ['teardown', 'teardown']);
  });

  test('requests a state does not accept change nothing and start no effect', () => {
    const m = new Sim().apply();
    m.send('APPLY').observe();
    assert.equal(m.state, 'applying');
    assert.deepEqual(m.started, ['converge'], 'no second converge while one runs');
    const r = new Sim('ready').advance(RECHECK_MS * 3);
    assert.equal(r.state, 'ready', 'a restored ready has no timer until it is applied');
    assert.deepEqual(r.started, []);
    assert.equal(settledStateOf('ready'), 'ready');
    assert.equal(settledStateOf('failed'), 'failed');
    assert.equal(settledStateOf('pending'), 'pending');
  });
});

describe('network lifecycle through drive', () => {
  test('a reconcile with a frozen clock answers requeueAfter of exactly the recheck period', async () => {
    const calls: string[] = [];
    const machine = networkLifecycle.provide({
      actors: {
        converge: fromPromise(async () => {
          calls.push('converge');
          await new Promise((r) => setTimeout(r, 5));
          return ['created bridge br0'];
        }),
        teardown: fromPromise(async () => {
          calls.push('teardown');
        }),
      },
    });
    const signal = new AbortController().signal;
    let now = 1_000_000;
    const facts = (): NetworkFacts => ({ ...INITIAL_FACTS, id: 'n', bridge: true, now });
    const snap0 = machine.resolveState({ value: 'pending', context: restoredContext(facts()) });
    const t0 = now;
    const r1 = await drive(machine, snap0, [], [{ type: 'OBSERVED', facts: facts() }, { type: 'APPLY' }], { signal, now: () => t0 });
    assert.equal(r1.snapshot.value, 'ready');
    assert.equal(r1.requeueAfter, RECHECK_MS);
    // The requeue: the timer is due and fires first; the APPLY that follows is ignored while applying.
    now += RECHECK_MS;
    const t1 = now;
    const r2 = await drive(machine, r1.snapshot, r1.timers, [{ type: 'OBSERVED', facts: facts() }, { type: 'APPLY' }], { signal, now: () => t1 });
    assert.deepEqual(calls, ['converge', 'converge']);
    assert.equal(r2.requeueAfter, RECHECK_MS);
    const r3 = await drive(machine, r2.snapshot, r2.timers, [{ type: 'OBSERVED', facts: facts() }, { type: 'REMOVE' }], { signal, now: () => t1 });
    assert.equal(r3.snapshot.status, 'done');
    assert.equal(r3.requeueAfter, undefined);
    assert.deepEqual(calls, ['converge', 'converge', 'teardown']);
  });
});
