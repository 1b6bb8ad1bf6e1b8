// resolveContainerMounts: which volume mount points a container gets at create, from Binds,
// Mounts, the image's Volumes and VolumesFrom, which volumes come into being with it, and the
// reference daemon's refusals (duplicates, a volume being removed, unknown containers).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errorCode } from '../../../lib/errors.ts';
import { FakeStore } from '../network/fake-store.ts';
import { resolveContainerMounts, type ResolveInput } from '../../../admission/volumes/container-mounts.ts';
import type { ContainerConfig, HostConfig, MountPoint, ContainerResource as CR } from '../../../store/kinds/container.ts';
import { ANONYMOUS_LABEL, type VolumeSpec, Volumes } from '../../../store/kinds/volume.ts';
import { loose } from '../store/test-kind.ts';

const CID = 'c'.repeat(64);

function resolve(h: Partial<HostConfig>, o: { store?: FakeStore; volumes?: string[]; others?: Record<string, CR> } = {}) {
  const input: ResolveInput = {
    containerId: CID,
    config: { Volumes: Object.fromEntries((o.volumes ?? []).map((v) => [v, {}])) } as unknown as ContainerConfig,
    hostConfig: h as HostConfig,
    findContainer: (ref) => {
      const c = o.others?.[ref];
      if (!c) throw new Error(`not found: ${ref}`);
      return c;
    },
  };
  return resolveContainerMounts(o.store ?? new FakeStore(), input);
}

function refused(fn: () => unknown, code: string, message: string | RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.equal(errorCode(err), code);
    if (typeof message === 'string') assert.equal((err as Error).message, message);
    else assert.match((err as Error).message, message);
    return true;
  });
}

const vol = (name: string, desired: VolumeSpec['desired'] = 'present'): VolumeSpec => ({
  name, driver: 'local', options: {}, labels: {}, created: '', anonymous: false, desired,
});
const mp = (p: Partial<MountPoint>): MountPoint => ({
  type: 'volume', name: '', source: '', destination: '', readOnly: false, mode: '', propagation: '', noCopy: false, ...p,
});
const container = (id: string, mountPoints: MountPoint[], hostConfig: Partial<HostConfig> = {}): CR =>
  ({ kind: 'container', name: id, spec: { id, mountPoints, hostConfig }, status: {} }) as unknown as CR;

