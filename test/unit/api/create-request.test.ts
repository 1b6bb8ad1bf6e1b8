// Container create checks added with issue 22/13: integer HostConfig fields as Go decodes them,
// the IPC/PID/cgroup namespace modes and their daemon defaults, Init's type, blkio weights the
// kernel cannot apply.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeCreate, type CreateDefaults } from '../../../admission/containers/create-request.ts';
import { parseCreateBody } from '../../../admission/containers/create-schema.ts';

const defaults: CreateDefaults = {
  runtime: 'stdrt',
  hasRuntime: () => true,
  shmSize: 64 * 1024 * 1024,
  logConfig: { Type: 'json-file', Config: {} },
  validateLogConfig: () => {},
  validateBind: () => {},
};
const image = { config: { Cmd: ['sh'] } } as never;
const create = (hostConfig: Record<string, unknown>, d: Partial<CreateDefaults> = {}) => normalizeCreate(parseCreateBody({ Image: 'img', HostConfig: hostConfig }), image, { ...defaults, ...d });

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
  assert.throws(() => create({ Init: 'yes' }), /json: cannot unmarshal string into Go struct field HostConfig.HostConfig.Init of type bool/);
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

test("resource values the reference refuses at create: memory, swap, swappiness, reservation, CPUs, cfs, cpusets, blkio, oom score", () => {
  const MB = 1024 * 1024;
  const host = { hostCpus: { cpus: '0-1', mems: '0' } };
  const refused: Array<[Record<string, unknown>, RegExp]> = [
    [{ Memory: 4 * MB }, /: Minimum memory limit allowed is 6MB$/],
    [{ Memory: 64 * MB, MemorySwap: 32 * MB }, /Minimum memoryswap limit should be larger than memory limit/],
    [{ MemorySwap: 64 * MB }, /You should always set the Memory limit when using Memoryswap limit/],
    [{ MemorySwap: -2147483648 }, /Invalid value -2147483648 for memory swap limit/],
    [{ MemorySwappiness: 101 }, /valid memory swappiness range is 0-100/],
    [{ MemoryReservation: MB }, /Minimum memory reservation allowed is 6MB/],
    [{ Memory: 64 * MB, MemoryReservation: 128 * MB }, /Minimum memory limit can not be less than memory reservation limit/],
    [{ NanoCpus: 5e8, CpuPeriod: 100000 }, /Nano CPUs and CPU Period cannot both be set/],
    [{ NanoCpus: 3e9 }, /: Range of CPUs is from 0.01 to 2.00, as there are only 2 CPUs available$/],
    [{ CpuPeriod: 500 }, /CPU cfs period can not be less than 1ms/],
    [{ CpuQuota: 10 }, /CPU cfs quota can not be less than 1ms/],
    [{ CpusetMems: '/' }, /: Invalid value \/ for cpuset mems$/],
    [{ CpusetCpus: '0-3' }, /: Requested CPUs are not available - requested 0-3, available: 0-1$/],
    [{ CpusetMems: '1' }, /: Requested memory nodes are not available - requested 1, available: 0$/],
    [{ BlkioWeight: 5 }, /Range of blkio weight is from 10 to 1000/],
    [{ OomScoreAdj: 1001 }, /Invalid value 1001, range for oom score adj is \[-1000, 1000\]/],
  ];
  for (const [h, re] of refused) assert.throws(() => create(h, host), re, JSON.stringify(h));
  for (const h of [{ Memory: 64 * MB, MemorySwap: -1 }, { MemorySwappiness: -1 }, { NanoCpus: 2e9 }, { CpusetCpus: '0,1', CpusetMems: '0' }, { CpuPeriod: 100000, CpuQuota: 50000 }]) {
    assert.doesNotThrow(() => create(h, host), JSON.stringify(h));
  }
  // Without kernel blkio weights a weight is discarded (with the warning) before its range is looked at.
  assert.deepEqual(create({ BlkioWeight: 5 }, { ...host, blkioWeight: false }).warnings.length, 1);
});
