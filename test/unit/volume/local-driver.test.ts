// The local volume driver on a real directory tree (runs as root): directories and modes, tmpfs and
// bind mounts, copy-up of a container directory, size, removal. Everything is unmounted and deleted in `after`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { LocalVolumeDriver } from '../../../drivers/volume/local.ts';
import { isCode } from '../../../lib/errors.ts';
import { MNT_DETACH, isMountPoint, umountSync } from '../../../drivers/sys/syscalls.ts';

const base = mkdtempSync(join(tmpdir(), 'voltest-'));
const root = join(base, 'volumes');
const driver = new LocalVolumeDriver({ root });
const TMPFS = { type: 'tmpfs', device: 'tmpfs', o: 'size=1m' };

after(() => {
  // Whatever a failed test left mounted under base, deepest first, then the tree.
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((m): m is string => !!m && m.startsWith(base + '/'))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) umountSync(m, MNT_DETACH);
  rmSync(base, { recursive: true, force: true });
});

const mode = (p: string) => statSync(p).mode & 0o7777;

test('ensure creates the directories with the reference modes, once', async () => {
  const first = await driver.ensure('plain');
  assert.deepEqual(first, { mountpoint: join(root, 'plain', '_data'), created: true });
  assert.equal(driver.mountpoint('plain'), first.mountpoint);
  assert.equal(mode(root), 0o701);
  assert.equal(mode(join(root, 'plain')), 0o701);
  assert.equal(mode(first.mountpoint), 0o755);
  assert.deepEqual(await driver.ensure('plain'), { mountpoint: first.mountpoint, created: false });
  assert.equal(await driver.isEmpty('plain'), true);
  assert.equal(await driver.isEmpty('missing'), true);
  // A plain volume: mount only ensures the directory.
  assert.equal(await driver.mount('plain', {}), first.mountpoint);
  assert.equal(await isMountPoint(first.mountpoint), false);
  assert.deepEqual(await driver.list(), ['plain']);
});

test('names that could leave the root are refused', async () => {
  for (const bad of ['../x', 'a/b', '..', '']) {
    await assert.rejects(driver.remove(bad), (err) => isCode(err, 'InvalidArgument'), bad);
    await assert.rejects(driver.ensure(bad), (err) => isCode(err, 'InvalidArgument'), bad);
  }
});

test('tmpfs volume: mount once, unmount, remount, remove while mounted', async () => {
  const mp = await driver.mount('tmp', TMPFS);
  assert.equal(await isMountPoint(mp), true);
  assert.equal(await driver.mount('tmp', TMPFS), mp, 'second mount is a no-op');
  const stacked = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.split(' ')[4] === mp);
  assert.equal(stacked.length, 1, 'mounted exactly once');
  writeFileSync(join(mp, 'f'), 'x'.repeat(1000));
  assert.equal(await driver.size('tmp'), 1000);

  await driver.unmount('tmp');
  assert.equal(await isMountPoint(mp), false);
  assert.equal(existsSync(join(mp, 'f')), false, 'the file lived on the tmpfs');
  await driver.unmount('tmp');

  await Promise.all([driver.mount('tmp', TMPFS), driver.mount('tmp', TMPFS)]);
  const again = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.split(' ')[4] === mp);
  assert.equal(again.length, 1, 'concurrent mounts mount once');
  await driver.remove('tmp');
  assert.equal(await isMountPoint(mp), false);
  assert.equal(existsSync(join(root, 'tmp')), false);
  await driver.remove('tmp');
});

test('bind volume: removing it leaves the host directory alone', async () => {
  const host = join(base, 'host');
  mkdirSync(host);
  writeFileSync(join(host, 'keep'), 'precious');
  const mp = await driver.mount('bound', { type: 'none', device: host, o: 'bind' });
  assert.equal(readFileSync(join(mp, 'keep'), 'utf8'), 'precious');
  await driver.remove('bound');
  assert.equal(readFileSync(join(host, 'keep'), 'utf8'), 'precious');
  assert.equal(existsSync(join(root, 'bound')), false);
});

test('a failed mount says so in the reference wording', async () => {
  await assert.rejects(driver.mount('broken', { type: 'nosuchfs', device: 'x', o: 'password=s3cret' }), (err: Error) => {
    assert.ok(isCode(err, 'Internal'));
    assert.ok(err.message.startsWith(`error while mounting volume '${join(root, 'broken', '_data')}': failed to mount local volume: `), err.message);
    assert.ok(!err.message.includes('s3cret'));
    return true;
  });
  await assert.rejects(driver.mount('broken', { type: 'tmpfs', device: '' }), /error while mounting volume '.*': missing device in volume options/);
  await driver.remove('broken');
});

