// drivers/sys/rootfs-files.ts over a container tree: paths resolved through the mount table,
// symlinks (in a volume too) followed inside the container, archives of a directory holding
// mounts, and extraction refused where the reference refuses it.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import * as tar from 'tar-stream';
import type { ContainerTree, PathMount } from '../../../lib/container-path.ts';
import { isCode } from '../../../lib/errors.ts';
import { archiveFromRoot, containerTree, extractToRoot, resolveInRoot, resolveInTree, statInRoot } from '../../../drivers/sys/rootfs-files.ts';

let dir: string;
let rootfs: string;
let volume: string;
let roDir: string;
let hostnameFile: string;
let tree: ContainerTree;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rootfs-tree-'));
  rootfs = join(dir, 'rootfs');
  volume = join(dir, 'vol', '_data');
  roDir = join(dir, 'ro');
  hostnameFile = join(dir, 'hostname');
  mkdirSync(join(rootfs, 'etc'), { recursive: true });
  mkdirSync(join(rootfs, 'tmp'));
  writeFileSync(join(rootfs, 'etc', 'hostname'), ''); // the empty placeholder of a bind-mounted file
  writeFileSync(join(rootfs, 'etc', 'secret'), 'in-container\n');
  mkdirSync(volume, { recursive: true });
  writeFileSync(join(volume, 'v.txt'), 'volume-file\n');
  symlinkSync('/etc/secret', join(volume, 'abs-link'));
  symlinkSync('../etc/secret', join(volume, 'rel-link'));
  mkdirSync(roDir);
  writeFileSync(join(roDir, 'r.txt'), 'read-only\n');
  writeFileSync(hostnameFile, 'web\n');
  // Where a volume's mount point is a symlink in the image, the runtime mounts on its target.
  symlinkSync('/srv', join(rootfs, 'data'));
  const mounts: PathMount[] = [
    { destination: '/etc/hostname', source: hostnameFile, readOnly: false, kind: 'etc' },
    { destination: '/data', source: volume, readOnly: false, kind: 'volume' },
    { destination: '/mnt/ro', source: roDir, readOnly: true, kind: 'bind' },
  ];
  tree = await containerTree(rootfs, mounts, false);
});
after(() => rmSync(dir, { recursive: true, force: true }));

function tarOf(entries: Array<{ name: string; body?: string; type?: 'directory' | 'file' }>): Readable {
  const pack = tar.pack();
  for (const e of entries) {
    if (e.type === 'directory') pack.entry({ name: e.name, type: 'directory', mode: 0o755 });
    else pack.entry({ name: e.name, mode: 0o644 }, e.body ?? '');
  }
  pack.finalize();
  return Readable.from(pack as AsyncIterable<unknown> as AsyncIterable<Buffer>, { objectMode: false });
}

async function entriesOf(stream: Readable): Promise<Map<string, { type: string; body: string; linkname: string }>> {
  const ex = tar.extract();
  const out = new Map<string, { type: string; body: string; linkname: string }>();
  const reading = (async () => {
    for await (const e of ex) {
      const chunks: Buffer[] = [];
      for await (const c of e) chunks.push(c as Buffer);
      out.set(e.header.name, { type: e.header.type, body: Buffer.concat(chunks).toString(), linkname: e.header.linkname ?? '' });
    }
  })();
  stream.pipe(ex as unknown as NodeJS.WritableStream);
  await reading;
  return out;
}

test('the mount table as the runtime builds it: a destination through an image symlink, missing mount points made in the rootfs', () => {
  assert.deepEqual(tree.mounts.map((m) => m.destination), ['/etc/hostname', '/srv', '/mnt/ro']);
  assert.ok(statSync(join(rootfs, 'srv')).isDirectory());
  assert.ok(statSync(join(rootfs, 'mnt', 'ro')).isDirectory());
});

test('a path maps to the mount it is in, the rootfs otherwise; a bare root keeps the old behaviour', async () => {
  assert.equal((await resolveInTree(tree, '/etc/hostname')).host, hostnameFile);
  assert.equal((await resolveInTree(tree, '/data/v.txt')).host, join(volume, 'v.txt'));
  assert.equal((await resolveInTree(tree, '/data/v.txt')).path, '/srv/v.txt');
  assert.equal((await resolveInTree(tree, '/etc/secret')).host, join(rootfs, 'etc', 'secret'));
  assert.equal((await resolveInTree(tree, '/mnt/ro/new')).readOnly, true);
  assert.equal(await resolveInRoot(rootfs, '/etc/hostname'), join(rootfs, 'etc', 'hostname'));
  assert.equal(await resolveInRoot(rootfs, '/nope/../etc/x'), join(rootfs, 'etc', 'x'));
});

test('symlinks in a volume resolve inside the container, never on the host; .. from a mount root goes to its parent', async () => {
  assert.equal((await resolveInTree(tree, '/data/abs-link')).host, join(rootfs, 'etc', 'secret'));
  assert.equal((await resolveInTree(tree, '/data/rel-link')).host, join(rootfs, 'etc', 'secret'));
  assert.equal((await resolveInTree(tree, '/data/abs-link', false)).host, join(volume, 'abs-link'));
  assert.equal((await resolveInTree(tree, '/mnt/ro/../../etc/hostname')).host, hostnameFile);
  const st = await statInRoot(tree, '/data/abs-link');
  assert.equal(st.linkTarget, '/etc/secret');
  assert.equal((st.mode >>> 27) & 1, 1, 'the symlink bit');
});