describe('resolveContainerMounts: Binds', () => {
  test('-v name:/data: a named volume created on first use, mode z, not anonymous', () => {
    const r = resolve({ Binds: ['data:/data'] });
    assert.deepEqual(r.mountPoints, [mp({ name: 'data', destination: '/data', mode: 'z' })]);
    assert.equal(r.newVolumes.length, 1);
    const v = r.newVolumes[0]!;
    assert.equal(v.name, 'data');
    assert.equal(v.anonymous, false);
    assert.equal(v.owner, undefined);
    assert.equal(v.desired, 'present');
    assert.equal(v.driver, 'local');
    assert.deepEqual(v.labels, {});
  });

  test('-v name:/data:ro,nocopy: read-only, no copy, the mode kept as written', () => {
    const r = resolve({ Binds: ['data:/data:ro,nocopy'] });
    assert.deepEqual(r.mountPoints, [mp({ name: 'data', destination: '/data', readOnly: true, noCopy: true, mode: 'ro,nocopy' })]);
  });

  test('an existing volume is not created again; one being removed is a Conflict', () => {
    const store = new FakeStore();
    store.create(loose(Volumes), 'data', vol('data'), {});
    const r = resolve({ Binds: ['data:/a', 'data:/b'] }, { store });
    assert.deepEqual(r.newVolumes, []);
    assert.deepEqual(r.mountPoints.map((m) => m.destination), ['/a', '/b']);
    assert.equal(resolve({ Binds: ['fresh:/a', 'fresh:/b'] }).newVolumes.length, 1, 'used twice, created once');
    store.create(loose(Volumes), 'gone', vol('gone', 'removed'), {});
    refused(() => resolve({ Binds: ['gone:/x'] }, { store }), 'Conflict', 'volume gone is being removed');
  });

  test('-v /scratch: an anonymous volume the container owns', () => {
    const r = resolve({ Binds: ['/scratch'] });
    assert.equal(r.mountPoints.length, 1);
    const m = r.mountPoints[0]!;
    assert.match(m.name, /^[0-9a-f]{64}$/);
    assert.deepEqual(m, mp({ name: m.name, destination: '/scratch' }));
    const v = r.newVolumes[0]!;
    assert.equal(v.name, m.name);
    assert.equal(v.anonymous, true);
    assert.equal(v.owner, CID);
    assert.deepEqual(v.labels, { [ANONYMOUS_LABEL]: '' });
  });

  test('host-path binds are not mount points and create nothing', () => {
    const r = resolve({ Binds: ['/srv/www:/www:ro', '/etc/hosts:/etc/hosts'] });
    assert.deepEqual(r, { mountPoints: [], newVolumes: [] });
  });

  test('two mounts on one destination: Duplicate mount point', () => {
    refused(() => resolve({ Binds: ['va:/x', 'vb:/x'] }), 'InvalidArgument', 'Duplicate mount point: /x');
    refused(() => resolve({ Binds: ['/host:/x', 'va:/x'] }), 'InvalidArgument', 'Duplicate mount point: /x');
    refused(() => resolve({ Binds: ['va:/x'], Mounts: [{ Type: 'volume', Target: '/x' }] }), 'InvalidArgument', 'Duplicate mount point: /x');
    refused(() => resolve({ Tmpfs: { '/x': '' }, Mounts: [{ Type: 'volume', Source: 'va', Target: '/x' }] }), 'InvalidArgument', 'Duplicate mount point: /x');
    refused(() => resolve({ Binds: ['/x'], Mounts: [{ Type: 'bind', Source: '/h', Target: '/x' }] }), 'InvalidArgument', 'Duplicate mount point: /x');
  });

  // BUG (container-mounts.ts `posix.normalize(m.Target)` / `posix.normalize(path)`, and
  // lib/mount-spec.ts parseBind's `posix.normalize(destination)`): Node's normalize keeps a
  // trailing slash ('/x/' stays '/x/'), Go's path.Clean (the reference) drops it. So '/x' and '/x/'
  // count as two destinations: no Duplicate error, and an image VOLUME '/x' gets an anonymous volume
  // on top of a bind/tmpfs/volume the user put on '/x/'; inspect shows Destination '/x/'.
  test('a trailing slash names the same destination', () => {
    refused(() => resolve({ Binds: ['/host:/x', 'va:/x/'] }), 'InvalidArgument', 'Duplicate mount point: /x');
    assert.equal(resolve({ Mounts: [{ Type: 'volume', Source: 'va', Target: '/cache/' }] }).mountPoints[0]!.destination, '/cache');
    const r = resolve({ Mounts: [{ Type: 'bind', Source: '/h', Target: '/mnt/' }], Tmpfs: { '/tmp/': '' } }, { volumes: ['/mnt', '/tmp', '/free', '/free/'] });
    assert.deepEqual(r.mountPoints.map((m) => m.destination), ['/free']);
  });
});

describe('resolveContainerMounts: Mounts', () => {
  test('type volume with Source and VolumeOptions: labels, driver options, no copy, subpath', () => {
    const r = resolve({
      Mounts: [{
        Type: 'volume', Source: 'cache', Target: '/cache', ReadOnly: true,
        VolumeOptions: { NoCopy: true, Labels: { team: 'a', n: 1 }, DriverConfig: { Name: 'local', Options: { type: 'tmpfs', device: 'tmpfs' } }, Subpath: 'sub/dir' },
      }],
    });
    assert.deepEqual(r.mountPoints, [mp({ name: 'cache', destination: '/cache', readOnly: true, noCopy: true, mode: 'z', subpath: 'sub/dir' } as Partial<MountPoint>)]);
    const v = r.newVolumes[0]!;
    assert.deepEqual(v.labels, { team: 'a' }, 'non-string label values are dropped');
    assert.deepEqual(v.options, { type: 'tmpfs', device: 'tmpfs' });
    assert.equal(v.anonymous, false);
  });

  test('type volume without Source: anonymous; a non-local driver, bad subpath or target: InvalidArgument', () => {
    const r = resolve({ Mounts: [{ Type: 'volume', Target: '/anon' }] });
    assert.equal(r.newVolumes[0]!.owner, CID);
    assert.equal(r.mountPoints[0]!.mode, '');
    refused(() => resolve({ Mounts: [{ Type: 'volume', Source: 'x1', Target: '/x', VolumeOptions: { DriverConfig: { Name: 'nfs-plugin' } } }] }), 'InvalidArgument', /plugin "nfs-plugin" not found/);
    refused(() => resolve({ Mounts: [{ Type: 'volume', Source: 'x1', Target: '/x', VolumeOptions: { Subpath: '../up' } }] }), 'InvalidArgument', /subpath must be a relative path/);
    refused(() => resolve({ Mounts: [{ Type: 'volume', Target: 'rel' }] }), 'InvalidArgument', /mount path must be absolute/);
    refused(() => resolve({ Mounts: [{ Type: 'volume' }] }), 'InvalidArgument', /Target must not be empty/);
  });
});

