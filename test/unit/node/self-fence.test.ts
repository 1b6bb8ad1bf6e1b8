// The self-fencing timer with a fake clock: renewals keep it held; a renewal overdue by TTL/2
// fences (stop now, kill at renewed + TTL - margin); a new lease alone does not release it, the
// tasks read under it do; the deadline is counted from the SEND time of the keep-alive etcd
// answered; a lost lease fences at once; a margin of TTL/2 or more is refused.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkFenceMargin, parseClusterStore } from '../../../lib/cluster/store-url.ts';
import { SelfFence, type FenceClock } from '../../../reconcilers/node/self-fence.ts';

function fakeClock() {
  let t = 1000;
  let timers: Array<{ at: number; fn: () => void; live: boolean }> = [];
  const clock: FenceClock = {
    now: () => t,
    after(ms, fn) {
      const timer = { at: t + Math.max(0, ms), fn, live: true };
      timers.push(timer);
      return () => (timer.live = false);
    },
  };
  const advance = (ms: number) => {
    const end = t + ms;
    for (;;) {
      const next = timers.filter((x) => x.live && x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      t = next.at;
      next.live = false;
      timers = timers.filter((x) => x.live);
      next.fn();
    }
    t = end;
  };
  return { clock, advance, now: () => t };
}

function fence(ttlMs = 6000, marginMs = 1000) {
  const c = fakeClock();
  const calls: string[] = [];
  const f = new SelfFence({
    ttlMs,
    marginMs,
    clock: c.clock,
    onFence: (killAt) => calls.push(`fence kill@${killAt}`),
    onDeadline: () => calls.push(`deadline@${c.now()}`),
    onRelease: () => calls.push(`release@${c.now()}`),
  });
  return { f, c, calls };
}

describe('self-fencing', () => {
  test('renewed in time stays held; overdue fences at renewed + max(TTL/2, TTL - margin - TTL/6) and kills at renewed + TTL - margin', () => {
    const { f, c, calls } = fence();
    assert.equal(f.startsAllowed, false, 'nothing starts before a lease is held');
    f.granted(1000);
    assert.deepEqual(calls, ['release@1000']);
    assert.equal(f.startsAllowed, true);
    let sent = 0;
    for (let i = 0; i < 5; i++) {
      c.advance(2000);
      sent = c.now();
      f.keepaliveSent();
      c.advance(50);
      f.keepaliveAnswered();
    }
    assert.equal(f.state, 'held');
    // The next keep-alives get no answer.
    f.keepaliveSent();
    c.advance(2000);
    f.keepaliveSent();
    // TTL 6 s, margin 1 s: fencing at renewed + 4 s (TTL/6 before the kill).
    c.advance(sent + 4000 - 1 - c.now());
    assert.equal(f.state, 'held', 'not before renewed + TTL - margin - TTL/6');
    c.advance(2);
    assert.equal(f.state, 'fencing');
    assert.deepEqual(calls.slice(1), [`fence kill@${sent + 6000 - 1000}`]);
    assert.equal(f.startsAllowed, false);
    c.advance(sent + 5000 - c.now());
    assert.equal(f.state, 'fenced');
    assert.deepEqual(calls.slice(2), [`deadline@${sent + 5000}`]);
  });

  test('the deadline counts from the send time of the oldest keep-alive answered, not the answer', () => {
    const { f, c, calls } = fence();
    f.granted(1000);
    c.advance(2000);
    f.keepaliveSent(); // at 3000
    c.advance(800); // a slow answer, at 3800
    f.keepaliveAnswered();
    c.advance(10_000);
    // Fencing at 3000 + 4000, the kill at 3000 + TTL - margin (from the answer's time: 8800).
    assert.deepEqual(calls, ['release@1000', `fence kill@${3000 + 5000}`, `deadline@8000`]);
  });

  test('a new lease does not release a fenced node; its tasks read under that lease do', () => {
    const { f, c, calls } = fence();
    f.granted(1000);
    c.advance(20_000);
    assert.equal(f.state, 'fenced');
    f.tasksRead();
    assert.equal(f.state, 'fenced', 'tasks read without a new lease change nothing');
    f.granted(c.now());
    assert.equal(f.state, 'fenced', 'a lease alone does not release');
    assert.equal(f.startsAllowed, false);
    f.tasksRead();
    assert.equal(f.state, 'held');
    assert.equal(calls.at(-1), `release@${c.now()}`);
    // Held again: a renewal keeps it so.
    c.advance(2000);
    f.keepaliveSent();
    f.keepaliveAnswered();
    c.advance(2500);
    assert.equal(f.state, 'held');
  });

  test('a lost lease fences with the deadline now', () => {
    const { f, c, calls } = fence();
    f.granted(1000);
    c.advance(500);
    f.lost();
    assert.equal(calls[1], 'fence kill@1500');
    c.advance(0);
    assert.equal(f.state, 'fenced');
  });

  test('a renewal sent after the fence began (the lease never expired) lets the tasks read end it', () => {
    const { f, c } = fence();
    f.granted(1000);
    c.advance(4500);
    assert.equal(f.state, 'fencing');
    f.keepaliveSent();
    c.advance(10);
    f.keepaliveAnswered();
    assert.equal(f.state, 'fencing', 'the renewal alone does not end it');
    f.tasksRead();
    assert.equal(f.state, 'held');
  });

  test('a margin of TTL/2 or more is refused with both values', () => {
    assert.equal(checkFenceMargin(10, 4), undefined);
    assert.match(checkFenceMargin(10, 5)!, /fence margin \(5s\) must be less than half the lease TTL \(discovery.ttl=10s\)/);
    assert.match(checkFenceMargin(3, -1)!, /expected seconds, at least 0/);
    assert.equal(parseClusterStore('etcd://h:1').fenceMarginSeconds, 2);
    assert.equal(parseClusterStore('etcd://h:1', { 'discovery.ttl': '5' }).fenceMarginSeconds, 1);
    assert.equal(parseClusterStore('etcd://h:1', { 'discovery.ttl': '5', 'fence.margin': '0.5s' }).fenceMarginSeconds, 0.5);
    assert.throws(() => parseClusterStore('etcd://h:1', { 'discovery.ttl': '4', 'fence.margin': '2' }), /fence.margin=2: the fence margin \(2s\) must be less than half the lease TTL \(discovery.ttl=4s\)/);
    assert.throws(() => parseClusterStore('etcd://h:1', { 'fence.margin': 'x' }), /fence.margin=x: expected seconds/);
  });
});
