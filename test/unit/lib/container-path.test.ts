// lib/container-path.ts: a container path mapped to the host through the mount table (longest
// destination first, the rootfs otherwise), with the read-only flag and the reference's refusal.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ContainerTree, mapContainerPath, mountOf, mountsBelow, mountTable, type PathMount, readOnlyReason } from '../../../lib/container-path.ts';

const vol: PathMount = { destination: '/data', source: '/var/lib/engine/volumes/v/_data', readOnly: false, kind: 'volume' };
const nested: PathMount = { destination: '/data/ro', source: '/srv/ro', readOnly: true, kind: 'bind' };
const hostname: PathMount = { destination: '/etc/hostname', source: '/var/lib/engine/containers/c/hostname', readOnly: false, kind: 'etc' };
const tree: ContainerTree = { rootfs: '/mnt/rootfs', mounts: [nested, vol, hostname], readonlyRootfs: false };

test('a path outside every mount is in the rootfs; the root itself is the rootfs directory', () => {
  assert.deepEqual(mapContainerPath(tree, '/bin/sh'), { host: '/mnt/rootfs/bin/sh', readOnly: false, mount: null });
  assert.equal(mapContainerPath(tree, '/').host, '/mnt/rootfs');
  assert.equal(mapContainerPath(tree, '').host, '/mnt/rootfs');
  // A sibling whose name only starts like a destination is not in the mount.
  assert.equal(mapContainerPath(tree, '/database/x').host, '/mnt/rootfs/database/x');
  assert.equal(mapContainerPath(tree, '/etc/hostname2').host, '/mnt/rootfs/etc/hostname2');
});

test('a destination and what is under it map to the mount source; the longest destination wins, whatever the order', () => {
  assert.deepEqual(mapContainerPath(tree, '/data'), { host: vol.source, readOnly: false, mount: vol });
  assert.equal(mapContainerPath(tree, '/data/a/b.txt').host, `${vol.source}/a/b.txt`);
  assert.deepEqual(mapContainerPath(tree, '/data/ro/f'), { host: '/srv/ro/f', readOnly: true, mount: nested });
  assert.equal(mapContainerPath(tree, '/data/ro').host, '/srv/ro');
  assert.equal(mapContainerPath(tree, '/etc/hostname').host, hostname.source);
  // Unclean input is cleaned first.
  assert.equal(mapContainerPath(tree, 'data//x/../y/').host, `${vol.source}/y`);
  assert.equal(mountOf(tree.mounts, '/data/rox'), vol);
  assert.equal(mountOf(tree.mounts, '/tmp'), null);
});

test('of two mounts on one destination the later (mounted on top) is seen', () => {
  const top: PathMount = { ...vol, source: '/other' };
  assert.equal(mapContainerPath({ ...tree, mounts: [vol, top] }, '/data/x').host, '/other/x');
});

test('read-only: the rootfs of a --read-only container and a read-only mount refuse in the reference words', () => {
  const ro: ContainerTree = { ...tree, readonlyRootfs: true };
  assert.equal(readOnlyReason(mapContainerPath(tree, '/tmp')), null);
  assert.equal(readOnlyReason(mapContainerPath(ro, '/tmp')), 'container rootfs is marked read-only');
  assert.equal(readOnlyReason(mapContainerPath(ro, '/data/x')), null, 'a writable volume of a read-only container takes files');
  assert.equal(readOnlyReason(mapContainerPath(tree, '/data/ro/x')), 'mounted volume is marked read-only');
  const roEtc: ContainerTree = { ...ro, mounts: [{ ...hostname, readOnly: true }] };
  assert.equal(readOnlyReason(mapContainerPath(roEtc, '/etc/hostname')), 'container rootfs is marked read-only');
});

test('mounts below a directory: strictly under it, every mount below the root', () => {
  assert.deepEqual(mountsBelow(tree.mounts, '/data'), [nested]);
  assert.deepEqual(mountsBelow(tree.mounts, '/data/ro'), []);
  assert.deepEqual(mountsBelow(tree.mounts, '/etc'), [hostname]);
  assert.equal(mountsBelow(tree.mounts, '/').length, 3);
  assert.deepEqual(mountsBelow(tree.mounts, '/dat'), []);
});

test('the mount table: host binds (not volume names), --mount binds, volume mount points, the /etc files; tmpfs left out; parents first', () => {
  const table = mountTable({
    hostConfig: {
      Binds: ['/host/dir:/mnt/ro:ro', 'named:/data', '/host/sub/:/data/sub', 'bad:spec:x:y'],
      Mounts: [
        { Type: 'bind', Source: '/host/m', Target: '/m/', ReadOnly: true },
        { Type: 'tmpfs', Target: '/run' },
        { Type: 'volume', Source: 'named', Target: '/data' },
      ],
      ReadonlyRootfs: false,
    },
    volumes: [{ type: 'volume', source: '/vols/named/_data', destination: '/data', readOnly: false }],
    etc: { hostname: '/c/hostname', hosts: '/c/hosts', resolvConf: '/c/resolv.conf' },
  });
  assert.deepEqual(
    table.map((m) => [m.destination, m.source, m.readOnly, m.kind]),
    [
      ['/m', '/host/m', true, 'bind'],
      ['/data', '/vols/named/_data', false, 'volume'],
      ['/etc/resolv.conf', '/c/resolv.conf', false, 'etc'],
      ['/etc/hostname', '/c/hostname', false, 'etc'],
      ['/etc/hosts', '/c/hosts', false, 'etc'],
      ['/mnt/ro', '/host/dir', true, 'bind'],
      ['/data/sub', '/host/sub', false, 'bind'],
    ],
  );
});

test('the mount table: a user mount on an /etc file replaces the daemon\'s; a read-only rootfs makes them read-only; no file, no mount', () => {
  const table = mountTable({
    hostConfig: { Binds: ['/my/hosts:/etc/hosts'], ReadonlyRootfs: true },
    volumes: [],
    etc: { hostname: '/c/hostname', hosts: '/c/hosts', resolvConf: '' },
  });
  assert.deepEqual(
    table.map((m) => [m.destination, m.source, m.readOnly]),
    [
      ['/etc/hostname', '/c/hostname', true],
      ['/etc/hosts', '/my/hosts', false],
    ],
  );
});
