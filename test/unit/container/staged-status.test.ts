// Staged container status: written once flushed; a write refused by a full disk stays staged for
// the next flush, any other failure drops it (it would fail the same way again).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StagedStatus } from '../../../reconcilers/container/staged-status.ts';
import type { ReconcilerStore } from '../../../reconcilers/store-like.ts';
import type { ContainerStatus } from '../../../store/kinds/container.ts';

function fakeStore(fail: () => Error | null) {
  let status = { exitCode: 0 } as ContainerStatus;
  const store = {
    get: () => ({ status }),
    updateStatus: (_k: string, _id: string, fn: (s: ContainerStatus) => ContainerStatus) => {
      const err = fail();
      if (err) throw err;
      status = fn(status);
    },
  } as unknown as ReconcilerStore;
  return { store, status: () => status };
}

test('a write refused by a full disk stays staged; another failure is dropped', () => {
  let err: Error | null = new Error('database or disk is full');
  const f = fakeStore(() => err);
  const s = new StagedStatus(f.store);
  s.stage('c', (x) => ({ ...x, exitCode: 3 }));
  assert.throws(() => s.flush('c'), /disk is full/);
  err = null;
  s.flush('c');
  assert.equal(f.status().exitCode, 3);

  err = new Error('stored container c does not match its schema');
  s.stage('c', (x) => ({ ...x, exitCode: 4 }));
  assert.throws(() => s.flush('c'), /schema/);
  err = null;
  s.flush('c');
  assert.equal(f.status().exitCode, 3, 'the refused change is not written later');
});
