import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmod, chown, lstat, mkdir, mkdtemp, readFile, readlink, readdir, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import tarStream from 'tar-stream';
import type { Header } from 'tar-stream';
import { copyInto, resolveSources, sourcesChecksum, resolveInRoot, type CopyOptions } from '../../../drivers/builder/copy.ts';
import { segmentRegExp } from '../../../drivers/builder/copy-paths.ts';

const temps: string[] = [];
after(async () => {
  for (const t of temps) await rm(t, { recursive: true, force: true });
});

const T0 = new Date('2020-01-02T03:04:05Z');

type Tree = Record<string, string | { link: string } | { dir: true; mode?: number } | { data: string; mode?: number }>;

async function build(root: string, tree: Tree): Promise<void> {
  for (const [rel, v] of Object.entries(tree)) {
    const p = join(root, rel);
    await mkdir(dirname(p), { recursive: true });
    if (typeof v === 'string') {
      await writeFile(p, v);
      await chmod(p, 0o644);
      await utimes(p, T0, T0);
    } else if ('link' in v) {
      await symlink(v.link, p);
    } else if ('dir' in v) {
      await mkdir(p, { recursive: true });
      if (v.mode !== undefined) await chmod(p, v.mode);
    } else {
      await writeFile(p, v.data);
      await chmod(p, v.mode ?? 0o644);
      await utimes(p, T0, T0);
    }
  }
}

/** A fresh case: the context (owned by 1234:1234, to show owners are not kept) and an empty rootfs. */
async function fixture(src: Tree, dest: Tree = {}) {
  const base = await mkdtemp(join(tmpdir(), 'copy-test-'));
  temps.push(base);
  const srcRoot = join(base, 'ctx');
  const destRoot = join(base, 'rootfs');
  await mkdir(srcRoot);
  await mkdir(destRoot);
  await build(srcRoot, src);
  await build(destRoot, dest);
  for (const name of await readdir(srcRoot, { recursive: true })) await chown(join(srcRoot, name), 1234, 1234).catch(() => {});
  const run = async (sources: string[], destPath: string, more: Partial<CopyOptions> = {}) => {
    const o: CopyOptions = { instruction: 'COPY', srcRoot, sources, dest: destPath, workdir: '', destRoot, unpack: false, ...more };
    await copyInto(o, await resolveSources(o));
  };
  const errOf = async (sources: string[], destPath: string, more: Partial<CopyOptions> = {}) => {
    try {
      await run(sources, destPath, more);
    } catch (err) {
      return (err as Error).message;
    }
    assert.fail('expected an error');
  };
  const read = (p: string) => readFile(join(destRoot, p), 'utf8');
  const meta = async (p: string) => {
    const st = await lstat(join(destRoot, p));
    return `${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid}`;
  };
  return { base, srcRoot, destRoot, run, errOf, read, meta };
}

test('a file to a new file name, parents created 0755 root-owned, mode and mtime kept, owner not', async () => {
  const f = await fixture({ 'a.sh': { data: 'echo a', mode: 0o751 } });
  await f.run(['a.sh'], '/usr/local/bin/run');
  assert.equal(await f.read('usr/local/bin/run'), 'echo a');
  assert.equal(await f.meta('usr/local/bin/run'), '751 0:0');
  assert.equal(await f.meta('usr/local'), '755 0:0');
  assert.equal((await stat(join(f.destRoot, 'usr/local/bin/run'))).mtime.getTime(), T0.getTime());
  // Overwritten in place by a second copy.
  await writeFile(join(f.srcRoot, 'a.sh'), 'echo b');
  await f.run(['/a.sh'], '/usr/local/bin/run');
  assert.equal(await f.read('usr/local/bin/run'), 'echo b');
});

test('a file into an existing directory, or into one named with a trailing slash', async () => {
  const f = await fixture({ 'a.txt': 'A' }, { 'etc/app': { dir: true, mode: 0o700 } });
  await f.run(['a.txt'], '/etc/app');
  assert.equal(await f.read('etc/app/a.txt'), 'A');
  assert.equal(await f.meta('etc/app'), '700 0:0');
  await f.run(['./a.txt'], '/opt/new/');
  assert.equal(await f.read('opt/new/a.txt'), 'A');
  await f.run(['a.txt'], '/srv/.');
  assert.equal(await f.read('srv/a.txt'), 'A');
});

