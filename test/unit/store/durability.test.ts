// An acknowledged write survives SIGKILL of the writing process: a child writes continuously
// and prints each name once its write returned; we kill it mid-stream and reopen.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { openStore } from '../../../store/store.ts';
import { testKind } from './test-kind.ts';

const K_C = testKind('c');

test('acknowledged writes survive kill -9', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'engine-store-kill-'));
  const dbPath = join(dir, 'engine.db');
  const storeUrl = pathToFileURL(join(import.meta.dirname, '../../../store/store.ts')).href;
  const code = `
    import { openStore } from ${JSON.stringify(storeUrl)};
    const s = openStore(${JSON.stringify(dbPath)});
    const K_C = { name: 'c' };
    let i = 0;
    const tick = () => {
      for (let j = 0; j < 20; j++, i++) {
        const name = 'r' + i;
        s.create(K_C, name, { i }, { phase: 'new' });
        s.updateStatus(K_C, name, (st) => ({ ...st, phase: 'acked' }));
        process.stdout.write(name + '\\n');
      }
      setImmediate(tick);
    };
    tick();
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
  const acked: string[] = [];
  let buf = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, sig) => resolve(sig)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop()!;
      acked.push(...lines);
      if (acked.length >= 500) {
        child.kill('SIGKILL');
        resolve();
      }
    });
    child.on('exit', () => reject(new Error(`child exited early: ${stderr}`)));
  });
  assert.equal(await exited, 'SIGKILL');

  const store = openStore(dbPath);
  try {
    for (const name of acked) {
      const r = store.get(K_C, name);
      assert.ok(r, `${name} was acknowledged but is missing after kill -9`);
      assert.equal(r.status.phase, 'acked');
    }
    assert.ok(store.revision >= acked.length * 2);
    // The store is fully usable after recovery.
    store.create(K_C, 'after-crash', {}, {});
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
