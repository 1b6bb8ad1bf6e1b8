import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { isStorageFull, StoreReserve } from '../../../store/reserve.ts';
import { openStore } from '../../../store/store.ts';

test('the reserve is a file of its size beside the database; released once, then it is gone until refilled', () => {
  const dir = mkdtempSync(join(tmpdir(), 'reserve-'));
  const r = new StoreReserve(join(dir, 'db.reserve'), 64 * 1024);
  try {
    assert.equal(statSync(join(dir, 'db.reserve')).size, 64 * 1024);
    assert.equal(r.release(), true);
    assert.equal(existsSync(join(dir, 'db.reserve')), false);
    assert.equal(r.release(), false, 'nothing left to release');
  } finally {
    r.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a store opened with reserveBytes keeps its reserve and closes its timer', () => {
  const dir = mkdtempSync(join(tmpdir(), 'reserve-'));
  const store = openStore(join(dir, 'engine.db'), { reserveBytes: 128 * 1024 });
  try {
    assert.equal(statSync(join(dir, 'engine.db.reserve')).size, 128 * 1024);
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('disk-full errors are told apart from the others', () => {
  assert.equal(isStorageFull(new Error('database or disk is full')), true);
  assert.equal(isStorageFull(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })), true);
  assert.equal(isStorageFull(new Error('SQLITE_CONSTRAINT: UNIQUE constraint failed')), false);
});
