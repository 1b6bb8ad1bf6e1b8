// `docker update` requests: what the body may change, and the reference's refusals before any write.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyUpdate, parseUpdate } from '../../../api/containers/update.ts';
import type { ContainerSpec, ContainerStatus, Resource } from '../../../store/types.ts';

const MB = 1024 * 1024;
const ctr = (hostConfig: Record<string, unknown>) => ({ name: 'c'.repeat(64), spec: { hostConfig: { RestartPolicy: { Name: 'no', MaximumRetryCount: 0 }, ...hostConfig } } }) as unknown as Resource<ContainerSpec, ContainerStatus>;

test('parse: zero and absent fields change nothing, unknown ones are ignored, types are checked', () => {
  assert.deepEqual(parseUpdate({ Memory: 0, CpuShares: 512, CpusetCpus: '', Devices: [], RestartPolicy: { Name: '', MaximumRetryCount: 0 } }), { CpuShares: 512 });
  assert.deepEqual(parseUpdate({ PidsLimit: -1, RestartPolicy: { Name: 'on-failure', MaximumRetryCount: 2 } }), { PidsLimit: -1, RestartPolicy: { Name: 'on-failure', MaximumRetryCount: 2 } });
  assert.deepEqual(parseUpdate(null), {});
  assert.throws(() => parseUpdate({ Memory: '64m' }), /Memory: expected an integer/);
  assert.throws(() => parseUpdate([]), /must be an object/);
  assert.throws(() => parseUpdate({ RestartPolicy: { Name: 'sometimes' } }), /unknown policy 'sometimes'/);
  assert.throws(() => parseUpdate({ RestartPolicy: { Name: 'always', MaximumRetryCount: 3 } }), /can only be used with 'on-failure'/);
});

test('apply: the new values over the old; the refusals of the reference', () => {
  const h = applyUpdate(ctr({ Memory: 0, CpuShares: 0 }), { Memory: 64 * MB, CpuShares: 256, PidsLimit: -1 }) as unknown as Record<string, unknown>;
  assert.deepEqual([h.Memory, h.CpuShares, h.PidsLimit], [64 * MB, 256, 0]);
  assert.throws(() => applyUpdate(ctr({}), { Memory: MB }), /Minimum memory limit allowed is 6MB/);
  assert.throws(() => applyUpdate(ctr({}), { Memory: 64 * MB, MemorySwap: 32 * MB }), /Minimum memoryswap limit should be larger than memory limit/);
  assert.throws(() => applyUpdate(ctr({}), { NanoCpus: 1e9, CpuQuota: 1000 }), /Nano CPUs and CPU Quota cannot both be set/);
  assert.throws(() => applyUpdate(ctr({ NanoCpus: 1e9 }), { CpuPeriod: 100000 }), /cannot be updated as NanoCPUs has already been set/);
  assert.throws(() => applyUpdate(ctr({ CpuQuota: 1000 }), { NanoCpus: 1e9 }), /Nano CPUs cannot be updated/);
  assert.throws(() => applyUpdate(ctr({ MemorySwap: 64 * MB }), { Memory: 128 * MB }), /Memory limit should be smaller than already set memoryswap limit/);
  assert.throws(() => applyUpdate(ctr({ AutoRemove: true }), { RestartPolicy: { Name: 'always', MaximumRetryCount: 0 } }), /AutoRemove is enabled/);
});
