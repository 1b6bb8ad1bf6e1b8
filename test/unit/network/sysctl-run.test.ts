import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ensureBridge } from '../../../drivers/network/bridge.ts';
import { run } from '../../../drivers/network/run.ts';
import { enableIpForward } from '../../../drivers/network/sysctl.ts';
import { isCode } from '../../../lib/errors.ts';
import { quiet, suffix } from './helpers.ts';

test('enableIpForward turns forwarding on once and reports whether it changed', async () => {
  // A stand-in file: the host's own switch is not ours to flip in a unit test.
  const dir = await mkdtemp(join(tmpdir(), 'entest-sysctl-'));
  const path = join(dir, 'ip_forward');
  try {
    await writeFile(path, '0\n');
    assert.equal(await enableIpForward(path), true);
    assert.equal((await readFile(path, 'utf8')).trim(), '1');
    assert.equal(await enableIpForward(path), false);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('run maps tool failures to error classes', async () => {
  await assert.rejects(run('ip', ['link', 'show', 'dev', `entnope${suffix()}`]), (e) => isCode(e, 'NotFound'));
  await assert.rejects(run(`entest-no-such-tool-${suffix()}`, []), (e) => isCode(e, 'Unavailable'));
  const ac = new AbortController();
  const p = run('sleep', ['5'], { signal: ac.signal });
  ac.abort();
  await assert.rejects(p, (e) => isCode(e, 'Canceled'));
  await assert.rejects(run('sleep', ['5'], { timeoutMs: 50 }), (e) => isCode(e, 'Unavailable'));
  assert.equal(await run('cat', [], { input: 'hello\n' }), 'hello');
});

test('concurrent ensureBridge calls both succeed', async () => {
  const name = `entest${suffix()}`;
  try {
    const cfg = { name, address: '10.213.10.1/24', mtu: 1500 };
    const [a, b] = await Promise.all([ensureBridge(cfg), ensureBridge(cfg)]);
    assert.ok(a.created || b.created);
  } finally {
    await quiet('ip', ['link', 'del', name]);
  }
});
