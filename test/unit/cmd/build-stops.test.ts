// A run never compiles what did not typecheck (issue (16 of 21), 3): hack/build.sh, on a copy of the
// sources with a type error, says it compiles, prints the error, fails, and leaves no build behind
// (bin/engined then refuses to start instead of running something else).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

const REPO = resolve(import.meta.dirname, '..', '..', '..');
const SOURCES = ['cmd', 'api', 'admission', 'store', 'controllers', 'reconcilers', 'drivers', 'config', 'lib', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];

test('a type error stops hack/build.sh with its message; nothing is built', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'engine-build-'));
  try {
    for (const s of SOURCES) cpSync(join(REPO, s), join(dir, s), { recursive: true });
    mkdirSync(join(dir, 'hack'));
    for (const f of ['build.sh', 'bundle-entry.mjs']) cpSync(join(REPO, 'hack', f), join(dir, 'hack', f));
    symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, 'lib', 'type-error-here.ts'), "export const n: number = 'not a number';\n");
    const r = spawnSync('bash', [join(dir, 'hack', 'build.sh')], { encoding: 'utf8', timeout: 110_000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /build\.sh: the sources are newer than the last build: compiling the daemon into build\//);
    assert.match(r.stderr, /type-error-here\.ts.*Type 'string' is not assignable to type 'number'/);
    assert.match(r.stderr, /build\.sh: compile failed/);
    assert.equal(existsSync(join(dir, 'build')), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
