// A disk full under the daemon: the error reads as the reference's, and a download is not retried.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openSync, closeSync, writeSync } from 'node:fs';
import { toHttpError } from '../../../api/errors.ts';
import { isRetryable } from '../../../drivers/distribution/client.ts';
import { isSystemError, systemErrorMessage } from '../../../lib/errors.ts';

function enospc(): NodeJS.ErrnoException {
  const fd = openSync('/dev/full', 'w');
  try {
    writeSync(fd, 'x');
  } catch (err) {
    return err as NodeJS.ErrnoException;
  } finally {
    closeSync(fd);
  }
  throw new Error('/dev/full took a write');
}

test('ENOSPC is worded as the reference words it, with the file when known', () => {
  const err = enospc();
  assert.ok(isSystemError(err));
  assert.equal(systemErrorMessage(err), 'write: no space left on device');
  err.path = '/var/lib/engine/tmp/engine-pull-0123';
  assert.equal(systemErrorMessage(err), 'write /var/lib/engine/tmp/engine-pull-0123: no space left on device');
  assert.deepEqual(toHttpError(err), { status: 500, message: 'write /var/lib/engine/tmp/engine-pull-0123: no space left on device' });
  assert.equal(isSystemError(new Error('plain')), false);
});

test('a download that ran out of disk is not retried; a dropped connection is', () => {
  assert.equal(isRetryable(enospc()), false);
  assert.equal(isRetryable(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })), true);
});
