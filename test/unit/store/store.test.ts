import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { isCode } from '../../../lib/errors.ts';
import { isWatchExpired, openStore, WatchExpiredError, type Store } from '../../../store/store.ts';
import type { WatchEvent } from '../../../store/types.ts';
import { fakeLog } from '../controllers/fake-log.ts';
import { testKind } from './test-kind.ts';

const K_C = testKind('c');
const K_D = testKind('d');
const K_NOTHING = testKind('nothing');
const K_OTHER = testKind('other');

interface Spec {
  image: string;
  n?: number;
}

let dir: string;
let dbPath: string;
let store: Store;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engine-store-'));
  dbPath = join(dir, 'engine.db');
  store = openStore(dbPath);
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function reopen(opts?: Parameters<typeof openStore>[1]): Store {
  store.close();
  store = openStore(dbPath, opts);
  return store;
}

describe('CRUD', () => {
  test('create, get, list in creation order', () => {
    const a = store.create(K_C, 'b-second-name', { image: 'x' }, { phase: 'new' });
    store.create(K_C, 'a-first-name', { image: 'y' }, { phase: 'new' });
    store.create(K_OTHER, 'z', {}, {});
    assert.equal(a.generation, 1);
    assert.equal(a.resourceVersion, 1);
    assert.equal(a.kind, 'c');
    assert.ok(!Number.isNaN(Date.parse(a.createdAt)));
    assert.deepEqual(store.get(K_C, 'b-second-name')?.spec, { image: 'x' });
    assert.equal(store.get(K_C, 'missing'), undefined);
    assert.deepEqual(
      store.list(K_C).map((r) => r.name),
      ['b-second-name', 'a-first-name'],
    );
    assert.deepEqual(store.list(K_NOTHING), []);
    assert.equal(store.revision, 3);
  });

  test('create of an existing resource is AlreadyExists', () => {
    store.create(K_C, 'a', {}, {});
    assert.throws(
      () => store.create(K_C, 'a', {}, {}),
      (err) => isCode(err, 'AlreadyExists') && /resource c\/a already exists/.test((err as Error).message),
    );
    assert.equal(store.revision, 1);
  });

  test('updateSpec bumps generation, updateStatus does not; both bump resourceVersion', () => {
    store.create(K_C, 'a', { image: 'x' }, { phase: 'new' });
    const s1 = store.updateSpec(K_C, 'a', (s, cur) => {
      assert.equal(cur.generation, 1);
      return { ...s, n: 1 };
    });
    assert.equal(s1.generation, 2);
    assert.equal(s1.resourceVersion, 2);
    const s2 = store.updateStatus(K_C, 'a', (st) => ({ ...st, phase: 'running', observedGeneration: 2 }));
    assert.equal(s2.generation, 2);
    assert.equal(s2.resourceVersion, 3);
    assert.deepEqual(s2.spec, { image: 'x', n: 1 });
    assert.equal(store.get(K_C, 'a')?.status.phase, 'running');
  });

  test('update of a missing resource is NotFound', () => {
    assert.throws(() => store.updateSpec(K_C, 'nope', (s) => s), (err) => isCode(err, 'NotFound'));
    assert.throws(() => store.updateStatus(K_C, 'nope', (s) => s), (err) => isCode(err, 'NotFound'));
  });

  test('an unchanged write is a no-op: no revision, no event', () => {
    const created = store.create(K_C, 'a', { image: 'x' }, { phase: 'new' });
    const events: WatchEvent[] = [];
    store.watch(K_C, (ev) => events.push(ev));
    const same = store.updateSpec(K_C, 'a', (s) => ({ ...s }));
    const same2 = store.updateStatus(K_C, 'a', (s) => ({ ...s }));
    assert.equal(same, created);
    assert.equal(same2, created);
    assert.equal(store.revision, 1);
    assert.equal(events.length, 0);
  });

  test('resources are frozen copies, not the caller objects', () => {
    const spec = { image: 'x' };
    store.create(K_C, 'a', spec, { phase: 'new' });
    spec.image = 'changed';
    const r = store.get(K_C, 'a')!;
    assert.equal(r.spec.image, 'x');
    assert.throws(() => {
      (r.spec as Spec).image = 'mutated';
    }, TypeError);
    // list() hands out a copy of the array.
    store.list(K_C).pop();
    assert.equal(store.list(K_C).length, 1);
  });

  test('delete', () => {
    store.create(K_C, 'a', {}, {});
    store.create(K_C, 'b', {}, {});
    assert.equal(store.delete(K_C, 'a'), true);
    assert.equal(store.delete(K_C, 'a'), false);
    assert.equal(store.get(K_C, 'a'), undefined);
    assert.deepEqual(
      store.list(K_C).map((r) => r.name),
      ['b'],
    );
    assert.equal(store.revision, 3);
  });

  test('put with expectedResourceVersion', () => {
    const r = store.put(K_C, { name: 'a', spec: { image: 'x' }, status: { phase: 'new' } }, { expectedResourceVersion: 0 });
    assert.equal(r.generation, 1);
    assert.throws(
      () => store.put(K_C, { name: 'a', spec: {}, status: {} }, { expectedResourceVersion: 0 }),
      (err) => isCode(err, 'AlreadyExists'),
    );
    const r2 = store.put(K_C, { name: 'a', spec: { image: 'y' }, status: r.status }, { expectedResourceVersion: r.resourceVersion });
    assert.equal(r2.generation, 2);
    assert.throws(
      () => store.put(K_C, { name: 'a', spec: { image: 'z' }, status: {} }, { expectedResourceVersion: r.resourceVersion }),
      (err) => isCode(err, 'Conflict'),
    );
    assert.throws(
      () => store.put(K_C, { name: 'gone', spec: {}, status: {} }, { expectedResourceVersion: 7 }),
      (err) => isCode(err, 'NotFound'),
    );
    // Status-only put keeps the generation.
    const r3 = store.put(K_C, { name: 'a', spec: { image: 'y' }, status: { phase: 'x' } });
    assert.equal(r3.generation, 2);
    assert.equal(r3.resourceVersion, r2.resourceVersion + 1);
  });
});

