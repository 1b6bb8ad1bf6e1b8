import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startMemoryReclaimer } from '../../../drivers/sys/memory-reclaim.ts';

const MiB = 1024 * 1024;

function harness(opts: { quietMs?: number; minGrowthBytes?: number } = {}) {
  const s = { rss: 100 * MiB, trimTo: 100 * MiB, util: 0, collects: 0, trims: 0, reclaims: [] as [number, number][] };
  const r = startMemoryReclaimer({
    intervalMs: 1000,
    quietMs: opts.quietMs ?? 2000,
    minGrowthBytes: opts.minGrowthBytes ?? 8 * MiB,
    rss: () => s.rss,
    utilisation: () => s.util,
    collect: () => {
      s.collects++;
    },
    trim: () => {
      s.trims++;
      s.rss = Math.min(s.rss, s.trimTo);
    },
    onReclaim: (before, after) => s.reclaims.push([before / MiB, after / MiB]),
  });
  return { s, r };
}

test('a quiet daemon that grew is reclaimed once, after the quiet period', () => {
  const { s, r } = harness();
  try {
    r.tick();
    r.tick();
    assert.equal(s.trims, 1, "start-up's leftovers reclaimed once");
    assert.equal(s.collects, 1);
    s.rss = 150 * MiB;
    s.util = 0.9;
    r.tick();
    r.tick();
    assert.equal(s.trims, 1, 'never while busy');
    s.util = 0.01;
    r.tick();
    assert.equal(s.trims, 1, 'not before the quiet period');
    r.tick();
    assert.deepEqual(s.reclaims, [[100, 100], [150, 100]]);
    assert.equal(s.collects, 2);
    for (let i = 0; i < 5; i++) r.tick();
    assert.equal(s.trims, 2, 'nothing grew since: no second reclaim');
  } finally {
    r.stop();
  }
});

test('the first quiet period after start-up reclaims once and sets the floor; then a busy sample restarts the quiet period, and small growth is left alone', () => {
  const { s, r } = harness();
  try {
    s.rss = 134 * MiB;
    s.trimTo = 130 * MiB;
    r.tick();
    r.tick();
    assert.equal(s.trims, 1, "start-up's garbage and freed malloc memory are given back");
    assert.equal(s.collects, 1);
    assert.equal(s.rss, 130 * MiB);
    s.trimTo = 100 * MiB;
    s.rss = 132 * MiB;
    r.tick();
    assert.equal(s.trims, 1, 'what start-up left is the floor');
    s.rss = 140 * MiB;
    r.tick();
    assert.equal(s.trims, 2, '10 MiB above the floor');
    assert.equal(s.collects, 2);
    s.rss = 104 * MiB;
    for (let i = 0; i < 4; i++) r.tick();
    assert.equal(s.trims, 2, 'below the growth threshold');
    s.util = 0.5;
    s.rss = 120 * MiB;
    r.tick();
    s.util = 0;
    r.tick();
    assert.equal(s.trims, 2, 'quiet period restarted by the busy sample');
    r.tick();
    assert.equal(s.trims, 3);
  } finally {
    r.stop();
  }
});

test('growth counts from the lowest resident set seen, and a failing trim does not throw', () => {
  const s = { rss: 200 * MiB };
  let calls = 0;
  const r = startMemoryReclaimer({
    intervalMs: 1000,
    quietMs: 1000,
    rss: () => s.rss,
    utilisation: () => 0,
    collect: null,
    trim: () => {
      calls++;
      throw new Error('no malloc_trim');
    },
  });
  try {
    r.tick();
    assert.equal(calls, 1, 'the floor is set after the start-up reclaim, whose failing trim did not throw');
    s.rss = 150 * MiB;
    r.tick();
    assert.equal(calls, 1, 'shrank by itself: nothing to do');
    s.rss = 160 * MiB;
    r.tick();
    assert.equal(calls, 2, '10 MiB above the low point, and the failing trim did not throw');
  } finally {
    r.stop();
  }
});
