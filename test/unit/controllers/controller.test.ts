import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { Controller, TerminalError, type ReconcileContext, type ReconcileResult } from '../../../controllers/controller.ts';
import { Manager } from '../../../controllers/manager.ts';
import { controller } from '../../../controllers/builder.ts';
import { Gated } from '../../../controllers/gate.ts';
import { KeySource } from '../../../controllers/source.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { fakeLog } from './fake-log.ts';
import { testKind } from '../store/test-kind.ts';

const K_OTHER_KIND = testKind('other-kind');
const K_THING = testKind('thing');

let dir: string;
let store: Store;
const controllers: Controller[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engine-ctl-'));
  store = openStore(join(dir, 'engine.db'));
});
afterEach(async () => {
  for (const c of controllers.splice(0)) await c.stop();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

type Fn = (key: string, ctx: ReconcileContext) => Promise<ReconcileResult>;

function makeController(fn: Fn, opts: { workers?: number; stopTimeoutMs?: number; resumeFromRevision?: number } = {}) {
  const log = fakeLog();
  const c = new Controller({ name: 'test', kind: K_THING, store, reconciler: { reconcile: fn }, log, baseDelayMs: 2, maxDelayMs: 20, ...opts });
  controllers.push(c);
  return { c, log };
}

async function until(cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(2);
  }
}

/** A reconciler that copies spec.want into status.have: assert the end state, not call order. */
function converge(): Fn {
  return async (key) => {
    const r = store.get(K_THING, key);
    if (!r) return;
    await sleep(1);
    store.updateStatus(K_THING, key, (s) => ({
      ...s,
      have: r.spec.want,
      observedGeneration: r.generation,
    }));
  };
}

describe('Controller', () => {
  test('resumed from a revision: only the changes since are queued; from one older than the history: told "too old", it relists', async () => {
    for (let i = 0; i < 5; i++) store.create(K_THING, `t${i}`, { want: i }, {});
    const mark = store.revision;
    store.updateSpec(K_THING, 't3', () => ({ want: 33 }));
    const seen: string[] = [];
    const { c } = makeController(async (key) => void seen.push(key), { resumeFromRevision: mark });
    await c.start();
    await until(() => seen.length >= 1);
    await sleep(20);
    assert.deepEqual(seen, ['t3']);
    await c.stop();

    store.close();
    store = openStore(join(dir, 'engine.db'), { eventHistory: 16 });
    for (let i = 0; i < 40; i++) store.updateSpec(K_THING, 't0', () => ({ want: i }));
    const again: string[] = [];
    const { c: c2, log } = makeController(async (key) => void again.push(key), { resumeFromRevision: mark });
    await c2.start();
    await until(() => again.length >= 5);
    assert.deepEqual([...new Set(again)].sort(), ['t0', 't1', 't2', 't3', 't4']);
    assert.ok(log.lines.some((l) => l.msg === 'watch history too old: relisting'));
  });

  test('resyncs existing resources on start and follows store changes', async () => {
    for (let i = 0; i < 10; i++) store.create(K_THING, `t${i}`, { want: i }, { have: -1, observedGeneration: 0 });
    store.create(K_OTHER_KIND, 'x', {}, {});
    const seen = new Set<string>();
    const inner = converge();
    const { c } = makeController(async (key, ctx) => {
      seen.add(key);
      return inner(key, ctx);
    });
    await c.start();
    const done = () => store.list(K_THING).every((r) => r.status.have === r.spec.want);
    await until(done);
    assert.ok(!seen.has('x'));
    store.updateSpec(K_THING, 't3', () => ({ want: 33 }));
    store.create(K_THING, 'new', { want: 7 }, { have: -1, observedGeneration: 0 });
    await until(() => done() && store.list(K_THING).length === 11);
    const t3 = await store.waitFor(
      K_THING,
      't3',
      (r) => (r?.status.observedGeneration ?? 0) >= 2,
      { timeoutMs: 2000 },
    );
    assert.equal(t3?.status.observedGeneration, 2);
  });

  test('synced: resolves once every object listed at start was reconciled once (failures count), and at once for none', async () => {
    for (let i = 0; i < 3; i++) store.create(K_THING, `s${i}`, { want: i }, { have: -1, observedGeneration: 0 });
    const seen = new Set<string>();
    let syncedAt = -1;
    const { c } = makeController(async (key) => {
      await sleep(5);
      seen.add(key);
      if (key === 's1') throw new Error('failing once counts');
    });
    void c.synced().then(() => (syncedAt = seen.size));
    await c.start();
    await c.synced();
    assert.equal(syncedAt, 3);
    const empty = new Controller({ name: 'empty', kind: K_OTHER_KIND, store, reconciler: { reconcile: async () => {} }, log: fakeLog() });
    controllers.push(empty);
    await empty.start();
    await empty.synced();
  });

  test('the same key is never reconciled concurrently; different keys are', async () => {
    const active = new Set<string>();
    let overlaps = 0;
    let maxParallel = 0;
    const { c } = makeController(
      async (key) => {
        if (active.has(key)) overlaps++;
        active.add(key);
        maxParallel = Math.max(maxParallel, active.size);
        await sleep(5);
        active.delete(key);
      },
      { workers: 4 },
    );
    await c.start();
    for (let round = 0; round < 5; round++) {
      for (const k of ['a', 'b', 'c']) c.enqueue(k);
      await sleep(2);
    }
    await sleep(50);
    assert.equal(overlaps, 0);
    assert.ok(maxParallel > 1);
  });

  test('requeueAfter runs the key again later', async () => {
    store.create(K_THING, 'poll', {}, {});
    let runs = 0;
    const { c } = makeController(async () => {
      runs++;
      return runs < 3 ? { requeueAfter: 5 } : undefined;
    });
    await c.start();
    await until(() => runs >= 3);
    await sleep(30);
    assert.equal(runs, 3);
  });

  test('errors are logged and retried with backoff until success; terminal errors are not retried', async () => {
    store.create(K_THING, 'flaky', {}, {});
    store.create(K_THING, 'hopeless', {}, {});
    let flaky = 0;
    let hopeless = 0;
    const { c, log } = makeController(async (key) => {
      if (key === 'hopeless') {
        hopeless++;
        throw new TerminalError('cannot ever work');
      }
      if (++flaky < 4) throw new Error(`transient ${flaky}`);
    });
    await c.start();
    await until(() => flaky >= 4);
    await sleep(40);
    assert.equal(flaky, 4, 'no retry after success');
    assert.equal(hopeless, 1);
    const failures = log.lines.filter((l) => /retrying/.test(l.msg ?? ''));
    assert.equal(failures.length, 3);
    assert.equal(failures[0]!.bindings.controller, 'test');
    assert.equal(failures[0]!.bindings.key, 'flaky');
    assert.ok(log.lines.some((l) => l.level === 'error' && l.bindings.key === 'hopeless'));
  });

  test('a controller of fixed keys and no kind: its keys at start (synced once each ran), a source wakes one, failures back off, quietly when asked', async () => {
    const wakes = new KeySource();
    const seen: string[] = [];
    let fail = 2;
    const ctl = controller('keyed')
      .forKeys(['node'])
      .source(wakes)
      .withOptions({ baseDelayMs: 2, maxDelayMs: 20, quietRetries: true })
      .build({
        reconciler: {
          reconcile: async (key) => {
            seen.push(key);
            if (key === 'node' && fail-- > 0) throw new Error('etcd away');
          },
        },
        log: fakeLog(),
      });
    controllers.push(ctl);
    const log = fakeLog();
    const quiet = new Controller({ name: 'q', keys: ['k'], reconciler: { reconcile: async () => { throw new Error('no'); } }, log, baseDelayMs: 2, maxDelayMs: 4, quietRetries: true });
    controllers.push(quiet);
    await ctl.start();
    await quiet.start();
    await ctl.synced();
    await until(() => seen.length >= 3);
    assert.deepEqual(seen, ['node', 'node', 'node'], 'the failed pass retried with back-off until it worked');
    wakes.emit('node');
    await until(() => seen.length >= 4);
    assert.equal(ctl.kind, undefined);
    await until(() => log.lines.filter((l) => /retrying/.test(l.msg ?? '')).length >= 6);
    assert.ok(log.lines.filter((l) => /retrying/.test(l.msg ?? '')).every((l) => l.level === 'debug'), 'quiet retries log at debug only');
    assert.throws(() => new Controller({ name: 'none', reconciler: { reconcile: async () => {} }, log }), /neither a kind nor keys/);
    assert.throws(() => controller('w').forKeys(['x']).watches(K_THING, () => 'x').build({ reconciler: { reconcile: async () => {} }, log }), /built without one/);
  });

  test('enqueue with a delay (outside triggers)', async () => {
    const runs: string[] = [];
    const { c } = makeController(async (key) => {
      runs.push(key);
    });
    await c.start();
    c.enqueue('timer', 15);
    await sleep(5);
    assert.deepEqual(runs, []);
    await until(() => runs.length === 1);
    assert.deepEqual(runs, ['timer']);
  });

  test('stop lets in-flight reconciles finish and takes no more work', async () => {
    let finished = 0;
    let started = 0;
    const { c } = makeController(async () => {
      started++;
      await sleep(20);
      finished++;
    });
    await c.start();
    c.enqueue('a');
    await until(() => started === 1);
    await c.stop();
    assert.equal(finished, 1);
    c.enqueue('b');
    store.create(K_THING, 'c', {}, {});
    await sleep(10);
    assert.equal(started, 1);
  });

  test('stop aborts the signal of reconciles that outlive the stop timeout', async () => {
    let aborted = false;
    const { c } = makeController(
      (_key, ctx) =>
        new Promise<void>((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            aborted = true;
            resolve();
          });
        }),
      { stopTimeoutMs: 20 },
    );
    await c.start();
    c.enqueue('stuck');
    await sleep(5);
    await c.stop();
    assert.equal(aborted, true);
  });
});