describe('transactions', () => {
  test('commit applies all writes, events after commit', () => {
    store.create(K_C, 'a', { v: 1 }, {});
    const events: WatchEvent[] = [];
    store.watch(null, (ev) => events.push(ev));
    const out = store.transaction((tx) => {
      tx.create(K_C, 'b', {}, {});
      tx.updateSpec(K_C, 'a', (s) => ({ v: s.v + 1 }));
      tx.delete(K_C, 'a');
      assert.equal(events.length, 0, 'no event before commit');
      assert.equal(tx.get(K_C, 'a'), undefined, 'reads inside see pending writes');
      return 42;
    });
    assert.equal(out, 42);
    assert.deepEqual(
      events.map((e) => [e.type, e.name, e.revision]),
      [
        ['put', 'b', 2],
        ['put', 'a', 3],
        ['delete', 'a', 4],
      ],
    );
  });

  test('a throw rolls back database, memory, order and revision', () => {
    store.create(K_C, 'a', { v: 1 }, {});
    store.create(K_C, 'b', { v: 1 }, {});
    store.create(K_C, 'c', { v: 1 }, {});
    const events: WatchEvent[] = [];
    store.watch(null, (ev) => events.push(ev));
    assert.throws(
      () =>
        store.transaction((tx) => {
          tx.delete(K_C, 'a');
          tx.updateSpec(K_C, 'b', () => ({ v: 2 }));
          tx.create(K_C, 'new', {}, {});
          throw new Error('boom');
        }),
      /boom/,
    );
    assert.equal(store.revision, 3);
    assert.equal(events.length, 0);
    assert.deepEqual(
      store.list(K_C).map((r) => r.name),
      ['a', 'b', 'c'],
    );
    assert.deepEqual(store.get(K_C, 'b')?.spec, { v: 1 });
    // And on disk.
    reopen();
    assert.deepEqual(
      store.list(K_C).map((r) => [r.name, r.spec]),
      [
        ['a', { v: 1 }],
        ['b', { v: 1 }],
        ['c', { v: 1 }],
      ],
    );
    assert.equal(store.revision, 3);
    // The next write continues from the committed revision.
    assert.equal(store.create(K_C, 'd', {}, {}).resourceVersion, 4);
  });

  test('nested transaction: inner failure caught by outer keeps outer writes', () => {
    store.transaction((tx) => {
      tx.create(K_C, 'outer', {}, {});
      assert.throws(() =>
        store.transaction((inner) => {
          inner.create(K_C, 'inner', {}, {});
          throw new Error('inner');
        }),
      );
      assert.equal(tx.get(K_C, 'inner'), undefined);
    });
    assert.deepEqual(
      store.list(K_C).map((r) => r.name),
      ['outer'],
    );
    reopen();
    assert.deepEqual(
      store.list(K_C).map((r) => r.name),
      ['outer'],
    );
  });

  test('async transaction functions are refused', () => {
    assert.throws(() => store.transaction(async () => store.create(K_C, 'a', {}, {})), /synchronous/);
    assert.equal(store.get(K_C, 'a'), undefined);
  });
});