test('a directory copies its contents; symlinks inside stay symlinks; an existing dest keeps its mode', async () => {
  const f = await fixture(
    { 'd/x': 'X', 'd/sub/y': { data: 'Y', mode: 0o600 }, 'd/sub': { dir: true, mode: 0o750 }, 'd/l': { link: '/etc/passwd' } },
    { 'app': { dir: true, mode: 0o711 }, 'app/sub/y': 'old', 'app/keep': 'K' },
  );
  await f.run(['d'], '/app');
  assert.equal(await f.read('app/x'), 'X');
  assert.equal(await f.read('app/sub/y'), 'Y');
  assert.equal(await f.read('app/keep'), 'K');
  assert.equal(await f.meta('app'), '711 0:0');
  assert.equal(await f.meta('app/sub'), '750 0:0');
  assert.equal(await f.meta('app/sub/y'), '600 0:0');
  assert.equal(await readlink(join(f.destRoot, 'app/l')), '/etc/passwd');
  // A new dest directory is created, and "." copies the whole context.
  await f.run(['.'], '/all');
  assert.equal(await f.read('all/d/sub/y'), 'Y');
  assert.equal(await f.meta('all'), '755 0:0');
});

test('wildcards match per path segment; several matches need a directory dest', async () => {
  const f = await fixture({ 'a.txt': 'a', 'b.txt': 'b', 'c.md': 'c', 'sub/d.txt': 'd', 'sub/e.txt': 'e' });
  await f.run(['*.txt'], '/out/');
  assert.deepEqual((await readdir(join(f.destRoot, 'out'))).sort(), ['a.txt', 'b.txt']);
  await f.run(['[a-b].txt', '?.md'], '/two/');
  assert.deepEqual((await readdir(join(f.destRoot, 'two'))).sort(), ['a.txt', 'b.txt', 'c.md']);
  await f.run(['s*/d.*'], '/one');
  assert.equal(await f.read('one'), 'd');
  await f.run(['[^a-b].*'], '/neg/');
  assert.deepEqual(await readdir(join(f.destRoot, 'neg')), ['c.md']);
  assert.equal(
    await f.errOf(['*.txt'], '/out'),
    'When using COPY with more than one source file, the destination must be a directory and end with a /',
  );
  assert.equal(await f.errOf(['*.none'], '/x/'), 'COPY failed: no source files were specified');
});

test('several sources, with and without a trailing slash on the dest', async () => {
  const f = await fixture({ 'a': 'A', 'b': 'B', 'd/c': 'C' });
  await f.run(['a', 'b', 'd'], '/m/');
  assert.deepEqual((await readdir(join(f.destRoot, 'm'))).sort(), ['a', 'b', 'c']);
  assert.equal(
    await f.errOf(['a', 'b'], '/m'),
    'When using COPY with more than one source file, the destination must be a directory and end with a /',
  );
  assert.equal(
    await f.errOf(['a', 'b'], '.', { instruction: 'ADD' }),
    'When using ADD with more than one source file, the destination must be a directory and end with a /',
  );
});

test('a relative dest is under WORKDIR', async () => {
  const f = await fixture({ 'a': 'A' });
  await f.run(['a'], 'b', { workdir: '/srv/app' });
  assert.equal(await f.read('srv/app/b'), 'A');
  await f.run(['a'], '.', { workdir: '/w' });
  assert.equal(await f.read('w/a'), 'A');
  await f.run(['a'], 'rel/', { workdir: '' });
  assert.equal(await f.read('rel/a'), 'A');
});

