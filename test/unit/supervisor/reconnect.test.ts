// A supervisor call made while the client's channel is between connections (the supervisor just
// restarted, the channel still in reconnect backoff) waits for the connection within its deadline
// instead of failing with "No connection established" (issue 13).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type * as grpc from '@grpc/grpc-js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSupervisorClient } from '../../../drivers/supervisor/client.ts';
import { VersionService } from '../../../drivers/supervisor/gen/version.ts';
import { fakeGrpcServer, testLogger } from './helpers.ts';

/** A fake supervisor with only the Version service, on a unix socket. */
function fakeSupervisor(socket: string): Promise<grpc.Server> {
  return fakeGrpcServer(socket, [[VersionService, { version: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { version: 'fake', revision: 'r1' }) }]]);
}

test('a call made while the channel reconnects waits for the supervisor instead of failing', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'engine-reconnect-'));
  const socket = join(dir, 'containerd.sock');
  const client = createSupervisorClient({ address: socket, namespace: 'enginetest', log: testLogger(), timeoutMs: 10_000 });
  let server: grpc.Server | undefined;
  try {
    // No supervisor yet: the channel fails to connect and backs off; this call waits.
    const early = client.version().then(
      (v) => v,
      (err: Error) => err,
    );
    await new Promise((r) => setTimeout(r, 300));
    server = await fakeSupervisor(socket);
    // Made right after the supervisor is back, while the channel is still in backoff.
    assert.deepEqual(await client.version(), { version: 'fake', revision: 'r1' });
    assert.deepEqual(await early, { version: 'fake', revision: 'r1' });
  } finally {
    client.close();
    server?.forceShutdown();
    await rm(dir, { recursive: true, force: true });
  }
});