describe('watch', () => {
  test('events in revision order, filtered by kind; unsubscribe', () => {
    const all: WatchEvent[] = [];
    const onlyC: WatchEvent[] = [];
    store.watch(null, (ev) => all.push(ev));
    const off = store.watch(K_C, (ev) => onlyC.push(ev));
    store.create(K_C, 'a', {}, { p: 0 });
    store.create(K_D, 'x', {}, {});
    store.updateStatus(K_C, 'a', () => ({ p: 1 }));
    off();
    store.delete(K_C, 'a');
    assert.deepEqual(
      all.map((e) => [e.type, e.kind, e.revision]),
      [
        ['put', 'c', 1],
        ['put', 'd', 2],
        ['put', 'c', 3],
        ['delete', 'c', 4],
      ],
    );
    assert.deepEqual(
      onlyC.map((e) => e.revision),
      [1, 3],
    );
    assert.deepEqual(all[2]!.resource.status, { p: 1 });
    assert.deepEqual(all[3]!.resource.status, { p: 1 }, 'delete carries the last version');
  });

  test('a throwing listener is logged and does not stop others', () => {
    const log = fakeLog();
    reopen({ log });
    const seen: number[] = [];
    store.watch(null, () => {
      throw new Error('listener bug');
    });
    store.watch(null, (ev) => seen.push(ev.revision));
    store.create(K_C, 'a', {}, {});
    store.create(K_C, 'b', {}, {});
    assert.deepEqual(seen, [1, 2]);
    assert.equal(log.lines.filter((l) => l.level === 'error').length, 2);
  });

  test('writes from inside a listener keep revision order for every listener', () => {
    const a: number[] = [];
    const b: number[] = [];
    store.watch(K_C, (ev) => {
      a.push(ev.revision);
      if (ev.type === 'put' && ev.name === 'x' && ev.resource.generation === 1 && !store.get(K_C, 'y')) store.create(K_C, 'y', {}, {});
    });
    store.watch(K_C, (ev) => b.push(ev.revision));
    store.transaction(() => {
      store.create(K_C, 'x', {}, {});
      store.create(K_C, 'z', {}, {});
    });
    assert.deepEqual(a, [1, 2, 3]);
    assert.deepEqual(b, [1, 2, 3]);
  });

  test('replay from a revision out of the event history', () => {
    store.create(K_C, 'a', {}, {});
    store.create(K_C, 'b', {}, {});
    const mark = store.revision;
    store.updateStatus(K_C, 'a', () => ({ x: 1 }));
    store.create(K_D, 'other', {}, {});
    store.delete(K_C, 'b');
    const got: WatchEvent[] = [];
    store.watch(K_C, (ev) => got.push(ev), mark);
    assert.deepEqual(
      got.map((e) => [e.type, e.name, e.revision]),
      [
        ['put', 'a', 3],
        ['delete', 'b', 5],
      ],
    );
    store.create(K_C, 'later', {}, {});
    assert.deepEqual(got.at(-1)?.revision, 6);
    const none: WatchEvent[] = [];
    store.watch(K_C, (ev) => none.push(ev), store.revision);
    assert.equal(none.length, 0);
  });

  test('a watch from a revision older than the history (or from before a reopen) is refused as too old, never a silent gap', () => {
    reopen({ eventHistory: 16 });
    for (let i = 0; i < 40; i++) store.create(K_C, `r${i}`, {}, {});
    for (let i = 10; i < 40; i++) store.delete(K_C, `r${i}`);
    const got: WatchEvent[] = [];
    assert.throws(() => store.watch(K_C, (ev) => got.push(ev), 5), (err: unknown) => err instanceof WatchExpiredError && isWatchExpired(err) && /too old resource version: 5/.test((err as Error).message));
    assert.equal(store.watcherCount, 0, 'no listener left behind');
    // Within the history: the deletes are replayed.
    const recent = store.revision - 3;
    store.watch(K_C, (ev) => got.push(ev), recent);
    assert.deepEqual(got.map((e) => [e.type, e.name]), [['delete', 'r37'], ['delete', 'r38'], ['delete', 'r39']]);
    const rev = store.revision;
    reopen();
    assert.throws(() => store.watch(K_C, () => {}, rev - 1), WatchExpiredError);
    assert.doesNotThrow(() => store.watch(K_C, () => {}, store.revision), 'from now: nothing to replay');
  });
});

