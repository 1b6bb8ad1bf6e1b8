// The descriptor the daemon loads is the one the .proto files make (run hack/gen-protos.ts after
// changing one), and it round-trips the messages the daemon sends and reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { descriptorText, PROTO_DIR } from '../../../hack/gen-protos.ts';
import { decode, decodeAny, encode, toDate } from '../../../drivers/supervisor/proto.ts';

test('protos/descriptor.json is up to date with the .proto files', () => {
  assert.equal(readFileSync(join(PROTO_DIR, 'descriptor.json'), 'utf8'), descriptorText(), 'stale: run node_modules/.bin/node hack/gen-protos.ts');
});

test('messages round-trip through the descriptor: nested, Any, Timestamp (Go zero time), enums', () => {
  const exit = encode('containerd.events.TaskExit', { container_id: 'c1', id: 'c1', pid: 42, exit_status: 137, exited_at: { seconds: '1700000000', nanos: 5_000_000 } });
  const env = decode('containerd.services.events.v1.Envelope', encode('containerd.services.events.v1.Envelope', { namespace: 'ns', topic: '/tasks/exit', event: { type_url: 'containerd.events.TaskExit', value: exit } }));
  assert.equal(env.topic, '/tasks/exit');
  const d = decodeAny(env.event);
  assert.equal(d?.type, 'containerd.events.TaskExit');
  assert.equal(d?.value.exit_status, 137);
  assert.equal(d?.value.exited_at.seconds, '1700000000');
  assert.equal(toDate(d?.value.exited_at)?.getTime(), 1_700_000_000_005);
  const zero = decode('containerd.events.TaskExit', encode('containerd.events.TaskExit', { exited_at: { seconds: '-62135596800', nanos: 0 } }));
  assert.equal(zero.exited_at.seconds, '-62135596800');
  assert.equal(toDate(zero.exited_at), null);
  const st = decode('containerd.services.tasks.v1.GetResponse', encode('containerd.services.tasks.v1.GetResponse', { process: { pid: 7, status: 'RUNNING' } }));
  assert.equal(st.process.status, 'RUNNING');
});