test('missing and escaping sources; context symlinks followed only inside the context', async () => {
  const f = await fixture({ 'real': 'R', 'ln': { link: 'real' }, 'abs': { link: '/real' }, 'out': { link: '../secret' }, 'outabs': { link: '/../secret' } });
  await writeFile(join(f.base, 'secret'), 'S');
  const missing = (p: string, i = 'COPY') =>
    `${i} failed: file not found in build context or excluded by .dockerignore: stat ${p}: file does not exist`;
  assert.equal(await f.errOf(['nope'], '/x'), missing('nope'));
  assert.equal(await f.errOf(['/dir/nope'], '/x', { instruction: 'ADD' }), missing('dir/nope', 'ADD'));
  assert.equal(await f.errOf(['../secret'], '/x'), 'COPY failed: forbidden path outside the build context: ../secret ()');
  assert.equal(await f.errOf(['a/../../secret'], '/x'), 'COPY failed: forbidden path outside the build context: a/../../secret ()');
  // Symlinks out of the context resolve inside it, where there is nothing.
  assert.equal(await f.errOf(['out'], '/x'), missing('out'));
  assert.equal(await f.errOf(['outabs'], '/x'), missing('outabs'));
  // A symlink named as a source is followed, and the copy takes the symlink's name.
  await f.run(['ln', 'abs'], '/d/');
  assert.equal(await f.read('d/ln'), 'R');
  assert.equal((await lstat(join(f.destRoot, 'd/abs'))).isFile(), true);
});

test('resolveInRoot follows symlinks but never leaves the root', async () => {
  const f = await fixture({}, { 'etc/f': 'F', 'x': { link: '/etc' }, 'up': { link: '../../..' }, 'rel': { link: 'etc/../x' }, 'loop': { link: 'loop' } });
  const r = f.destRoot;
  assert.equal(await resolveInRoot(r, '/x/f'), join(r, 'etc/f'));
  assert.equal(await resolveInRoot(r, '/up/etc'), join(r, 'etc'));
  assert.equal(await resolveInRoot(r, '/../../x/../rel/new/file'), join(r, 'etc/new/file'));
  assert.equal(await resolveInRoot(r, 'missing/../x'), join(r, 'etc'));
  // The path is cleaned before any link is followed; a link target's `..` applies after it.
  assert.equal(await resolveInRoot(r, '/x/../f'), join(r, 'f'));
  assert.equal(await resolveInRoot(r, '/x/f/../../etc/f'), join(r, 'etc/f'));
  assert.equal(await resolveInRoot(r, '/rel'), join(r, 'etc'));
  await assert.rejects(resolveInRoot(r, '/loop/a'), /too many levels of symbolic links/);
});

test('writes through rootfs symlinks land inside the rootfs', async () => {
  const f = await fixture({ 'f': 'F', 'd/g': 'G' }, { 'etc': { dir: true }, 'x': { link: '/etc' }, 'up': { link: '../../../..' }, 'passwd': { link: '/../../etc/pw' } });
  const before = await readdir(f.base);
  await f.run(['f'], '/x/f');
  assert.equal(await f.read('etc/f'), 'F');
  await f.run(['f'], '/up/evil');
  assert.equal(await f.read('evil'), 'F');
  await f.run(['d'], '/up/tmp/');
  assert.equal(await f.read('tmp/g'), 'G');
  // A dangling symlink as the dest: the file is written at its target, inside the rootfs.
  await f.run(['f'], '/passwd');
  assert.equal(await f.read('etc/pw'), 'F');
  assert.deepEqual(await readdir(f.base), before);
});

test('--chown by name and by id; unknown names refused', async () => {
  const f = await fixture({ 'a': 'A', 'd/b': 'B' }, {
    'etc/passwd': 'root:x:0:0:root:/root:/bin/sh\nbob:x:1001:1002::/home/bob:/bin/sh\n',
    'etc/group': 'root:x:0:\nstaff:x:50:bob\n',
  });
  await f.run(['a'], '/o/p/a', { chown: 'bob' });
  assert.equal(await f.meta('o/p/a'), '644 1001:1002');
  assert.equal(await f.meta('o'), '755 1001:1002');
  await f.run(['d'], '/dd', { chown: 'bob:staff' });
  assert.equal(await f.meta('dd'), '755 1001:50');
  assert.equal(await f.meta('dd/b'), '644 1001:50');
  await f.run(['a'], '/n1', { chown: '42' });
  assert.equal(await f.meta('n1'), '644 42:42');
  await f.run(['a'], '/n2', { chown: '42:7' });
  assert.equal(await f.meta('n2'), '644 42:7');
  await f.run(['a'], '/n3', { chown: '5:staff' });
  assert.equal(await f.meta('n3'), '644 5:50');
  assert.equal(await f.errOf(['a'], '/e', { chown: 'alice' }), 'unable to find user alice: no matching entries in passwd file');
  assert.equal(await f.errOf(['a'], '/e', { chown: 'bob:wheel' }), 'unable to find group wheel: no matching entries in group file');
  assert.equal(await f.errOf(['a'], '/e', { chown: 'a:b:c' }), 'invalid chown string format: a:b:c');
});