describe('Gated', () => {
  test('runs a new runnable for each opening, stops it at each closing, in order; stopped, it opens no more', async () => {
    const changes = new KeySource<boolean>();
    const events: string[] = [];
    let n = 0;
    const gate = new Gated({
      name: 'gated',
      isOpen: () => true,
      changes,
      build: () => {
        const id = ++n;
        return {
          start: async () => {
            await sleep(5);
            events.push(`start ${id}`);
          },
          stop: async () => {
            await sleep(5);
            events.push(`stop ${id}`);
          },
        };
      },
    });
    await gate.start();
    assert.ok(gate.running);
    changes.emit(true); // already open: nothing
    changes.emit(false);
    changes.emit(true);
    changes.emit(false);
    assert.equal(gate.running, false);
    changes.emit(true);
    await gate.stop();
    changes.emit(true);
    await sleep(20);
    assert.deepEqual(events, ['start 1', 'stop 1', 'start 2', 'stop 2', 'start 3', 'stop 3']);
    assert.equal(gate.running, false);
  });
});

describe('Manager', () => {
  test('starts in order and stops in reverse', async () => {
    const calls: string[] = [];
    const m = new Manager();
    for (const name of ['image', 'container']) {
      m.add({ name, start: async () => void calls.push(`start ${name}`), stop: async () => void calls.push(`stop ${name}`) });
    }
    await m.start();
    await m.stop();
    assert.deepEqual(calls, ['start image', 'start container', 'stop container', 'stop image']);
  });

  test('a failed start stops the ones already started', async () => {
    const calls: string[] = [];
    const m = new Manager();
    m.add({ name: 'a', start: () => void calls.push('start a'), stop: () => void calls.push('stop a') });
    m.add({
      name: 'b',
      start: () => {
        throw new Error('b broke');
      },
      stop: () => void calls.push('stop b'),
    });
    await assert.rejects(m.start(), /b broke/);
    assert.deepEqual(calls, ['start a', 'stop a']);
  });

  test('a loop declared after another starts once that one has synced, without holding up the start; ready() and status() say where each is', async () => {
    const calls: string[] = [];
    let sync = () => {};
    const containers = { name: 'container', start: () => void calls.push('start container'), stop: () => void calls.push('stop container'), synced: () => new Promise<void>((r) => (sync = r)) };
    const stacks = { name: 'stack', start: () => void calls.push('start stack'), stop: () => void calls.push('stop stack') };
    const m = new Manager();
    m.add(containers);
    m.add(stacks, { after: [containers] });
    await m.start();
    assert.deepEqual(calls, ['start container'], 'the start returns before the container loop has synced');
    assert.deepEqual(m.status(), [{ name: 'container', state: 'running' }, { name: 'stack', state: 'pending' }]);
    let ready = false;
    void m.ready().then(() => (ready = true));
    sync();
    await sleep(5);
    assert.deepEqual(calls, ['start container', 'start stack']);
    assert.deepEqual(m.status(), [{ name: 'container', state: 'synced' }, { name: 'stack', state: 'synced' }]);
    assert.equal(ready, true);
    // Added once the manager runs (wiring done after the API serves): started at once; removed: stopped.
    const reload = { name: 'config-reload', start: () => void calls.push('start reload'), stop: () => void calls.push('stop reload') };
    m.add(reload);
    await sleep(1);
    await m.remove(reload);
    await m.stop();
    assert.deepEqual(calls, ['start container', 'start stack', 'start reload', 'stop reload', 'stop stack', 'stop container']);
  });

  test('after waitMs without the sync, the loop starts anyway; stopped before its turn, it never starts', async () => {
    const calls: string[] = [];
    const never = { name: 'never', start: () => {}, stop: () => {}, synced: () => new Promise<void>(() => {}) };
    const late = { name: 'late', start: () => void calls.push('start late'), stop: () => void calls.push('stop late') };
    const m = new Manager();
    m.add(never);
    m.add(late, { after: [never], waitMs: 20 });
    await m.start();
    await sleep(60);
    assert.deepEqual(calls, ['start late']);
    await m.stop();
    assert.deepEqual(calls, ['start late', 'stop late']);

    const m2 = new Manager();
    const waiting = { name: 'waiting', start: () => void calls.push('start waiting'), stop: () => void calls.push('stop waiting') };
    m2.add(never);
    m2.add(waiting, { after: [never], waitMs: 20 });
    await m2.start();
    await m2.stop();
    await sleep(60);
    assert.ok(!calls.includes('start waiting'));
  });

  test('runs real controllers against the store', async () => {
    const m = new Manager();
    const { c } = makeController(converge());
    m.add(c);
    store.create(K_THING, 'x', { want: 5 }, { have: 0, observedGeneration: 0 });
    await m.start();
    const r = await store.waitFor(K_THING, 'x', (r) => r?.status.have === 5, { timeoutMs: 2000 });
    assert.equal(r?.status.have, 5);
    await m.stop();
  });
});
