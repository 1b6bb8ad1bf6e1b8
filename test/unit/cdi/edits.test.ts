// drivers/cdi/edits.ts: CDI edits applied to an OCI runtime spec with the reference library's
// rules (ContainerEdits.Apply): replace-or-append, device facts from the host node, mount order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyEdits, type DeviceStat } from '../../../drivers/cdi/edits.ts';
import { isCode } from '../../../lib/errors.ts';

function baseSpec(): Record<string, unknown> {
  return {
    process: { env: ['PATH=/usr/bin', 'NVIDIA_VISIBLE_DEVICES=void'], user: { uid: 0, gid: 0 } },
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc', options: [] },
      { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: [] },
      { destination: '/etc/hosts', type: 'bind', source: '/var/lib/x/hosts', options: ['rbind'] },
    ],
    linux: {},
  };
}

test('a device node without type or numbers takes them from the host node: /dev/null is char 1:3', () => {
  const spec = baseSpec();
  applyEdits(spec, { deviceNodes: [{ path: '/dev/null' }] });
  const linux = spec.linux as { devices: unknown[]; resources: { devices: unknown[] } };
  assert.deepEqual(linux.devices, [{ path: '/dev/null', type: 'c', major: 1, minor: 3, fileMode: 0o666 }]);
  assert.deepEqual(linux.resources.devices, [{ allow: true, type: 'c', major: 1, minor: 3, access: 'rwm' }]);
});

test('device nodes: hostPath stat under another container path, permissions, replace at the same path, fifo without a rule', () => {
  const spec = baseSpec();
  (spec.linux as Record<string, unknown>).devices = [{ path: '/dev/vendor0', type: 'c', major: 9, minor: 9 }];
  applyEdits(spec, {
    deviceNodes: [
      { path: '/dev/vendor0', hostPath: '/dev/null', permissions: 'rw', uid: 1000 },
      { path: '/dev/given', type: 'b', major: 8, minor: 1 },
      { path: '/dev/pipe', type: 'p' },
    ],
  });
  const linux = spec.linux as { devices: unknown[]; resources: { devices: unknown[] } };
  assert.deepEqual(linux.devices, [
    { path: '/dev/vendor0', type: 'c', major: 1, minor: 3, fileMode: 0o666, uid: 1000 },
    // Type and major given: taken as written, nothing is stat'ed (the host has no /dev/given).
    { path: '/dev/given', type: 'b', major: 8, minor: 1 },
    { path: '/dev/pipe', type: 'p', major: 0, minor: 0 },
  ]);
  assert.deepEqual(linux.resources.devices, [
    { allow: true, type: 'c', major: 1, minor: 3, access: 'rw' },
    { allow: true, type: 'b', major: 8, minor: 1, access: 'rwm' },
  ]);
});

test('device nodes: the process user\'s uid/gid when not given; a stat function stands in for the host', () => {
  const stat = (): DeviceStat => ({ isBlockDevice: () => true, isCharacterDevice: () => false, isFIFO: () => false, rdev: (259 << 8) | 2, mode: 0o60640 });
  const spec = baseSpec();
  (spec.process as { user: Record<string, number> }).user = { uid: 1000, gid: 100 };
  applyEdits(spec, { deviceNodes: [{ path: '/dev/nvme0n1p2' }] }, stat);
  assert.deepEqual((spec.linux as { devices: unknown[] }).devices, [{ path: '/dev/nvme0n1p2', type: 'b', major: 259, minor: 2, fileMode: 0o640, uid: 1000, gid: 100 }]);
});

test('device nodes the host lacks, or of the wrong type, fail with the library\'s words', () => {
  assert.throws(() => applyEdits(baseSpec(), { deviceNodes: [{ path: '/dev/does-not-exist-cdi' }] }),
    (e) => isCode(e, 'InvalidArgument') && (e as Error).message === 'failed to stat CDI host device "/dev/does-not-exist-cdi": no such file or directory');
  assert.throws(() => applyEdits(baseSpec(), { deviceNodes: [{ path: '/dev/null', type: 'b' }] }),
    (e) => isCode(e, 'InvalidArgument') && (e as Error).message === 'CDI device ("/dev/null", "/dev/null"), host type mismatch (b, c)');
  assert.throws(() => applyEdits(baseSpec(), { deviceNodes: [{ path: '/etc/hostname', hostPath: '/etc' }] }), /not a device node/);
});