describe('waitFor', () => {
  test('resolves at once when the predicate already holds', async () => {
    store.create(K_C, 'a', { image: 'x' }, { phase: 'running' });
    const r = await store.waitFor(K_C, 'a', (x) => x?.status.phase === 'running', { timeoutMs: 10_000 });
    assert.equal(r?.status.phase, 'running');
    assert.equal(store.watcherCount, 0);
    assert.equal(await store.waitFor(K_C, 'missing', (x) => !x), undefined);
  });

  test('resolves on the first change making it true', async () => {
    store.create(K_C, 'a', { image: 'x' }, { phase: 'new', observedGeneration: 0 });
    const p = store.waitFor(K_C, 'a', (x) => (x?.status.observedGeneration ?? 0) >= 1, { timeoutMs: 10_000 });
    assert.equal(store.watcherCount, 1);
    store.updateStatus(K_C, 'a', (s) => ({ ...s, phase: 'preparing' }));
    setTimeout(() => store.updateStatus(K_C, 'a', (s) => ({ ...s, observedGeneration: 1 })), 5);
    const r = await p;
    assert.equal(r?.status.observedGeneration, 1);
    assert.equal(store.watcherCount, 0);
    const gone = store.waitFor(K_C, 'a', (x) => !x);
    store.delete(K_C, 'a');
    assert.equal(await gone, undefined);
  });

  test('timeout resolves with the current value', async () => {
    store.create(K_C, 'a', { image: 'x' }, { phase: 'new' });
    const r = await store.waitFor(K_C, 'a', (x) => x?.status.phase === 'never', { timeoutMs: 20 });
    assert.equal(r?.status.phase, 'new');
    assert.equal(store.watcherCount, 0);
  });

  test('abort rejects with AbortError and cleans up', async () => {
    store.create(K_C, 'a', {}, {});
    const ac = new AbortController();
    const p = store.waitFor(K_C, 'a', () => false, { signal: ac.signal, timeoutMs: 60_000 });
    assert.equal(store.watcherCount, 1);
    setTimeout(() => ac.abort(), 5);
    await assert.rejects(p, (err: Error) => err.name === 'AbortError');
    assert.equal(store.watcherCount, 0);
    await assert.rejects(
      store.waitFor(K_C, 'a', () => false, { signal: AbortSignal.abort() }),
      (err: Error) => err.name === 'AbortError',
    );
  });
});

describe('persistence', () => {
  test('everything survives close and reopen', () => {
    store.create(K_C, 'a', { image: 'x' }, { phase: 'new' });
    store.create(K_C, 'b', { image: 'y' }, { phase: 'new' });
    store.updateSpec(K_C, 'a', (s) => ({ ...s, n: 3 }));
    store.updateStatus(K_C, 'b', (s) => ({ ...s, phase: 'running' }));
    store.create(K_C, 'tmp', {}, {});
    store.delete(K_C, 'tmp');
    const before = store.list(K_C);
    const rev = store.revision;
    reopen();
    assert.equal(store.revision, rev, 'a trailing delete still counts');
    assert.deepEqual(store.list(K_C), before);
    assert.equal(store.create(K_C, 'next', {}, {}).resourceVersion, rev + 1);
  });

  test('a second process-level open of the same file is refused', () => {
    assert.throws(() => openStore(dbPath), (err) => isCode(err, 'Unavailable'));
  });

  test('writes after close fail with Unavailable', () => {
    store.close();
    assert.throws(() => store.create(K_C, 'a', {}, {}), (err) => isCode(err, 'Unavailable'));
    store = openStore(dbPath);
  });

  test('many writes and lists (smoke; timing is for benchmarks)', () => {
    for (let i = 0; i < 200; i++) store.create(K_C, `id${i}`, { image: 'img' }, { phase: 'new' });
    for (let i = 0; i < 200; i++) store.updateStatus(K_C, `id${i}`, (s) => ({ ...s, phase: 'running' }));
    let n = 0;
    for (let i = 0; i < 500; i++) n += store.list(K_C).length;
    assert.equal(n, 200 * 500);
    assert.equal(store.revision, 400);
  });
});
