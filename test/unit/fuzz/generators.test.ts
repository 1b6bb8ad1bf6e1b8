// The fuzzer's cases are reproducible from a seed and cover every kind of bad input.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { describeCase, generateCase, newContext, prng } from '../../../hack/fuzz.ts';

function run(seed: number, n: number): string[] {
  const rng = prng(seed);
  const ctx = newContext('img', seed);
  ctx.prefix = 'p';
  return Array.from({ length: n }, () => describeCase(generateCase(rng, ctx)));
}

describe('fuzz generators', () => {
  test('a seed gives the same cases', () => {
    assert.deepEqual(run(7, 300), run(7, 300));
    assert.notDeepEqual(run(7, 50), run(8, 50));
  });

  test('generation never throws, whatever the seed', () => {
    for (let seed = 1; seed <= 30; seed++) run(seed, 200);
  });

  test('2000 cases cover raw, oversized, deeply nested and wrong-typed input', () => {
    const rng = prng(13);
    const ctx = newContext('img', 13);
    const labels = new Set<string>();
    let maxBody = 0;
    let deep = false;
    for (let i = 0; i < 2000; i++) {
      const c = generateCase(rng, ctx);
      labels.add(c.label.split(':')[0]!);
      const b = c.kind === 'raw' ? c.bytes : c.body;
      if (b) maxBody = Math.max(maxBody, b.length);
      if (b && b.subarray(0, 20000).toString().startsWith('{"a":{"a":{"a":'.repeat(100))) deep = true;
    }
    for (const l of ['create-wrong-type', 'create-bad-json', 'create-oversized', 'raw-random-bytes', 'raw-truncated-body', 'container-update', 'network-create', 'image-create', 'events', 'long-path', 'odd-method']) {
      assert.ok(labels.has(l), `missing ${l}`);
    }
    assert.ok(maxBody >= 1024 * 1024, 'an oversized body');
    assert.ok(deep, 'a deeply nested body');
  });
});
