import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { WorkQueue } from '../../../controllers/work-queue.ts';

async function drainNow(q: WorkQueue<string>): Promise<string[]> {
  const out: string[] = [];
  while (q.length > 0) {
    const k = (await q.get())!;
    out.push(k);
    q.done(k);
  }
  return out;
}

describe('WorkQueue', () => {
  test('dedups waiting keys, keeps FIFO order', async () => {
    const q = new WorkQueue<string>();
    for (const k of ['a', 'b', 'a', 'c', 'b', 'a']) q.add(k);
    assert.equal(q.length, 3);
    assert.deepEqual(await drainNow(q), ['a', 'b', 'c']);
    await q.shutdown(false);
  });

  test('never hands one key to two workers; re-queues a key added while processing', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    const first = await q.get();
    assert.equal(first, 'a');
    q.add('a');
    q.add('a');
    assert.equal(q.length, 0, 'a dirty key in flight is not handed out again');
    let second: string | undefined;
    const p = q.get().then((k) => (second = k));
    await sleep(5);
    assert.equal(second, undefined);
    q.done('a');
    await p;
    assert.equal(second, 'a', 'comes back exactly once after done');
    q.done('a');
    assert.equal(q.length, 0);
    await q.shutdown(false);
  });

  test('concurrent workers: different keys in parallel, the same key never', async () => {
    const q = new WorkQueue<string>();
    const active = new Set<string>();
    let maxParallel = 0;
    let overlaps = 0;
    const counts = new Map<string, number>();
    const workers = Array.from({ length: 4 }, async () => {
      for (;;) {
        const k = await q.get();
        if (k === undefined) return;
        if (active.has(k)) overlaps++;
        active.add(k);
        maxParallel = Math.max(maxParallel, active.size);
        await sleep(2);
        counts.set(k, (counts.get(k) ?? 0) + 1);
        active.delete(k);
        q.done(k);
      }
    });
    for (let round = 0; round < 5; round++) {
      for (const k of ['a', 'b', 'c', 'd']) q.add(k);
      await sleep(1);
    }
    await sleep(40);
    await q.shutdown(true);
    await Promise.all(workers);
    assert.equal(overlaps, 0);
    assert.ok(maxParallel > 1, 'different keys ran concurrently');
    for (const k of ['a', 'b', 'c', 'd']) assert.ok((counts.get(k) ?? 0) >= 1);
  });

  test('addAfter delays, the earliest delay wins, add() overrides a delay', async () => {
    const q = new WorkQueue<string>();
    q.addAfter('a', 30);
    q.addAfter('a', 5);
    q.addAfter('a', 100);
    assert.equal(q.length, 0);
    const t0 = Date.now();
    assert.equal(await q.get(), 'a');
    const waited = Date.now() - t0;
    assert.ok(waited < 80, `expected the 5 ms delay, waited ${waited}`);
    q.done('a');
    q.addAfter('b', 10_000);
    q.add('b');
    assert.equal(q.length, 1);
    q.done((await q.get())!);
    await sleep(10);
    assert.equal(q.length, 0);
    await q.shutdown(false);
  });

  test('rate-limited retries back off exponentially per key, capped; forget resets', async () => {
    const q = new WorkQueue<string>({ baseDelayMs: 5, maxDelayMs: 40 });
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      q.addRateLimited('a');
      const k = (await q.get())!;
      delays.push(performance.now() - t0);
      q.done(k);
    }
    assert.equal(q.numRequeues('a'), 5);
    // 5, 10, 20, 40, 40 (cap): timers are at-least.
    const expected = [5, 10, 20, 40, 40];
    delays.forEach((d, i) => assert.ok(d >= expected[i]! - 1, `retry ${i} waited ${d.toFixed(1)} < ${expected[i]}`));
    assert.ok(delays[4]! < 200, 'capped');
    assert.equal(q.numRequeues('other'), 0, 'per key');
    q.forget('a');
    assert.equal(q.numRequeues('a'), 0);
    await q.shutdown(false);
  });

  test('shutdown(true) hands out waiting keys and waits for in-flight ones', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    q.add('b');
    const a = (await q.get())!;
    q.add('a'); // dirty while processing: still processed during drain
    let closed = false;
    const done = q.shutdown(true).then(() => (closed = true));
    q.add('late');
    q.addAfter('delayed', 1);
    assert.equal(await q.get(), 'b');
    q.done('b');
    await sleep(5);
    assert.equal(closed, false, 'a is still in flight');
    q.done(a);
    assert.equal(await q.get(), 'a');
    q.done('a');
    await done;
    assert.equal(await q.get(), undefined);
    assert.equal(q.length, 0);
  });

  test('shutdown(false) drops waiting keys, releases getters, waits for in-flight', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    q.add('b');
    const a = (await q.get())!;
    q.add('a');
    let closed = false;
    const done = q.shutdown(false).then(() => (closed = true));
    assert.equal(await q.get(), undefined);
    await sleep(5);
    assert.equal(closed, false);
    q.done(a);
    await done;
    assert.equal(q.length, 0);
  });
});
