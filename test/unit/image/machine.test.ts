// The image lifecycle machine, walked with the pure transition function (through the machine
// driver's `step`) and a simulated clock: verification of a new generation, a missing layer,
// removal and a removal that fails, and requests that must change nothing. An image waits on
// nothing but its record, so the clock never moves it and no timer is ever armed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fromPromise, initialTransition, type SnapshotFrom } from 'xstate';
import { drive } from '../../../controllers/machine-driver.ts';
import { MachineSim } from '../controllers/machine-sim.ts';
import { imageLifecycle, INITIAL_FACTS, missingLayerError, restoredContext, settledStateOf, type ImageFacts, type VerifyOutput } from '../../../reconcilers/image/machine.ts';

type Snap = SnapshotFrom<typeof imageLifecycle>;

const CHAIN = `sha256:${'a'.repeat(64)}`;

/** The machine with a simulated clock: effects are completed by hand, timers fire on advance(). */
class Sim extends MachineSim<typeof imageLifecycle> {
  facts: ImageFacts;

  constructor(state?: string, facts: Partial<ImageFacts> = {}) {
    const now = 1_000_000;
    const f: ImageFacts = { ...INITIAL_FACTS, id: 'sha256:img', chainId: CHAIN, now, ...facts };
    super(imageLifecycle, state ? (imageLifecycle.resolveState({ value: state, context: restoredContext(f) }) as Snap) : initialTransition(imageLifecycle, f)[0], now);
    this.facts = f;
  }

  override observe(facts: Partial<ImageFacts> = {}): this {
    this.facts = { ...this.facts, ...facts, now: this.now };
    return this.send('OBSERVED', { facts: this.facts });
  }

}

describe('image lifecycle machine', () => {
  test('pending + VERIFY -> verifying (verifyLayers) -> ready when the layers are there', () => {
    const m = new Sim().observe().send('VERIFY');
    assert.equal(m.state, 'verifying');
    assert.deepEqual(m.pending, ['verifyLayers']);
    assert.equal(m.done('verifyLayers', { missing: false }).state, 'ready');
    assert.equal(m.ctx.error, '');
  });

  test('a missing top layer fails the image with the message status shows', () => {
    const m = new Sim().observe().send('VERIFY').done('verifyLayers', { missing: true });
    assert.equal(m.state, 'failed');
    assert.equal(m.ctx.error, `layer ${CHAIN} is missing`);
    assert.equal(missingLayerError(null), 'layer null is missing');
  });

  test('a new generation is verified again, from ready or failed; the old message is forgotten', () => {
    const f = new Sim('failed').observe().send('VERIFY');
    assert.equal(f.state, 'verifying');
    assert.equal(f.done('verifyLayers', { missing: false }).state, 'ready');
    assert.equal(f.ctx.error, '');
    const r = new Sim('ready').observe().send('VERIFY').done('verifyLayers', { missing: true });
    assert.equal(r.state, 'failed');
  });

  test('a check that throws leaves the image pending (status untouched) with the error to throw', () => {
    const err = new Error('layer store closed');
    const m = new Sim('ready').send('VERIFY').fail('verifyLayers', err);
    assert.equal(m.state, 'pending');
    assert.equal(m.ctx.cause, err);
    assert.equal(m.send('VERIFY').state, 'verifying');
    assert.equal(m.ctx.cause, null);
  });

  test('REMOVE from any settled state releases the layers and the record: removed is final', () => {
    for (const from of ['pending', 'ready', 'failed']) {
      const m = new Sim(from).observe().send('REMOVE');
      assert.equal(m.state, 'removing.releasing', from);
      assert.deepEqual(m.pending, ['release']);
      assert.equal(m.done('release').state, 'removed');
      assert.equal(m.snap.status, 'done');
    }
  });

  test('a release that fails stalls with the error; the next REMOVE tries again', () => {
    const err = new Error('removing layer failed');
    const m = new Sim('ready').send('REMOVE').fail('release', err);
    assert.equal(m.state, 'removing.stalled');
    assert.equal(m.ctx.cause, err);
    assert.equal(m.send('VERIFY').state, 'removing.stalled', 'an image being removed is not verified');
    assert.equal(m.send('REMOVE').state, 'removing.releasing');
    assert.deepEqual(m.started, ['release', 'release']);
  });

  test('no delays: with the simulated clock an hour on, nothing is armed and nothing moves', () => {
    for (const state of ['pending', 'ready', 'failed']) {
      const m = new Sim(state).observe();
      m.advance(3_600_000);
      assert.equal(m.state, state);
      assert.deepEqual(m.timers, []);
      assert.deepEqual(m.started, []);
    }
    const v = new Sim().observe().send('VERIFY').done('verifyLayers', { missing: false }).advance(3_600_000);
    assert.deepEqual(v.timers, []);
    assert.deepEqual(v.started, ['verifyLayers']);
  });

  test('requests a state does not accept change nothing and start no effect', () => {
    const m = new Sim().send('VERIFY').send('VERIFY').observe();
    assert.equal(m.state, 'verifying');
    assert.deepEqual(m.started, ['verifyLayers'], 'no second check while one runs');
    const r = new Sim('ready').send('REMOVE').send('VERIFY').send('REMOVE');
    assert.equal(r.state, 'removing.releasing');
    assert.deepEqual(r.started, ['release'], 'no second release while one runs');
    assert.equal(settledStateOf('pending'), 'pending');
    assert.equal(settledStateOf('ready'), 'ready');
    assert.equal(settledStateOf('failed'), 'failed');
    assert.equal(settledStateOf('removing'), 'pending');
  });
});

describe('image lifecycle through drive', () => {
  test('a reconcile runs its effect to the end and never asks for a requeue', async () => {
    const machine = imageLifecycle.provide({
      actors: {
        verifyLayers: fromPromise(async (): Promise<VerifyOutput> => ({ missing: false })),
        release: fromPromise(async () => {}),
      },
    });
    const signal = new AbortController().signal;
    const facts: ImageFacts = { ...INITIAL_FACTS, id: 'i', chainId: CHAIN, now: 5 };
    const snap = machine.resolveState({ value: 'pending', context: restoredContext(facts) });
    const r1 = await drive(machine, snap, [], [{ type: 'OBSERVED', facts }, { type: 'VERIFY' }], { signal, now: () => 5 });
    assert.equal(r1.snapshot.value, 'ready');
    assert.equal(r1.requeueAfter, undefined);
    const r2 = await drive(machine, r1.snapshot, r1.timers, [{ type: 'OBSERVED', facts }, { type: 'REMOVE' }], { signal, now: () => 5 });
    assert.equal(r2.snapshot.status, 'done');
    assert.equal(r2.requeueAfter, undefined);
  });
});
