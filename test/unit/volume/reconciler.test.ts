// The volume lifecycle machine under a simulated clock (create, failure and retry, a removal
// waiting on a container, teardown and its stall), then the VolumeReconciler against an
// in-memory store and a fake driver: status writes, the in-use wait, and the order of the
// removal (the data goes before the record).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { initialTransition, type SnapshotFrom } from 'xstate';
import { MachineSim } from '../controllers/machine-sim.ts';
import { fakeLog } from '../controllers/fake-log.ts';
import { FakeStore } from '../network/fake-store.ts';
import { type ContainerSpec, Containers } from '../../../store/kinds/container.ts';
import { type VolumeSpec, type VolumeStatus, Volumes } from '../../../store/kinds/volume.ts';
import { VolumeMounter } from '../../../reconcilers/volume/mounter.ts';
import type { VolumeDriverPort } from '../../../reconcilers/volume/deps.ts';
import { VolumeReconciler, type ReconcileContext } from '../../../reconcilers/volume/reconciler.ts';
import { IN_USE_RETRY_MS, INITIAL_FACTS, restoredContext, settledStateOf, volumeLifecycle, type VolumeFacts } from '../../../reconcilers/volume/machine.ts';
import { loose } from '../store/test-kind.ts';

type Snap = SnapshotFrom<typeof volumeLifecycle>;

class Sim extends MachineSim<typeof volumeLifecycle> {
  facts: VolumeFacts;

  constructor(state?: string, facts: Partial<VolumeFacts> = {}) {
    const now = 1_000_000;
    const f: VolumeFacts = { ...INITIAL_FACTS, name: 'vol1', now, ...facts };
    super(volumeLifecycle, state ? (volumeLifecycle.resolveState({ value: state, context: restoredContext(f, '/v/vol1/_data') }) as Snap) : initialTransition(volumeLifecycle, f)[0], now);
    this.facts = f;
  }

  override observe(facts: Partial<VolumeFacts> = {}): this {
    this.facts = { ...this.facts, ...facts, now: this.now };
    return this.send('OBSERVED', { facts: this.facts });
  }

  apply(): this {
    return this.observe().send('APPLY');
  }

  remove(inUse: boolean): this {
    return this.observe({ inUse }).send('REMOVE');
  }
}

describe('volume lifecycle machine', () => {
  test('pending + APPLY -> creating -> ready, the mountpoint kept in the context', () => {
    const m = new Sim().apply();
    assert.equal(m.state, 'creating');
    assert.deepEqual(m.pending, ['create']);
    m.done('create', '/v/vol1/_data');
    assert.equal(m.state, 'ready');
    assert.equal(m.ctx.mountpoint, '/v/vol1/_data');
    assert.deepEqual(m.timers, []);
    assert.equal(m.apply().state, 'ready', 'APPLY on ready changes nothing');
    assert.deepEqual(m.started, ['create']);
  });

  test('a create error: failed with the message and the cause; APPLY retries', () => {
    const err = new Error('mkdir: permission denied');
    const m = new Sim().apply().fail('create', err);
    assert.equal(m.state, 'failed');
    assert.equal(m.ctx.error, 'mkdir: permission denied');
    assert.equal(m.ctx.cause, err);
    m.apply();
    assert.equal(m.state, 'creating');
    assert.equal(m.ctx.error, '', 'the old message is cleared on retry');
    assert.equal(m.ctx.cause, null);
    assert.equal(m.done('create', '/v/vol1/_data').state, 'ready');
    assert.deepEqual(m.started, ['create', 'create']);
  });

  test('REMOVE while in use waits, re-checks IN_USE_RETRY_MS later, tears down once free', () => {
    const m = new Sim('ready').remove(true);
    assert.equal(m.state, 'removing.waiting');
    assert.deepEqual(m.pending, []);
    assert.deepEqual(m.timers.map((t) => t.at), [m.now + IN_USE_RETRY_MS]);
    m.advance(IN_USE_RETRY_MS - 1);
    assert.equal(m.state, 'removing.waiting', 'not before the retry is due');
    m.advance(1);
    assert.equal(m.state, 'removing.waiting', 'still in use: waits again');
    assert.deepEqual(m.timers.map((t) => t.at), [m.now + IN_USE_RETRY_MS], 'the retry is re-armed');
    m.facts.inUse = false;
    m.advance(IN_USE_RETRY_MS);
    assert.equal(m.state, 'removing.tearingDown');
    assert.deepEqual(m.timers, []);
    assert.equal(m.done('teardown').state, 'removed');
    assert.equal(m.snap.status, 'done');
  });

  test('REMOVE when not in use tears down at once from any settled state; removed is final', () => {
    for (const from of ['pending', 'ready', 'failed']) {
      const m = new Sim(from).remove(false);
      assert.equal(m.state, 'removing.tearingDown', from);
      assert.deepEqual(m.pending, ['teardown']);
      m.done('teardown');
      assert.equal(m.state, 'removed');
      assert.equal(m.snap.status, 'done');
      assert.equal(m.apply().state, 'removed', 'a final state takes no more events');
    }
  });

  test('a teardown error stalls with the message; APPLY is ignored; REMOVE retries', () => {
    const err = new Error('device or resource busy');
    const m = new Sim('ready').remove(false).fail('teardown', err);
    assert.equal(m.state, 'removing.stalled');
    assert.equal(m.ctx.error, 'device or resource busy');
    assert.equal(m.ctx.cause, err);
    assert.equal(m.apply().state, 'removing.stalled');
    assert.equal(m.remove(false).state, 'removing.tearingDown');
    assert.deepEqual(m.started, ['teardown', 'teardown']);
    assert.equal(m.done('teardown').state, 'removed');
  });

  test('settledStateOf: a removal restarts from ready, other phases map to themselves', () => {
    assert.equal(settledStateOf('pending'), 'pending');
    assert.equal(settledStateOf('ready'), 'ready');
    assert.equal(settledStateOf('failed'), 'failed');
    assert.equal(settledStateOf('removing'), 'ready');
  });
});

