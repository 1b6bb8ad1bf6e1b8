// Grouped shims: the group a container joins (drivers/supervisor/shim-groups.ts) and what the
// reaping of lost shims reads to keep one that serves its group (drivers/supervisor/shims.ts).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { shimGroupOf, shimGroupsFromEnv } from '../../../drivers/supervisor/shim-groups.ts';
import { listeningSockets, taskShimAddresses } from '../../../drivers/supervisor/shims.ts';

test('a container\'s group: from its id, per runtime, runc v2 only; 8 groups unless ENGINE_SHIM_GROUPS says (0 or anything else: a shim each)', () => {
  assert.equal(shimGroupsFromEnv({}), 8);
  assert.equal(shimGroupsFromEnv({ ENGINE_SHIM_GROUPS: '' }), 8);
  assert.equal(shimGroupsFromEnv({ ENGINE_SHIM_GROUPS: '8' }), 8);
  for (const bad of ['0', '-1', '1.5', 'x']) assert.equal(shimGroupsFromEnv({ ENGINE_SHIM_GROUPS: bad }), 0, bad);
  const id = '0000000a' + 'f'.repeat(56);
  assert.equal(shimGroupOf(4, id, 'io.containerd.runc.v2'), 'engine-runc-v2-2');
  assert.equal(shimGroupOf(4, id, 'io.containerd.runc.v2'), shimGroupOf(4, id, 'io.containerd.runc.v2'), 'the same after a restart');
  assert.equal(shimGroupOf(1, 'f'.repeat(64), 'io.containerd.runc.v2'), 'engine-runc-v2-0');
  assert.equal(shimGroupOf(0, id, 'io.containerd.runc.v2'), undefined);
  assert.equal(shimGroupOf(4, id, 'io.containerd.runsc.v1'), undefined, 'another shim binary is never grouped');
});

test('the sockets a process listens on, and the shim address each task records', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'engine-shim-groups-'));
  const path = join(dir, 'ttrpc.sock');
  const server = createServer();
  await new Promise<void>((r) => server.listen(path, r));
  try {
    assert.ok((await listeningSockets(process.pid)).includes(path));
    const tasks = join(dir, 'state', 'io.containerd.runtime.v2.task', 'engine');
    for (const [id, a] of [['a', `unix://${path}`], ['b', `unix://${path}`], ['c', 'unix:///run/containerd/s/other']]) {
      mkdirSync(join(tasks, id), { recursive: true });
      writeFileSync(join(tasks, id, 'address'), a);
    }
    mkdirSync(join(tasks, 'no-address'));
    assert.deepEqual(Object.fromEntries(await taskShimAddresses(join(dir, 'state'), 'engine')), { a: path, b: path, c: '/run/containerd/s/other' });
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
