// The work queue's contract, on a clock the tests move: no test waits on real time.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WorkQueue, type Clock } from '../../../controllers/work-queue.ts';

/** Lets pending promise callbacks and I/O callbacks run (no timers involved). */
const tick = () => new Promise<void>((r) => setImmediate(r));

/** A clock that only moves when advance() says so, running the delayed calls that come due in order. */
class FakeClock implements Clock {
  private t = 1_000_000;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.t;
  }
  schedule(fn: () => void, ms: number): number {
    this.timers.set(++this.seq, { at: this.t + ms, fn });
    return this.seq;
  }
  clear(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
    }
    this.t = end;
  }
}

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
    await tick();
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
        await tick();
        counts.set(k, (counts.get(k) ?? 0) + 1);
        active.delete(k);
        q.done(k);
      }
    });
    for (let round = 0; round < 5; round++) {
      for (const k of ['a', 'b', 'c', 'd']) q.add(k);
      await tick();
    }
    await q.shutdown(true);
    await Promise.all(workers);
    assert.equal(overlaps, 0);
    assert.ok(maxParallel > 1, 'different keys ran concurrently');
    for (const k of ['a', 'b', 'c', 'd']) assert.ok((counts.get(k) ?? 0) >= 1);
  });

  test('addAfter delays, the earliest delay wins, add() overrides a delay', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue<string>({ clock });
    q.addAfter('a', 30);
    q.addAfter('a', 5);
    q.addAfter('a', 100);
    assert.equal(q.length, 0);
    clock.advance(4);
    assert.equal(q.length, 0, 'not before its delay');
    clock.advance(1);
    assert.equal(q.length, 1, 'the earliest delay won');
    assert.equal(await q.get(), 'a');
    q.done('a');
    clock.advance(200);
    assert.equal(q.length, 0, 'the later delays were dropped');
    q.addAfter('b', 10_000);
    q.add('b');
    assert.equal(q.length, 1);
    q.done((await q.get())!);
    clock.advance(10_000);
    assert.equal(q.length, 0, 'the add overrode the delay');
    await q.shutdown(false);
  });

  test('rate-limited retries back off exponentially per key, capped; forget resets', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue<string>({ baseDelayMs: 5, maxDelayMs: 40, clock });
    // 5, 10, 20, 40, 40 (the cap).
    for (const delay of [5, 10, 20, 40, 40]) {
      q.addRateLimited('a');
      clock.advance(delay - 1);
      assert.equal(q.length, 0, `not before ${delay} ms`);
      clock.advance(1);
      assert.equal(q.length, 1, `after ${delay} ms`);
      q.done((await q.get())!);
    }
    assert.equal(q.numRequeues('a'), 5);
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
    await tick();
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
    await tick();
    assert.equal(closed, false);
    q.done(a);
    await done;
    assert.equal(q.length, 0);
  });
});