// --- the reconciler ---------------------------------------------------------------------------

class FakeDriver implements VolumeDriverPort {
  calls: string[] = [];
  ensureError: Error | undefined;
  onRemove: (name: string) => void = () => {};
  async ensure(name: string) {
    this.calls.push(`ensure ${name}`);
    if (this.ensureError) throw this.ensureError;
    return { mountpoint: this.mountpoint(name), created: true };
  }
  mountpoint(name: string): string {
    return `/data/volumes/${name}/_data`;
  }
  async mount(name: string): Promise<string> {
    this.calls.push(`mount ${name}`);
    return this.mountpoint(name);
  }
  async unmount(name: string): Promise<void> {
    this.calls.push(`unmount ${name}`);
  }
  async remove(name: string): Promise<void> {
    this.calls.push(`remove ${name}`);
    this.onRemove(name);
  }
  async isEmpty(): Promise<boolean> {
    return true;
  }
  async copyUp(): Promise<boolean> {
    return false;
  }
  async size(): Promise<number> {
    return 0;
  }
}

function volSpec(name: string, desired: VolumeSpec['desired'] = 'present'): VolumeSpec {
  return { name, driver: 'local', options: {}, labels: {}, created: '2024-01-01T00:00:00Z', anonymous: false, desired };
}
const pending: VolumeStatus = { observedGeneration: 0, phase: 'pending', error: '', mountpoint: '' };

function setup() {
  const store = new FakeStore();
  const driver = new FakeDriver();
  const log = fakeLog();
  const ctx: ReconcileContext = { signal: new AbortController().signal, log };
  return { store, driver, log, ctx, rec: new VolumeReconciler(store, driver) };
}

const statusOf = (store: FakeStore, name: string) => store.get(Volumes, name)?.status;

