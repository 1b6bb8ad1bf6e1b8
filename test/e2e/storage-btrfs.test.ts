// The btrfs storage driver (issue (10 of 21), 1 and 6): a daemon whose data root is a btrfs file
// system of its own (a loop file the harness makes and mounts) runs with `-s btrfs`: image layers
// are subvolumes, each a snapshot of its parent, a container's layer a snapshot of its image's;
// load, run, diff, commit, export and save work on it, `docker info` names the driver and its
// status lines; removing a container or an image deletes its subvolumes; --storage-opt size is a
// qgroup limit (a write past it fails inside the container), btrfs.min_space its floor, refusals
// in the reference's words (docs/reference-storage.md). On a root that is not btrfs the start is
// refused with the reference's words.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';

const canRun = process.getuid?.() === 0 && existsSync('/usr/sbin/mkfs.btrfs') && /\tbtrfs$/m.test(readFileSync('/proc/filesystems', 'utf8'));

describe('the btrfs storage driver', { skip: !canRun && 'needs root, btrfs in the kernel and btrfs-progs (hack/install.sh installs it)' }, () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = (...args: string[]) => dockerOk(() => d)(...args);
  /** The subvolumes under the driver's home, by id. */
  const subvolumes = () =>
    execFileSync('btrfs', ['subvolume', 'list', '-o', join(d.dataRoot, 'btrfs', 'subvolumes')], { encoding: 'utf8' })
      .split('\n')
      .map((l) => /path (?:<FS_TREE>\/)?btrfs\/subvolumes\/([0-9a-f-]+)$/.exec(l.trim())?.[1])
      .filter((x): x is string => !!x)
      .sort();

  before(async () => {
    imgs = await testImages();
    d = await startDaemon({ dataRootFs: { type: 'btrfs', size: '1G' }, args: ['--storage-driver', 'btrfs'] });
    await dk('load', '-i', imgs.dockerArchive);
  }, { timeout: 120_000 });
  after(async () => {
    await d?.cleanup();
  });

  test('docker info names the driver and its status lines', async () => {
    const info = JSON.parse(await dk('info', '--format', '{{json .}}'));
    assert.equal(info.Driver, 'btrfs');
    assert.deepEqual(info.DriverStatus.map((p: string[]) => p[0]), ['Build Version', 'Library Version']);
    assert.match(info.DriverStatus[0][1], /^Btrfs v\d/);
  });

  test('layers are subvolumes; a container\'s is a snapshot; run, diff, commit, export, save; removal deletes the subvolumes', async () => {
    const images = subvolumes();
    assert.ok(images.length >= 1, 'the loaded image\'s layers are subvolumes');
    const out = await dk('run', '--name', 'b1', imgs.tag, 'sh', '-c', 'echo hello > /made; rm /bin/true; cat /made');
    assert.equal(out, 'hello');
    const withContainer = subvolumes();
    assert.equal(withContainer.length, images.length + 1, 'one subvolume more for the container');
    assert.deepEqual(JSON.parse(await dk('inspect', 'b1'))[0].GraphDriver, { Name: 'btrfs', Data: null }, 'as the reference shows it');
    assert.match(await dk('diff', 'b1'), /^A \/made$/m);
    assert.match(await dk('diff', 'b1'), /^D \/bin\/true$/m);
    const exported = execFileSync('sh', ['-c', `docker -H ${d.dockerHost} export b1 | tar -t`], { encoding: 'utf8' });
    assert.match(exported, /^(\.\/)?made$/m);
    await dk('commit', 'b1', 'btrfs-made:1');
    assert.equal(await dk('run', '--rm', 'btrfs-made:1', 'cat', '/made'), 'hello');
    assert.equal((await docker(d, ['run', '--rm', 'btrfs-made:1', 'ls', '/bin/true'])).code !== 0, true, 'the deletion is in the committed layer');
    const saved = execFileSync('sh', ['-c', `docker -H ${d.dockerHost} save btrfs-made:1 | tar -t`], { encoding: 'utf8' });
    assert.match(saved, /manifest\.json/);
    await dk('rm', 'b1');
    const afterRm = subvolumes();
    assert.equal(afterRm.length, withContainer.length, 'the container\'s subvolume is gone, the committed layer\'s is there');
    await dk('rmi', 'btrfs-made:1');
    assert.deepEqual(subvolumes(), images, 'the committed layer\'s subvolume is gone too');
  });

  test('--storage-opt size is a qgroup limit: a write past it fails inside with "Disk quota exceeded"; bad options refused with a 500', async () => {
    const past = await docker(d, ['run', '--rm', '--storage-opt', 'size=100M', imgs.tag, 'sh', '-c', 'dd if=/dev/zero of=/x bs=1M count=200']);
    assert.equal(past.code, 1, past.stdout + past.stderr);
    assert.match(past.stdout + past.stderr, /Disk quota exceeded/);
    assert.equal((await docker(d, ['run', '--rm', '--storage-opt', 'size=100M', imgs.tag, 'sh', '-c', 'dd if=/dev/zero of=/x bs=1M count=50'])).code, 0, 'under the limit it writes');
    const bad = await apiRequest(d, 'POST', '/containers/create', JSON.stringify({ Image: imgs.tag, HostConfig: { StorageOpt: { size: 'abc' } } }));
    assert.deepEqual([bad.status, bad.body.message], [500, "invalid size: 'abc'"]);
    const unknown = await docker(d, ['create', '--storage-opt', 'size=10M', '--storage-opt', 'foo=bar', imgs.tag]);
    assert.match(unknown.stderr, /Unknown option foo/);
    // Without size the options are not read, as the reference.
    const ignored = await docker(d, ['create', '--storage-opt', 'foo=bar', imgs.tag]);
    assert.equal(ignored.code, 0, ignored.stderr);
    await dk('rm', ignored.stdout.trim());
    assert.deepEqual(JSON.parse(await dk('ps', '-a', '--format', '{{json .Names}}').then((x) => `[${x.split('\n').filter(Boolean).join(',')}]`)), [], 'no refused create left a container');
  });

  test('btrfs.min_space: a smaller size is refused in the reference\'s words; a larger one is a limit', async () => {
    const m = await startDaemon({ dataRootFs: { type: 'btrfs', size: '1G' }, args: ['--storage-driver', 'btrfs', '--storage-opt', 'btrfs.min_space=50M'] });
    try {
      await dockerOk(() => m)('load', '-i', imgs.dockerArchive);
      const small = await apiRequest(m, 'POST', '/containers/create', JSON.stringify({ Image: imgs.tag, HostConfig: { StorageOpt: { size: '10M' } } }));
      assert.deepEqual([small.status, small.body.message], [500, 'btrfs: storage size cannot be less than 52.43MB']);
      const ok = await docker(m, ['run', '--rm', '--storage-opt', 'size=60M', imgs.tag, 'sh', '-c', 'dd if=/dev/zero of=/x bs=1M count=100']);
      assert.match(ok.stdout + ok.stderr, /Disk quota exceeded/);
    } finally {
      await m.cleanup();
    }
  });

  test('on a root that is not btrfs the start is refused in the reference\'s words', async () => {
    await assert.rejects(startDaemon({ dataRootTmpfs: '64m', args: ['--storage-driver', 'btrfs'], startTimeoutMs: 20_000 }), /prerequisites for driver not satisfied \(wrong filesystem\?\)/);
  });
});
