// DeviceRequests as CDI names (issue (15 of 21), 2-3): the reference's drivers' choice and words.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cdiDevicesOf, hostDevicesOnly, isCdiName, type CdiCatalog } from '../../../lib/device-requests.ts';

const catalog = (names: string[]): CdiCatalog => ({
  has: (n) => names.includes(n),
  namesOfKind: (k) => names.filter((n) => n.startsWith(`${k}=`)).sort(),
});

test('CDI names and host paths', () => {
  assert.equal(isCdiName('vendor.com/class=dev0'), true);
  assert.equal(isCdiName('/dev/null'), false);
  assert.equal(isCdiName('vendor.com/class'), false);
  assert.deepEqual(hostDevicesOnly([{ PathOnHost: '/dev/null' }, { PathOnHost: 'a.com/b=c' }]), [{ PathOnHost: '/dev/null' }]);
});

test('driver cdi takes its DeviceIDs; --device with a CDI name too; unknown names are refused together', () => {
  const c = catalog(['a.com/x=0', 'a.com/x=1']);
  assert.deepEqual(cdiDevicesOf([{ Driver: 'cdi', DeviceIDs: ['a.com/x=1'] }], [{ PathOnHost: 'a.com/x=0' }, { PathOnHost: '/dev/null' }], c), ['a.com/x=0', 'a.com/x=1']);
  assert.throws(() => cdiDevicesOf([{ Driver: 'cdi', DeviceIDs: ['a.com/x=9', 'a.com/y=0'] }], [], c), /^Error: CDI device injection failed: unresolvable CDI devices a\.com\/x=9, a\.com\/y=0$|CDI device injection failed: unresolvable CDI devices a\.com\/x=9, a\.com\/y=0/);
});

test('CDI off: a cdi request or a CDI-named device cannot select a driver', () => {
  assert.throws(() => cdiDevicesOf([{ Driver: 'cdi', DeviceIDs: ['a.com/x=0'] }], [], undefined), /could not select device driver "cdi" with capabilities: \[\]/);
  assert.throws(() => cdiDevicesOf([], [{ PathOnHost: 'a.com/x=0' }], undefined), /could not select device driver "cdi"/);
  assert.deepEqual(cdiDevicesOf(null, null, undefined), []);
});

test('--gpus: through nvidia.com/gpu when a spec offers it (all, a count, ids), else the reference\'s error', () => {
  const gpu = [['gpu']];
  assert.throws(() => cdiDevicesOf([{ Driver: '', Count: -1, Capabilities: gpu }], [], catalog([])), /could not select device driver "" with capabilities: \[\[gpu\]\]/);
  assert.throws(() => cdiDevicesOf([{ Driver: '', Count: -1, Capabilities: gpu }], [], undefined), /could not select device driver "" with capabilities: \[\[gpu\]\]/);
  const c = catalog(['nvidia.com/gpu=GPU-aaa', 'nvidia.com/gpu=GPU-bbb']);
  assert.deepEqual(cdiDevicesOf([{ Count: -1, Capabilities: gpu }], [], c), ['nvidia.com/gpu=GPU-aaa', 'nvidia.com/gpu=GPU-bbb']);
  assert.deepEqual(cdiDevicesOf([{ Count: 1, Capabilities: [['gpu', 'utility']] }], [], c), ['nvidia.com/gpu=GPU-aaa']);
  assert.deepEqual(cdiDevicesOf([{ DeviceIDs: ['GPU-bbb'], Capabilities: gpu }], [], c), ['nvidia.com/gpu=GPU-bbb']);
  assert.deepEqual(cdiDevicesOf([{ Count: -1, Capabilities: gpu }], [], catalog(['nvidia.com/gpu=all', 'nvidia.com/gpu=0'])), ['nvidia.com/gpu=all']);
  assert.throws(() => cdiDevicesOf([{ Driver: 'other', Capabilities: [['tpu']] }], [], c), /could not select device driver "other" with capabilities: \[\[tpu\]\]/);
});
