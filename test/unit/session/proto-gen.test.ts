// The generated session clients (drivers/session/gen) are what the .proto files make (run
// hack/gen-session-protos.ts after changing one).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { staleFiles } from '../../../hack/gen-protos.ts';
import { GEN_DIR, generate } from '../../../hack/gen-session-protos.ts';

test('drivers/session/gen is up to date with the .proto files', () => {
  assert.deepEqual(staleFiles(GEN_DIR, generate), [], 'stale: run node_modules/.bin/node hack/gen-session-protos.ts');
});
