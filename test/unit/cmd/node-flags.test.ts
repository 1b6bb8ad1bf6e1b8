// The launcher passes V8's own flags only where the running Node knows them (issue (16 of 21), 4):
// hack/node-flags.sh checks each against `node --v8-options`; an unknown one is left out with a
// warning instead of making Node refuse to start.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

const REPO = resolve(import.meta.dirname, '..', '..', '..');

test('known V8 flags pass (--no-x and --x=v forms), a made-up one is left out with a warning; Node starts with the result', () => {
  const cache = mkdtempSync(join(tmpdir(), 'engine-flags-'));
  try {
    const run = () => spawnSync('bash', [join(REPO, 'hack', 'node-flags.sh'), process.execPath, '--no-sparkplug', '--incremental-marking-soft-trigger=70', '--made-up-flag-xyz=3'], { encoding: 'utf8', env: { ...process.env, ENGINE_FLAGS_CACHE: cache } });
    for (const r of [run(), run()]) {
      // The second run reads the kept list instead of asking Node again.
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(r.stdout.trim().split('\n'), ['--no-sparkplug', '--incremental-marking-soft-trigger=70']);
      assert.match(r.stderr, /has no V8 flag --made-up-flag-xyz: --made-up-flag-xyz=3 left out/);
    }
    const flags = run().stdout.trim().split('\n');
    const started = spawnSync(process.execPath, [...flags, '-e', 'process.stdout.write("ok")'], { encoding: 'utf8' });
    assert.equal(started.stdout, 'ok', started.stderr);
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});
