// The generated supervisor types (drivers/supervisor/gen) are what the .proto files make (run
// hack/gen-protos.ts after changing one), and they round-trip the messages the daemon sends and reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GEN_DIR, generate, staleFiles } from '../../../hack/gen-protos.ts';
import { Envelope } from '../../../drivers/supervisor/gen/events.ts';
import { TaskExit } from '../../../drivers/supervisor/gen/task-events.ts';
import { GetResponse } from '../../../drivers/supervisor/gen/tasks.ts';
import { toDate } from '../../../drivers/supervisor/rpc.ts';

test('drivers/supervisor/gen is up to date with the .proto files', () => {
  assert.deepEqual(staleFiles(GEN_DIR, generate), [], 'stale: run node_modules/.bin/node hack/gen-protos.ts');
});

test('messages round-trip: nested, Any, Timestamp (Go zero time), enums by name', () => {
  const exit = TaskExit.encode(TaskExit.fromPartial({ container_id: 'c1', id: 'c1', pid: 42, exit_status: 137, exited_at: { seconds: 1_700_000_000, nanos: 5_000_000 } })).finish();
  const env = Envelope.decode(Envelope.encode(Envelope.fromPartial({ namespace: 'ns', topic: '/tasks/exit', event: { type_url: 'containerd.events.TaskExit', value: Buffer.from(exit) } })).finish());
  assert.equal(env.topic, '/tasks/exit');
  assert.equal(env.event?.type_url, 'containerd.events.TaskExit');
  const d = TaskExit.decode(env.event!.value);
  assert.equal(d.exit_status, 137);
  assert.equal(d.exited_at?.seconds, 1_700_000_000);
  assert.equal(toDate(d.exited_at)?.getTime(), 1_700_000_000_005);
  const zero = TaskExit.decode(TaskExit.encode(TaskExit.fromPartial({ exited_at: { seconds: -62135596800, nanos: 0 } })).finish());
  assert.equal(zero.exited_at?.seconds, -62135596800);
  assert.equal(toDate(zero.exited_at), null);
  const st = GetResponse.decode(GetResponse.encode(GetResponse.fromPartial({ process: { pid: 7, status: 'RUNNING' } })).finish());
  assert.equal(st.process?.status, 'RUNNING');
});