test('stat describes the resolved file: the daemon\'s hostname, not the empty placeholder', async () => {
  const st = await statInRoot(tree, '/etc/hostname');
  assert.equal(st.name, 'hostname');
  assert.equal(st.size, 4);
  await assert.rejects(statInRoot(tree, '/data/missing'), (err) => isCode(err, 'NotFound'));
});

test('archives: a file in a mount, a mount root under its own name, a directory holding mounts with their content', async () => {
  const ac = new AbortController();
  const one = await archiveFromRoot(tree, '/etc/hostname', ac.signal);
  assert.deepEqual([...(await entriesOf(one.stream))].map(([n, e]) => [n, e.body]), [['hostname', 'web\n']]);
  // /data is the image's symlink to /srv, where the volume is: archived as the link, as the reference does.
  assert.equal((await entriesOf((await archiveFromRoot(tree, '/data', ac.signal)).stream)).get('data')?.type, 'symlink');
  const v = await entriesOf((await archiveFromRoot(tree, '/srv', ac.signal)).stream);
  assert.equal(v.get('srv/v.txt')?.body, 'volume-file\n');
  assert.equal(v.get('srv/abs-link')?.linkname, '/etc/secret');
  const etc = await entriesOf((await archiveFromRoot(tree, '/etc', ac.signal)).stream);
  assert.equal(etc.get('etc/hostname')?.body, 'web\n');
  assert.equal(etc.get('etc/secret')?.body, 'in-container\n');
  assert.equal(etc.get('etc/')?.type, 'directory');
  // /mnt is not in the image: its mount point shows anyway, with the bind's content.
  const all = await entriesOf((await archiveFromRoot(tree, '/', ac.signal)).stream);
  assert.equal(all.get('./mnt/ro/r.txt')?.body, 'read-only\n');
  assert.equal(all.get('./srv/v.txt')?.body, 'volume-file\n');
  assert.equal(all.get('./data')?.type, 'symlink');
});

const cpOpts = { noOverwriteDirNonDir: true, copyUIDGID: false };

test('extraction lands in the mount the path is in; a bound file is written in place', async () => {
  await extractToRoot(tree, '/data', tarOf([{ name: 'in.txt', body: 'copied\n' }, { name: 'sub/', type: 'directory' }, { name: 'sub/deep.txt', body: 'deep\n' }]), cpOpts, new AbortController().signal);
  assert.equal(readFileSync(join(volume, 'in.txt'), 'utf8'), 'copied\n');
  assert.equal(readFileSync(join(volume, 'sub', 'deep.txt'), 'utf8'), 'deep\n');
  assert.deepEqual(readdirSync(join(rootfs, 'srv')), [], 'nothing under the mount point in the rootfs');
  await extractToRoot(tree, '/etc', tarOf([{ name: 'hostname', body: 'renamed\n' }]), cpOpts, new AbortController().signal);
  assert.equal(readFileSync(hostnameFile, 'utf8'), 'renamed\n');
  await assert.rejects(
    extractToRoot(tree, '/', tarOf([{ name: 'srv', body: 'x' }]), { noOverwriteDirNonDir: false, copyUIDGID: false }, new AbortController().signal),
    /cannot replace mount point "\/srv"/,
  );
  assert.equal(readFileSync(join(volume, 'v.txt'), 'utf8'), 'volume-file\n', 'the volume is untouched');
});

test('extraction into a read-only mount, or the rootfs of a --read-only container, is refused (403) in the reference words', async () => {
  await assert.rejects(extractToRoot(tree, '/mnt/ro', tarOf([{ name: 'x.txt', body: 'x' }]), cpOpts, new AbortController().signal), (err) => {
    assert.ok(isCode(err, 'PermissionDenied'));
    assert.equal((err as Error).message, 'mounted volume is marked read-only');
    return true;
  });
  // An entry leading into the read-only mount from a writable directory is refused too.
  await assert.rejects(extractToRoot(tree, '/mnt', tarOf([{ name: 'ro/y.txt', body: 'y' }]), cpOpts, new AbortController().signal), /mounted volume is marked read-only/);
  assert.equal(existsSync(join(roDir, 'x.txt')) || existsSync(join(roDir, 'y.txt')), false);
  const ro: ContainerTree = { ...tree, readonlyRootfs: true };
  await assert.rejects(extractToRoot(ro, '/tmp', tarOf([{ name: 'z.txt', body: 'z' }]), cpOpts, new AbortController().signal), (err) => {
    assert.ok(isCode(err, 'PermissionDenied'));
    assert.equal((err as Error).message, 'container rootfs is marked read-only');
    return true;
  });
  // A writable volume of a read-only container takes files.
  await extractToRoot(ro, '/data', tarOf([{ name: 'ok.txt', body: 'ok\n' }]), cpOpts, new AbortController().signal);
  assert.equal(readFileSync(join(volume, 'ok.txt'), 'utf8'), 'ok\n');
  // The extraction point is checked first: a missing one is not found, whatever the flags.
  await assert.rejects(extractToRoot(ro, '/nope', tarOf([]), cpOpts, new AbortController().signal), (err) => isCode(err, 'NotFound'));
});
