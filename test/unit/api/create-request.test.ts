// Container create checks added with issue 22/13: integer HostConfig fields as Go decodes them,
// the IPC/PID/cgroup namespace modes and their daemon defaults, Init's type, blkio weights the
// kernel cannot apply.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeCreate, type CreateDefaults } from '../../../api/containers/create-request.ts';

const defaults: CreateDefaults = {
  runtime: 'stdrt',
  hasRuntime: () => true,
  shmSize: 64 * 1024 * 1024,
  logConfig: { Type: 'json-file', Config: {} },
  validateLogConfig: () => {},
  validateBind: () => {},
};
const image = { config: { Cmd: ['sh'] } } as never;
const create = (hostConfig: Record<string, unknown>, d: Partial<CreateDefaults> = {}) => normalizeCreate({ Image: 'img', HostConfig: hostConfig }, image, { ...defaults, ...d });

test('integer fields: a fraction, a string or an object is refused with the decoder message', () => {
  assert.throws(() => create({ CpuPeriod: 1.5 }), /cannot unmarshal number 1.5 into Go struct field HostConfig.HostConfig.CpuPeriod of type int64/);
  assert.throws(() => create({ MemoryReservation: 'ro' }), /cannot unmarshal string into Go struct field HostConfig.HostConfig.MemoryReservation/);
  assert.throws(() => create({ PidsLimit: {} }), /cannot unmarshal object/);
  assert.equal((create({ Memory: 64 * 1024 * 1024, PidsLimit: null }).hostConfig as unknown as { Memory: number }).Memory, 64 * 1024 * 1024);
});

test('namespace modes: defaults from the daemon, the reference values only', () => {
  const h = create({}).hostConfig as unknown as Record<string, unknown>;
  assert.deepEqual([h.IpcMode, h.CgroupnsMode, h.PidMode], ['private', 'private', '']);
  const d = create({}, { ipcMode: 'shareable', cgroupnsMode: 'host' }).hostConfig as unknown as Record<string, unknown>;
  assert.deepEqual([d.IpcMode, d.CgroupnsMode], ['shareable', 'host']);
  const own = create({ IpcMode: 'container:abc', PidMode: 'host', CgroupnsMode: 'private' }, { cgroupnsMode: 'host' }).hostConfig as unknown as Record<string, unknown>;
  assert.deepEqual([own.IpcMode, own.PidMode, own.CgroupnsMode], ['container:abc', 'host', 'private']);
  assert.throws(() => create({ IpcMode: 'sideways' }), /invalid IPC mode: sideways/);
  assert.throws(() => create({ PidMode: 'container:' }), /invalid PID mode/);
  assert.throws(() => create({ CgroupnsMode: 'shared' }), /invalid cgroup namespace mode: shared/);
  assert.throws(() => create({ Init: 'yes' }), /invalid Init: expected a boolean/);
});

test('blkio weights the kernel cannot apply are discarded with the reference warning', () => {
  const n = create({ BlkioWeight: 300, BlkioWeightDevice: [{ Path: '/dev/null', Weight: 10 }] }, { blkioWeight: false });
  assert.equal((n.hostConfig as unknown as { BlkioWeight: number }).BlkioWeight, 0);
  assert.deepEqual(n.warnings, [
    'Your kernel does not support Block I/O weight or the cgroup is not mounted. Weight discarded.',
    'Your kernel does not support Block I/O weight_device or the cgroup is not mounted. Weight-device discarded.',
  ]);
  assert.deepEqual(create({ BlkioWeight: 300 }, { blkioWeight: true }).warnings, []);
});