test('--chmod applies to the files and directories copied', async () => {
  const f = await fixture({ 'a': 'A', 'd/b': 'B', 'd/s/c': 'C' });
  await f.run(['a'], '/a', { chmod: '755' });
  assert.equal(await f.meta('a'), '755 0:0');
  await f.run(['d'], '/dd/', { chmod: '0700' });
  assert.equal(await f.meta('dd'), '700 0:0');
  assert.equal(await f.meta('dd/s'), '700 0:0');
  assert.equal(await f.meta('dd/s/c'), '700 0:0');
  assert.match(await f.errOf(['a'], '/z', { chmod: '9x' }), /invalid chmod parameter/);
});

async function tarOf(entries: (Partial<Header> & { name: string; data?: string })[]): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const { data, ...h } of entries) {
    const header = { type: data === undefined ? 'directory' : 'file', mode: 0o644, mtime: T0, uid: 1000, gid: 1000, ...h } as Header;
    if (data !== undefined) pack.entry(header, data);
    else pack.entry(header);
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

test('ADD extracts a local tar archive (gzip, bzip2, xz, plain); other files are copied', async () => {
  const tar = await tarOf([
    { name: 'pkg/', mode: 0o750 },
    { name: 'pkg/bin', data: 'BIN', mode: 0o755 },
    { name: 'pkg/ln', type: 'symlink', linkname: 'bin' },
    { name: 'pkg/hard', type: 'link', linkname: 'pkg/bin' },
  ]);
  const f = await fixture({ 'plain.txt': 'just text' });
  await writeFile(join(f.srcRoot, 'a.tar.gz'), gzipSync(tar));
  await writeFile(join(f.srcRoot, 'a.tar'), tar);
  await writeFile(join(f.srcRoot, 'a.tar.bz2'), spawnSync('bzip2', ['-c'], { input: tar }).stdout);
  await writeFile(join(f.srcRoot, 'a.tar.xz'), spawnSync('xz', ['-c'], { input: tar }).stdout);
  await writeFile(join(f.srcRoot, 'notatar.gz'), gzipSync('hello'));
  await f.run(['a.tar.gz'], '/opt', { instruction: 'ADD', unpack: true });
  assert.equal(await f.read('opt/pkg/bin'), 'BIN');
  assert.equal(await f.meta('opt/pkg'), '750 0:0');
  assert.equal(await f.meta('opt/pkg/bin'), '755 0:0');
  assert.equal((await stat(join(f.destRoot, 'opt/pkg/bin'))).mtime.getTime(), T0.getTime());
  assert.equal((await stat(join(f.destRoot, 'opt/pkg'))).mtime.getTime(), T0.getTime());
  assert.equal(await readlink(join(f.destRoot, 'opt/pkg/ln')), 'bin');
  assert.equal((await stat(join(f.destRoot, 'opt/pkg/hard'))).ino, (await stat(join(f.destRoot, 'opt/pkg/bin'))).ino);
  for (const name of ['a.tar', 'a.tar.bz2', 'a.tar.xz']) {
    await f.run([name], `/x/${name}`, { instruction: 'ADD', unpack: true, chown: '7:8' });
    assert.equal(await f.read(`x/${name}/pkg/bin`), 'BIN');
    assert.equal(await f.meta(`x/${name}/pkg/bin`), '755 7:8');
  }
  await f.run(['plain.txt', 'notatar.gz'], '/p/', { instruction: 'ADD', unpack: true });
  assert.equal(await f.read('p/plain.txt'), 'just text');
  assert.deepEqual(await readFile(join(f.destRoot, 'p/notatar.gz')), gzipSync('hello'));
  // COPY never extracts.
  await f.run(['a.tar.gz'], '/c/', { unpack: false });
  assert.equal((await lstat(join(f.destRoot, 'c/a.tar.gz'))).isFile(), true);
});

test('ADD refuses archive entries that leave the destination', async () => {
  const f = await fixture({});
  await writeFile(join(f.srcRoot, 'evil.tar'), await tarOf([{ name: 'ok', data: 'ok' }, { name: '../../escape', data: 'x' }]));
  assert.match(await f.errOf(['evil.tar'], '/opt/', { instruction: 'ADD', unpack: true }), /outside of the destination/);
  assert.deepEqual((await readdir(f.base)).sort(), ['ctx', 'rootfs']);
  // A symlink entry is written as is, and writes through it stay inside the rootfs.
  await writeFile(join(f.srcRoot, 'link.tar'), await tarOf([{ name: 'l', type: 'symlink', linkname: '/' }, { name: 'l/../../via', data: 'v' }]));
  assert.match(await f.errOf(['link.tar'], '/opt/', { instruction: 'ADD', unpack: true }), /outside of the destination/);
  await writeFile(join(f.srcRoot, 'link2.tar'), await tarOf([{ name: 'l', type: 'symlink', linkname: '../../../..' }, { name: 'l/via', data: 'v' }]));
  await f.run(['link2.tar'], '/opt/', { instruction: 'ADD', unpack: true });
  assert.equal(await f.read('via'), 'v');
});

test('checksum: stable, follows content, names and modes, not mtimes or owners', async () => {
  const f = await fixture({ 'a': 'A', 'b': 'B', 'd/x': 'X', 'd/l': { link: 'x' } });
  const sum = async (sources: string[]) => sourcesChecksum(await resolveSources({ instruction: 'COPY', srcRoot: f.srcRoot, sources }));
  const a1 = await sum(['a']);
  assert.match(a1, /^file:[0-9a-f]{64}$/);
  assert.equal(await sum(['a']), a1);
  assert.match(await sum(['d']), /^dir:[0-9a-f]{64}$/);
  assert.match(await sum(['a', 'b']), /^multi:[0-9a-f]{64}$/);
  const d1 = await sum(['d']);
  const m1 = await sum(['a', 'b']);
  await utimes(join(f.srcRoot, 'a'), new Date(), new Date());
  await chown(join(f.srcRoot, 'd/x'), 5, 5);
  assert.equal(await sum(['a']), a1);
  assert.equal(await sum(['d']), d1);
  await writeFile(join(f.srcRoot, 'a'), 'A2');
  assert.notEqual(await sum(['a']), a1);
  assert.notEqual(await sum(['a', 'b']), m1);
  await chmod(join(f.srcRoot, 'd/x'), 0o600);
  const d2 = await sum(['d']);
  assert.notEqual(d2, d1);
  await writeFile(join(f.srcRoot, 'd/y'), '');
  assert.notEqual(await sum(['d']), d2);
});

test('an aborted copy stops before writing', async () => {
  const f = await fixture({ 'd/a': 'A' });
  await assert.rejects(f.run(['d'], '/out/', { signal: AbortSignal.abort() }), { name: 'AbortError' });
  assert.deepEqual(await readdir(f.destRoot), []);
});

test('Go filepath.Match segments', () => {
  const m = (pat: string, name: string) => segmentRegExp(pat)?.test(name) ?? 'bad';
  assert.equal(m('*.go', 'a.go'), true);
  assert.equal(m('a?c', 'abc'), true);
  assert.equal(m('a?c', 'ac'), false);
  assert.equal(m('[a-c]x', 'bx'), true);
  assert.equal(m('[^a-c]x', 'bx'), false);
  assert.equal(m('[^a-c]x', 'dx'), true);
  assert.equal(m('\\*', '*'), true);
  assert.equal(m('\\*', 'a'), false);
  assert.equal(m('[\\]]', ']'), true);
  assert.equal(m('a.b', 'axb'), false);
  assert.equal(m('(x)+', '(x)+'), true);
  assert.equal(m('[', 'a'), 'bad');
  assert.equal(m('[]', 'a'), 'bad');
  assert.equal(m('[-]', '-'), 'bad');
  assert.equal(m('a\\', 'a'), 'bad');
});