describe('resolveContainerMounts: image Volumes', () => {
  test('each image VOLUME path gets an anonymous volume unless a bind, tmpfs or volume targets it', () => {
    const r = resolve(
      { Binds: ['/host:/bound', 'named:/named'], Tmpfs: { '/tmp': 'size=1m' }, Mounts: [{ Type: 'bind', Source: '/h', Target: '/mnt' }] },
      { volumes: ['/bound', '/named', '/tmp', '/mnt', '/free', '/free/../free', 'relative', '/'] },
    );
    assert.deepEqual(r.mountPoints.map((m) => m.destination), ['/named', '/free']);
    const anon = r.mountPoints[1]!;
    assert.match(anon.name, /^[0-9a-f]{64}$/);
    assert.deepEqual(r.newVolumes.map((v) => [v.name, v.anonymous]), [['named', false], [anon.name, true]]);
  });
});

describe('resolveContainerMounts: VolumesFrom', () => {
  const src = container('src', [mp({ name: 'shared', destination: '/shared', mode: 'z' })], { Binds: ['/srv/logs:/logs', 'shared:/shared'] });

  test('copies the other container\'s mount points and host binds, creating nothing', () => {
    const r = resolve({ VolumesFrom: ['src'] }, { others: { src } });
    assert.deepEqual(r.mountPoints, [
      mp({ name: 'shared', destination: '/shared', mode: 'z' }),
      mp({ type: 'bind', source: '/srv/logs', destination: '/logs', propagation: 'rprivate' }),
    ]);
    assert.deepEqual(r.newVolumes, []);
  });

  test(':ro makes them read-only', () => {
    const r = resolve({ VolumesFrom: ['src:ro'] }, { others: { src } });
    assert.deepEqual(r.mountPoints.map((m) => [m.destination, m.readOnly]), [['/shared', true], ['/logs', true]]);
  });

  // BUG (api/volumes/container-mounts.ts, the VolumesFrom loop): `readOnly: mode === 'ro'` makes
  // a read-only source mount writable under `:rw`; the reference daemon uses `m.RW && ReadWrite(mode)`,
  // so `:rw` never widens access.
  test(':rw keeps a read-only source mount read-only', () => {
    const ro = container('ro', [mp({ name: 'v', destination: '/v', readOnly: true, mode: 'ro' })]);
    const r = resolve({ VolumesFrom: ['ro:rw'] }, { others: { ro } });
    assert.equal(r.mountPoints[0]!.readOnly, true);
  });

  test('a bad mode or an unknown container: InvalidArgument', () => {
    refused(() => resolve({ VolumesFrom: ['src:rx'] }, { others: { src } }), 'InvalidArgument', 'malformed volumes-from specification: src:rx');
    refused(() => resolve({ VolumesFrom: ['src:ro:rw'] }, { others: { src } }), 'InvalidArgument', 'malformed volumes-from specification: src:ro:rw');
    refused(() => resolve({ VolumesFrom: ['x'] }), 'InvalidArgument', 'No such container: x');
  });

  test('the container\'s own mounts win over VolumesFrom ones on the same destination', () => {
    const r = resolve({ Binds: ['mine:/shared', '/own:/logs'], VolumesFrom: ['src'] }, { others: { src } });
    assert.deepEqual(r.mountPoints, [mp({ name: 'mine', destination: '/shared', mode: 'z' })]);
  });

  test('an image VOLUME already provided by VolumesFrom gets no anonymous volume', () => {
    const r = resolve({ VolumesFrom: ['src'] }, { others: { src }, volumes: ['/shared', '/logs'] });
    assert.deepEqual(r.newVolumes, []);
    assert.equal(r.mountPoints.length, 2);
  });
});