test('copyUp copies content, owner, mode, symlinks and device nodes, once', async () => {
  const src = join(base, 'rootfs', 'data');
  mkdirSync(join(src, 'sub'), { recursive: true });
  writeFileSync(join(src, 'sub', 'file'), 'hello');
  chownSync(join(src, 'sub', 'file'), 1234, 5678);
  chmodSync(join(src, 'sub', 'file'), 0o640);
  symlinkSync('/etc/passwd', join(src, 'link'));
  execFileSync('mknod', [join(src, 'null'), 'c', '1', '3']);
  chownSync(src, 999, 998);
  chmodSync(src, 0o1770);

  assert.equal(await driver.copyUp(join(base, 'rootfs', 'nope'), 'cu'), false);
  assert.equal(await driver.copyUp(src, 'cu'), true);
  const data = driver.mountpoint('cu');
  assert.equal(readFileSync(join(data, 'sub', 'file'), 'utf8'), 'hello');
  const f = statSync(join(data, 'sub', 'file'));
  assert.deepEqual([f.uid, f.gid, f.mode & 0o7777], [1234, 5678, 0o640]);
  assert.equal(readlinkSync(join(data, 'link')), '/etc/passwd');
  assert.ok(lstatSync(join(data, 'link')).isSymbolicLink());
  assert.ok(lstatSync(join(data, 'null')).isCharacterDevice());
  const d = statSync(data);
  assert.deepEqual([d.uid, d.gid, d.mode & 0o7777], [999, 998, 0o1770]);
  assert.equal(await driver.ensure('cu').then((r) => r.created), false);
  assert.equal(mode(data), 0o1770, 'ensure keeps the copied mode');

  // Not empty any more: a second copy-up does nothing.
  writeFileSync(join(src, 'later'), 'x');
  assert.equal(await driver.copyUp(src, 'cu'), false);
  assert.equal(existsSync(join(data, 'later')), false);
  assert.equal(await driver.size('cu'), 5 + '/etc/passwd'.length, 'a symlink counts its own size; a device nothing');
});

test('copyUp of an empty directory copies only its owner and mode', async () => {
  const src = join(base, 'rootfs', 'empty');
  mkdirSync(src, { recursive: true });
  chownSync(src, 70, 70);
  chmodSync(src, 0o700);
  assert.equal(await driver.copyUp(src, 'pg'), false);
  const d = statSync(driver.mountpoint('pg'));
  assert.deepEqual([d.uid, d.gid, d.mode & 0o7777], [70, 70, 0o700]);
});

test('copyUp into a mounted tmpfs volume, and a crash mid-copy is finished next time', async () => {
  const src = join(base, 'rootfs', 'data');
  const mp = await driver.mount('cutmp', TMPFS);
  writeFileSync(join(mp, 'partial'), 'p');
  writeFileSync(join(root, 'cutmp', 'copyup.pending'), '');
  assert.equal(await driver.copyUp(src, 'cutmp'), true);
  assert.equal(readFileSync(join(mp, 'sub', 'file'), 'utf8'), 'hello');
  assert.equal(existsSync(join(root, 'cutmp', 'copyup.pending')), false);
  assert.equal(await driver.copyUp(src, 'cutmp'), false);
  await driver.remove('cutmp');
  assert.equal(existsSync(join(root, 'cutmp')), false);
});

test('remove never follows a symlink out of the root', async () => {
  const outside = join(base, 'outside');
  mkdirSync(join(outside, '_data'), { recursive: true });
  writeFileSync(join(outside, '_data', 'keep'), 'k');
  symlinkSync(outside, join(root, 'evil'));
  assert.equal((await driver.list()).includes('evil'), false, 'a symlink is not a volume directory');
  await driver.remove('evil');
  assert.equal(existsSync(join(root, 'evil')), false);
  assert.equal(readFileSync(join(outside, '_data', 'keep'), 'utf8'), 'k');

  await driver.ensure('inner');
  rmSync(driver.mountpoint('inner'), { recursive: true });
  symlinkSync(join(outside, '_data'), driver.mountpoint('inner'));
  await assert.rejects(driver.ensure('inner'));
  await driver.remove('inner');
  assert.equal(readFileSync(join(outside, '_data', 'keep'), 'utf8'), 'k');
  assert.equal(existsSync(join(root, 'inner')), false);
});
