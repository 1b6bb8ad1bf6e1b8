// The fuse-overlayfs storage driver (issue (10 of 21), 2 and 6): a data root that is itself on
// overlayfs, where the kernel's overlay cannot stack (overlay2 refuses the start there), runs with
// `-s fuse-overlayfs`: overlay2's layer layout mounted by the fuse-overlayfs program; load, run as
// root and as another user, diff (an addition and a deletion), commit, export, save; removal
// unmounts and removes the layer; docker info names the driver (no status lines, as the
// reference); a container's --storage-opt is refused in the reference's words, and so is a
// daemon's (the reference ignores those: never here).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';

const canRun = process.getuid?.() === 0 && existsSync('/usr/bin/fuse-overlayfs') && existsSync('/dev/fuse') && /\toverlay$/m.test(readFileSync('/proc/filesystems', 'utf8'));

describe('the fuse-overlayfs storage driver', { skip: !canRun && 'needs root, /dev/fuse and fuse-overlayfs (hack/install.sh installs it)' }, () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = (...args: string[]) => dockerOk(() => d)(...args);
  const fuseMounts = () => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(d.dataRoot) && / fuse\.fuse-overlayfs /.test(l)).length;

  before(async () => {
    imgs = await testImages();
    d = await startDaemon({ dataRootFs: { type: 'overlay', size: '' }, args: ['--storage-driver', 'fuse-overlayfs'] });
    await dk('load', '-i', imgs.dockerArchive);
  }, { timeout: 120_000 });
  after(async () => {
    await d?.cleanup();
  });

  test('overlay2 cannot stack on this root: asked for, its start is refused; with no driver asked for, fuse-overlayfs is chosen', async () => {
    await assert.rejects(startDaemon({ dataRootFs: { type: 'overlay', size: '' }, args: ['--storage-driver', 'overlay2'], startTimeoutMs: 20_000 }), /overlay2 is not supported over overlayfs/);
    const chosen = await startDaemon({ dataRootFs: { type: 'overlay', size: '' } });
    try {
      assert.equal(await dockerOk(() => chosen)('info', '--format', '{{.Driver}}'), 'fuse-overlayfs');
      assert.match(chosen.logs(), /the kernel's overlay cannot be used .* using fuse-overlayfs/);
    } finally {
      await chosen.cleanup();
    }
  });

  test('docker info names the driver without status lines', async () => {
    const info = JSON.parse(await dk('info', '--format', '{{json .}}'));
    assert.equal(info.Driver, 'fuse-overlayfs');
    assert.equal(info.DriverStatus, null);
  });

  test('run (root and another user), diff, commit, export, save; removal unmounts', async () => {
    assert.equal(await dk('run', '--name', 'f1', imgs.tag, 'sh', '-c', 'echo hello > /made; rm /bin/true; cat /made'), 'hello');
    assert.equal(await dk('run', '--rm', '--user', '65534', imgs.tag, 'cat', '/etc/hostname').then((x) => x.length > 0), true, 'a non-root user reads the FUSE mount');
    const changes = await dk('diff', 'f1');
    assert.match(changes, /^A \/made$/m);
    assert.match(changes, /^D \/bin\/true$/m);
    const exported = execFileSync('sh', ['-c', `docker -H ${d.dockerHost} export f1 | tar -t`], { encoding: 'utf8' });
    assert.match(exported, /^(\.\/)?made$/m);
    await dk('commit', 'f1', 'fuse-made:1');
    assert.equal(await dk('run', '--rm', 'fuse-made:1', 'cat', '/made'), 'hello');
    assert.notEqual((await docker(d, ['run', '--rm', 'fuse-made:1', 'ls', '/bin/true'])).code, 0, 'the deletion is in the committed layer');
    assert.match(execFileSync('sh', ['-c', `docker -H ${d.dockerHost} save fuse-made:1 | tar -t`], { encoding: 'utf8' }), /manifest\.json/);
    const insp = JSON.parse(await dk('inspect', 'f1'))[0].GraphDriver;
    assert.equal(insp.Name, 'fuse-overlayfs');
    assert.ok(insp.Data.UpperDir && insp.Data.MergedDir);
    await dk('rm', 'f1');
    await dk('rmi', 'fuse-made:1');
    assert.equal(fuseMounts(), 0, 'no FUSE mount left');
  });

  test('storage options: a container\'s refused with a 500 in the reference\'s words; a daemon\'s refused at start', async () => {
    const r = await apiRequest(d, 'POST', '/containers/create', JSON.stringify({ Image: imgs.tag, HostConfig: { StorageOpt: { size: '64M' } } }));
    assert.deepEqual([r.status, r.body.message], [500, '--storage-opt is not supported']);
    await assert.rejects(startDaemon({ args: ['--storage-driver', 'fuse-overlayfs', '--storage-opt', 'fuse-overlayfs.foo=1'], startTimeoutMs: 20_000 }), /fuse-overlayfs: unknown option fuse-overlayfs\.foo/);
  });
});
