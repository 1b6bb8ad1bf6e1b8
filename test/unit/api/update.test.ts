// `docker update` requests: what the body may change, and the reference's refusals before any write.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyUpdate, parseUpdate, updateRoutes } from '../../../api/containers/update.ts';
import { type ContainerResource, Containers } from '../../../store/kinds/container.ts';

import { containerRecord } from '../container/fake-world.ts';
import { routeHarness } from './route-harness.ts';

const MB = 1024 * 1024;
const ctr = (hostConfig: Record<string, unknown>) => ({ name: 'c'.repeat(64), spec: { hostConfig: { RestartPolicy: { Name: 'no', MaximumRetryCount: 0 }, ...hostConfig } } }) as unknown as ContainerResource;

test('parse: zero and absent fields change nothing, unknown ones are ignored, types are checked', () => {
  assert.deepEqual(parseUpdate({ Memory: 0, CpuShares: 512, CpusetCpus: '', Devices: [], RestartPolicy: { Name: '', MaximumRetryCount: 0 } }), { CpuShares: 512 });
  assert.deepEqual(parseUpdate({ PidsLimit: -1, RestartPolicy: { Name: 'on-failure', MaximumRetryCount: 2 } }), { PidsLimit: -1, RestartPolicy: { Name: 'on-failure', MaximumRetryCount: 2 } });
  assert.deepEqual(parseUpdate(null), {});
  assert.throws(() => parseUpdate({ Memory: '64m' }), { message: 'json: cannot unmarshal string into Go struct field UpdateConfig.Memory of type int64' });
  assert.throws(() => parseUpdate([]), { message: 'json: cannot unmarshal array into Go value of type container.UpdateConfig' });
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

test('parse: each field refused in the Go type the reference decodes it into, keys in any case', () => {
  const refused: Array<[unknown, string]> = [
    [{ CpuShares: 1.5 }, 'json: cannot unmarshal number 1.5 into Go struct field UpdateConfig.CpuShares of type int64'],
    [{ BlkioWeight: 70000 }, 'json: cannot unmarshal number 70000 into Go struct field UpdateConfig.BlkioWeight of type uint16'],
    [{ BlkioWeight: -1 }, 'json: cannot unmarshal number -1 into Go struct field UpdateConfig.BlkioWeight of type uint16'],
    [{ PidsLimit: true }, 'json: cannot unmarshal bool into Go struct field UpdateConfig.PidsLimit of type int64'],
    [{ CpusetCpus: 1 }, 'json: cannot unmarshal number into Go struct field UpdateConfig.CpusetCpus of type string'],
    [{ memory: '64m' }, 'json: cannot unmarshal string into Go struct field UpdateConfig.Memory of type int64'],
    [{ RestartPolicy: 'always' }, 'json: cannot unmarshal string into Go struct field UpdateConfig.RestartPolicy of type container.RestartPolicy'],
    [{ RestartPolicy: { Name: 1 } }, 'json: cannot unmarshal number into Go struct field RestartPolicy.RestartPolicy.Name of type container.RestartPolicyMode'],
    [{ RestartPolicy: { Name: 'on-failure', MaximumRetryCount: '3' } }, 'json: cannot unmarshal string into Go struct field RestartPolicy.RestartPolicy.MaximumRetryCount of type int'],
    [{ Ulimits: {} }, 'json: cannot unmarshal object into Go struct field UpdateConfig.Ulimits of type []*units.Ulimit'],
    ['x', 'json: cannot unmarshal string into Go value of type container.UpdateConfig'],
    [5, 'json: cannot unmarshal number into Go value of type container.UpdateConfig'],
  ];
  for (const [body, message] of refused) assert.throws(() => parseUpdate(body), { message }, JSON.stringify(body));
  assert.throws(() => parseUpdate({ RestartPolicy: { Name: 'on-failure', MaximumRetryCount: -1 } }), { message: 'invalid restart policy: maximum retry count cannot be negative' });
  assert.deepEqual(parseUpdate({ memory: 64 * MB, cpusetcpus: '0', restartpolicy: { name: 'always' }, Ulimits: null }), { Memory: 64 * MB, CpusetCpus: '0', RestartPolicy: { Name: 'always', MaximumRetryCount: 0 } });
  assert.deepEqual(parseUpdate(''), {});
});

test('POST /containers/{id}/update: a body of the wrong type is 400 with Go\'s message and changes nothing', async () => {
  const id = 'a'.repeat(64);
  const { app, store, close } = await routeHarness((store) => [updateRoutes({ store })]);
  try {
    const r = containerRecord(id, { spec: { name: '/web' }, hostConfig: { Memory: 0, CpuShares: 0 }, status: { observedGeneration: 1 } });
    store.create(Containers, id, r.spec, r.status);
    const post = (payload: string) => app.inject({ method: 'POST', url: `/containers/web/update`, headers: { 'content-type': 'application/json' }, payload });
    const refused: Array<[string, string]> = [
      ['{"Memory":"64m"}', 'json: cannot unmarshal string into Go struct field UpdateConfig.Memory of type int64'],
      ['[]', 'json: cannot unmarshal array into Go value of type container.UpdateConfig'],
      ['"x"', 'json: cannot unmarshal string into Go value of type container.UpdateConfig'],
      ['{"Memory":1048576}', 'Minimum memory limit allowed is 6MB'],
    ];
    for (const [payload, message] of refused) {
      const r = await post(payload);
      assert.equal(r.statusCode, 400, payload);
      assert.equal(r.json().message, message);
    }
    assert.equal(store.get(Containers, id)?.generation, 1);
    const ok = await post(JSON.stringify({ Memory: 64 * MB, CpuShares: 512 }));
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(ok.json(), { Warnings: [] });
    const h = store.get(Containers, id)?.spec.hostConfig as unknown as Record<string, unknown>;
    assert.deepEqual([h.Memory, h.CpuShares], [64 * MB, 512]);
  } finally {
    await close();
  }
});