describe('VolumeReconciler', () => {
  test('a new record becomes ready with the driver mountpoint and the observed generation', async () => {
    const { store, driver, ctx, rec } = setup();
    store.create(Volumes, 'data', volSpec('data'), pending);
    store.updateSpec(Volumes, 'data', (s) => ({ ...s, labels: { a: 'b' } })); // generation 2
    assert.equal(await rec.reconcile('data', ctx), undefined);
    assert.deepEqual(statusOf(store, 'data'), { observedGeneration: 2, phase: 'ready', error: '', mountpoint: '/data/volumes/data/_data' });
    assert.deepEqual(driver.calls, ['ensure data']);
    assert.equal(await rec.reconcile('data', ctx), undefined, 'a second reconcile is quiet');
    assert.deepEqual(driver.calls, ['ensure data'], 'ready is not created again');
  });

  test('removal waits while a container names the volume, then removes the data before the record', async () => {
    const { store, driver, log, ctx, rec } = setup();
    store.create(Volumes, 'data', volSpec('data'), pending);
    await rec.reconcile('data', ctx);
    const cspec = { id: 'c1', mountPoints: [{ type: 'volume', name: 'data', source: '', destination: '/d', readOnly: false, mode: 'z', propagation: '', noCopy: false }] };
    store.create(loose(Containers), 'c1', cspec as unknown as ContainerSpec, {});
    store.updateSpec(Volumes, 'data', (s) => ({ ...s, desired: 'removed' }));

    const r1 = await rec.reconcile('data', ctx);
    assert.ok(r1 && typeof r1.requeueAfter === 'number', 'answers requeueAfter');
    assert.ok(r1.requeueAfter > 0 && r1.requeueAfter <= IN_USE_RETRY_MS);
    assert.deepEqual(driver.calls, ['ensure data'], 'no driver.remove while in use');
    assert.equal(statusOf(store, 'data')?.phase, 'removing');

    let recordAtRemove: boolean | undefined;
    driver.onRemove = (name) => {
      recordAtRemove = store.get(Volumes, name) !== undefined;
    };
    store.delete(Containers, 'c1');
    assert.equal(await rec.reconcile('data', ctx), undefined);
    assert.deepEqual(driver.calls, ['ensure data', 'remove data']);
    assert.equal(recordAtRemove, true, 'the record still stood when the data was removed');
    assert.equal(store.get(Volumes, 'data'), undefined, 'then the record is gone');
    assert.ok(log.lines.some((l) => l.msg === 'volume removed'));
  });

  test('a removal in a fresh reconciler (restored from phase removing) tears down when free', async () => {
    const { store, driver, ctx, rec } = setup();
    store.create(Volumes, 'old', { ...volSpec('old'), desired: 'removed' }, { ...pending, phase: 'removing', mountpoint: '/x' });
    assert.equal(await rec.reconcile('old', ctx), undefined);
    assert.deepEqual(driver.calls, ['remove old']);
    assert.equal(store.get(Volumes, 'old'), undefined);
  });

  test('a driver.ensure failure writes phase failed with the message and the reconcile throws', async () => {
    const { store, driver, ctx, rec } = setup();
    store.create(Volumes, 'bad', volSpec('bad'), pending);
    driver.ensureError = new Error('no space left on device');
    await assert.rejects(rec.reconcile('bad', ctx), (err) => err === driver.ensureError);
    const st = statusOf(store, 'bad');
    assert.equal(st?.phase, 'failed');
    assert.equal(st?.error, 'no space left on device');
    assert.equal(st?.observedGeneration, 1);
    // The retry: the held machine is in failed, APPLY creates again.
    driver.ensureError = undefined;
    assert.equal(await rec.reconcile('bad', ctx), undefined);
    assert.deepEqual(statusOf(store, 'bad'), { observedGeneration: 1, phase: 'ready', error: '', mountpoint: '/data/volumes/bad/_data' });
    assert.deepEqual(driver.calls, ['ensure bad', 'ensure bad']);
  });

  test('a driver.remove failure keeps the record (phase removing, the message) and throws; the next reconcile retries', async () => {
    const { store, driver, ctx, rec } = setup();
    store.create(Volumes, 'busy', { ...volSpec('busy'), desired: 'removed' }, { ...pending, phase: 'ready', mountpoint: '/x' });
    const err = new Error('device or resource busy');
    driver.onRemove = () => {
      throw err;
    };
    await assert.rejects(rec.reconcile('busy', ctx), (e) => e === err);
    assert.equal(statusOf(store, 'busy')?.phase, 'removing');
    assert.equal(statusOf(store, 'busy')?.error, 'device or resource busy');
    driver.onRemove = () => {};
    assert.equal(await rec.reconcile('busy', ctx), undefined);
    assert.deepEqual(driver.calls, ['remove busy', 'remove busy']);
    assert.equal(store.get(Volumes, 'busy'), undefined);
  });

  test('a reconcile of a missing record is a no-op', async () => {
    const { store, driver, ctx, rec } = setup();
    assert.equal(await rec.reconcile('ghost', ctx), undefined);
    assert.deepEqual(driver.calls, []);
    assert.equal(store.data.size, 0);
  });
});

describe('VolumeMounter', () => {
  test('a volume with mount options is unmounted after the last run using it, one without is never', async () => {
    const store = new FakeStore();
    const driver = new FakeDriver();
    store.create(Volumes, 'tv', { ...volSpec('tv'), options: { type: 'tmpfs', device: 'tmpfs' } }, pending);
    store.create(Volumes, 'plain', volSpec('plain'), pending);
    const m = new VolumeMounter(store, driver);
    assert.equal(await m.source('c1', 'tv'), '/data/volumes/tv/_data');
    await m.source('c2', 'tv');
    await m.source('c1', 'plain');
    await m.releaseRun('c1');
    assert.ok(!driver.calls.includes('unmount tv'), 'still used by c2');
    await m.releaseRun('c2');
    assert.deepEqual(driver.calls.filter((c) => c.startsWith('unmount')), ['unmount tv']);
    await assert.rejects(m.source('c3', 'nosuch'), /no such volume/);
  });
});