test('mounts: bind by default, same destination replaced, ordered by depth (stable)', () => {
  const spec = baseSpec();
  applyEdits(spec, {
    mounts: [
      { hostPath: '/usr/lib/libvendor.so.1', containerPath: '/usr/lib/libvendor.so.1', options: ['ro', 'nosuid'] },
      { hostPath: '/run/vendor/hosts', containerPath: '/etc/hosts', type: 'bind', options: ['rbind', 'ro'] },
      { hostPath: 'tmpfs', containerPath: '/vendor', type: 'tmpfs', options: ['size=1m'] },
    ],
  });
  assert.deepEqual(spec.mounts, [
    { destination: '/proc', type: 'proc', source: 'proc', options: [] },
    { destination: '/vendor', type: 'tmpfs', source: 'tmpfs', options: ['size=1m'] },
    { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: [] },
    { destination: '/etc/hosts', type: 'bind', source: '/run/vendor/hosts', options: ['rbind', 'ro'] },
    { destination: '/usr/lib/libvendor.so.1', type: 'bind', source: '/usr/lib/libvendor.so.1', options: ['ro', 'nosuid', 'bind'] },
  ]);
});

test('env: appended, a key already set is replaced in place', () => {
  const spec = baseSpec();
  applyEdits(spec, { env: ['NVIDIA_VISIBLE_DEVICES=0', 'VENDOR=1', 'VENDOR=2'] });
  assert.deepEqual((spec.process as { env: string[] }).env, ['PATH=/usr/bin', 'NVIDIA_VISIBLE_DEVICES=0', 'VENDOR=2']);
});

test('hooks of several kinds land under their OCI names, in order', () => {
  const spec = baseSpec();
  applyEdits(spec, {
    hooks: [
      { hookName: 'createContainer', path: '/usr/bin/vendor-ctk', args: ['vendor-ctk', 'hook', 'update-ldcache'] },
      { hookName: 'prestart', path: '/usr/bin/prestart', env: ['A=1'], timeout: 10 },
      { hookName: 'createContainer', path: '/usr/bin/second' },
      { hookName: 'poststop', path: '/usr/bin/cleanup' },
      { hookName: 'createRuntime', path: '/usr/bin/rt' },
      { hookName: 'startContainer', path: '/usr/bin/start' },
      { hookName: 'poststart', path: '/usr/bin/started' },
    ],
  });
  assert.deepEqual(spec.hooks, {
    createContainer: [{ path: '/usr/bin/vendor-ctk', args: ['vendor-ctk', 'hook', 'update-ldcache'] }, { path: '/usr/bin/second' }],
    prestart: [{ path: '/usr/bin/prestart', env: ['A=1'], timeout: 10 }],
    poststop: [{ path: '/usr/bin/cleanup' }],
    createRuntime: [{ path: '/usr/bin/rt' }],
    startContainer: [{ path: '/usr/bin/start' }],
    poststart: [{ path: '/usr/bin/started' }],
  });
});

test('additional gids: appended once each, 0 ignored; a spec without process gets one', () => {
  const spec = baseSpec();
  (spec.process as { user: Record<string, unknown> }).user = { uid: 0, gid: 0, additionalGids: [10] };
  applyEdits(spec, { additionalGids: [0, 44, 10, 44, 109] });
  assert.deepEqual((spec.process as { user: { additionalGids: number[] } }).user.additionalGids, [10, 44, 109]);
  const bare: Record<string, unknown> = {};
  applyEdits(bare, { env: ['A=1'], additionalGids: [5] });
  assert.deepEqual(bare, { process: { env: ['A=1'], user: { additionalGids: [5] } } });
});
