import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync, zstdCompressSync } from 'node:zlib';
import { openContext } from '../../../drivers/builder/context.ts';
import { encodeHeader, endOfArchive, padding, type TarWriteHeader } from '../../../drivers/storage/tar-writer.ts';
import { errorCode } from '../../../lib/errors.ts';

interface Entry {
  name: string;
  type?: TarWriteHeader['type'];
  data?: string | Buffer;
  linkname?: string;
  mode?: number;
  mtime?: number;
}

function tarOf(entries: Entry[], end = true): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const type = e.type ?? 'file';
    const data = Buffer.from(e.data ?? '');
    const size = type === 'file' ? data.length : 0;
    parts.push(encodeHeader({
      name: e.name, type, mode: e.mode ?? (type === 'dir' ? 0o755 : 0o644), uid: 0, gid: 0, size,
      mtime: e.mtime ?? 1_600_000_000, linkname: e.linkname,
    }));
    if (size) parts.push(data, padding(size));
  }
  if (end) parts.push(endOfArchive());
  return Buffer.concat(parts);
}

const bodyOf = (b: Buffer) => Readable.from(b.length ? [b] : [], { objectMode: false });
const compressWith = (cmd: string, b: Buffer) => spawnSync(cmd, ['-c'], { input: b, maxBuffer: 64 << 20 }).stdout;

async function withTmp(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ctx-test-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Every path under dir, relative, sorted (directories with a trailing slash). */
function tree(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const ent of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${ent.name}` : ent.name;
    if (ent.isDirectory()) out.push(`${r}/`, ...tree(dir, r));
    else out.push(r);
  }
  return out.sort();
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  assert.fail('expected a rejection');
}

const DF = 'FROM scratch\nCOPY . /\n';

test('a plain tar: files, directories, symlinks, hardlinks with modes and mtimes; close removes it', async () => {
  await withTmp(async (tmp) => {
    const ctx = await openContext(bodyOf(tarOf([
      { name: './', type: 'dir', mode: 0o700 },
      { name: 'Dockerfile', data: DF },
      { name: 'bin/', type: 'dir', mode: 0o750, mtime: 1_500_000_000 },
      { name: 'bin/run.sh', data: '#!/bin/sh\n', mode: 0o4755, mtime: 1_400_000_000 },
      { name: 'ro/', type: 'dir', mode: 0o555, mtime: 1_300_000_000 },
      { name: 'ro/file', data: 'x', mode: 0o600 },
      { name: 'implied/parent/file', data: 'deep' },
      { name: 'link', type: 'symlink', linkname: 'bin/run.sh' },
      { name: 'abs-link', type: 'symlink', linkname: '/etc/passwd' },
      { name: 'hard', type: 'link', linkname: 'bin/run.sh' },
      { name: 'fifo', type: 'fifo' },
      { name: 'dev', type: 'char' },
      { name: '/rooted.txt', data: 'a leading slash is the root' },
    ])), { tmpDir: tmp });
    assert.ok(ctx.root.startsWith(`${tmp}/`));
    assert.equal(ctx.dockerfileName, 'Dockerfile');
    assert.equal(ctx.dockerfile, DF);
    assert.deepEqual(tree(ctx.root), [
      'Dockerfile', 'abs-link', 'bin/', 'bin/run.sh', 'hard', 'implied/', 'implied/parent/', 'implied/parent/file',
      'link', 'ro/', 'ro/file', 'rooted.txt',
    ]);
    const run = statSync(join(ctx.root, 'bin/run.sh'));
    assert.equal(run.mode & 0o7777, 0o755, 'permission bits kept, setuid dropped');
    assert.equal(run.mtimeMs, 1_400_000_000_000);
    assert.equal(statSync(join(ctx.root, 'bin')).mode & 0o7777, 0o750);
    assert.equal(statSync(join(ctx.root, 'bin')).mtimeMs, 1_500_000_000_000, 'directory mtime survives writes below it');
    assert.equal(statSync(join(ctx.root, 'ro')).mode & 0o7777, 0o555);
    assert.equal(statSync(join(ctx.root, 'ro')).mtimeMs, 1_300_000_000_000);
    assert.equal(statSync(join(ctx.root, 'ro/file')).mode & 0o7777, 0o600);
    assert.equal(readlinkSync(join(ctx.root, 'link')), 'bin/run.sh');
    assert.equal(readlinkSync(join(ctx.root, 'abs-link')), '/etc/passwd');
    assert.equal(lstatSync(join(ctx.root, 'link')).mtimeMs, 1_600_000_000_000);
    assert.equal(statSync(join(ctx.root, 'hard')).ino, run.ino);
    assert.equal(readFileSync(join(ctx.root, 'rooted.txt'), 'utf8'), 'a leading slash is the root');
    await ctx.close();
    assert.equal(existsSync(ctx.root), false);
    await ctx.close();
  });
});

test('gzip, bzip2, xz and zstd bodies are sniffed and decompressed', async () => {
  const tar = tarOf([{ name: 'Dockerfile', data: DF }, { name: 'big.bin', data: Buffer.alloc(300_000, 7) }]);
  const bodies: Record<string, Buffer> = {
    gzip: gzipSync(tar),
    bzip2: compressWith('bzip2', tar),
    xz: compressWith('xz', tar),
    zstd: zstdCompressSync(tar),
  };
  await withTmp(async (tmp) => {
    for (const [kind, b] of Object.entries(bodies)) {
      // Fed in small chunks, so the magic bytes and the archive arrive split.
      const chunks: Buffer[] = [];
      for (let i = 0; i < b.length; i += 3) chunks.push(b.subarray(i, i + 3));
      const ctx = await openContext(Readable.from(chunks, { objectMode: false }), { tmpDir: tmp });
      assert.equal(ctx.dockerfile, DF, kind);
      assert.equal(statSync(join(ctx.root, 'big.bin')).size, 300_000, kind);
      await ctx.close();
    }
    assert.deepEqual(await readdir(tmp), []);
  });
});

test('the Dockerfile: lowercase fallback for the default name only, nested paths, exact missing message', async () => {
  await withTmp(async (tmp) => {
    const lower = await openContext(bodyOf(tarOf([{ name: 'dockerfile', data: 'FROM a' }])), { tmpDir: tmp });
    assert.equal(lower.dockerfileName, 'dockerfile');
    assert.equal(lower.dockerfile, 'FROM a');
    await lower.close();

    const both = await openContext(bodyOf(tarOf([{ name: 'dockerfile', data: 'lower' }, { name: 'Dockerfile', data: 'upper' }])), { tmpDir: tmp });
    assert.equal(both.dockerfile, 'upper');
    await both.close();

    const nested = tarOf([{ name: 'build/Dockerfile.dev', data: 'FROM b\r\n' }, { name: 'build/dockerfile.dev', data: 'no' }]);
    for (const name of ['build/Dockerfile.dev', './build/Dockerfile.dev', '/build/Dockerfile.dev', 'build//./Dockerfile.dev']) {
      const ctx = await openContext(bodyOf(nested), { tmpDir: tmp, dockerfile: name });
      assert.equal(ctx.dockerfileName, 'build/Dockerfile.dev', name);
      assert.equal(ctx.dockerfile, 'FROM b\r\n', 'read as is');
      await ctx.close();
    }

    // A Dockerfile that is a symlink is followed, but never out of the context.
    const linked = await openContext(bodyOf(tarOf([{ name: 'real', data: 'FROM c' }, { name: 'Dockerfile', type: 'symlink', linkname: '/real' }])), { tmpDir: tmp });
    assert.equal(linked.dockerfile, 'FROM c');
    await linked.close();
    const escaping = await rejection(openContext(bodyOf(tarOf([{ name: 'Dockerfile', type: 'symlink', linkname: '../../../../../etc/hostname' }])), { tmpDir: tmp }));
    assert.equal(escaping.message, 'Cannot locate specified Dockerfile: Dockerfile');

    for (const [entries, opts, msg] of [
      [[{ name: 'x', data: '' }], {}, 'Cannot locate specified Dockerfile: Dockerfile'],
      [[{ name: 'dockerfile.dev', data: '' }], { dockerfile: 'Dockerfile.dev' }, 'Cannot locate specified Dockerfile: Dockerfile.dev'],
      [[{ name: 'dockerfile', data: '' }], { dockerfile: './sub/Dockerfile' }, 'Cannot locate specified Dockerfile: ./sub/Dockerfile'],
      [[{ name: 'Dockerfile/', type: 'dir' }], {}, 'Cannot locate specified Dockerfile: Dockerfile'],
    ] as Array<[Entry[], { dockerfile?: string }, string]>) {
      const err = await rejection(openContext(bodyOf(tarOf(entries)), { tmpDir: tmp, ...opts }));
      assert.equal(err.message, msg);
      assert.equal(errorCode(err), 'InvalidArgument');
    }
    // An empty body is an empty context.
    const empty = await rejection(openContext(bodyOf(Buffer.alloc(0)), { tmpDir: tmp }));
    assert.equal(empty.message, 'Cannot locate specified Dockerfile: Dockerfile');
    assert.deepEqual(await readdir(tmp), [], 'every failure removes its directory');
  });
});

test('.dockerignore: `**`, directories, `!` exceptions; the Dockerfile is read, then removed when matched', async () => {
  const ignore = [
    '# build output',
    'node_modules',
    '**/*.log',
    'build',
    '!build/keep.txt',
    'secret/',
    'Dockerfile',
    '.dockerignore',
  ].join('\n');
  await withTmp(async (tmp) => {
    const ctx = await openContext(bodyOf(tarOf([
      { name: 'Dockerfile', data: DF },
      { name: 'node_modules/a/b.js', data: 'x' },
      { name: 'a.log', data: 'x' },
      { name: 'src/x.log', data: 'x' },
      { name: 'src/deep/y.log', data: 'x' },
      { name: 'src/main.ts', data: 'x' },
      { name: 'build/out.bin', data: 'x' },
      { name: 'build/sub/more.bin', data: 'x' },
      { name: 'build/keep.txt', data: 'kept' },
      { name: 'secret/key', data: 'x' },
      { name: 'secretary.txt', data: 'x' },
      // Last in the archive: it applies to everything before it too.
      { name: '.dockerignore', data: ignore },
    ])), { tmpDir: tmp });
    assert.equal(ctx.dockerfile, DF);
    assert.deepEqual(tree(ctx.root), ['build/', 'build/keep.txt', 'secretary.txt', 'src/', 'src/deep/', 'src/main.ts']);
    await ctx.close();

    // Not matched: both stay.
    const kept = await openContext(bodyOf(tarOf([
      { name: '.dockerignore', data: '*.tmp\n' },
      { name: 'Dockerfile', data: DF },
      { name: 'x.tmp', data: '' },
    ])), { tmpDir: tmp });
    assert.deepEqual(tree(kept.root), ['.dockerignore', 'Dockerfile']);
    await kept.close();

    // A nested Dockerfile matched through its directory.
    const nested = await openContext(bodyOf(tarOf([
      { name: '.dockerignore', data: 'docker\n' },
      { name: 'docker/Dockerfile', data: 'FROM d' },
      { name: 'app.js', data: '' },
    ])), { tmpDir: tmp, dockerfile: 'docker/Dockerfile' });
    assert.equal(nested.dockerfile, 'FROM d');
    assert.deepEqual(tree(nested.root), ['.dockerignore', 'app.js']);
    await nested.close();

    const bad = await rejection(openContext(bodyOf(tarOf([{ name: '.dockerignore', data: '[\n' }, { name: 'Dockerfile', data: DF }])), { tmpDir: tmp }));
    assert.equal(errorCode(bad), 'InvalidArgument');
    assert.match(bad.message, /^invalid \.dockerignore: /);
    assert.deepEqual(await readdir(tmp), []);
  });
});

test('entries escaping the root, or written through a symlink of the tree, are refused', async () => {
  await withTmp(async (tmp) => {
    const outside = join(tmp, 'outside');
    const work = join(tmp, 'work');
    await mkdir(outside, { mode: 0o755 });
    await mkdir(work);
    const cases: Array<[string, Entry[], RegExp]> = [
      ['dot-dot', [{ name: '../../escaped', data: 'x' }], /escapes the context/],
      ['inner dot-dot', [{ name: 'a/../../escaped', data: 'x' }], /escapes the context/],
      ['symlink parent', [{ name: 'a', type: 'symlink', linkname: outside }, { name: 'a/passwd', data: 'pwned' }], /below the symlink a/],
      ['relative symlink parent', [{ name: 'd/', type: 'dir' }, { name: 'd/l', type: 'symlink', linkname: '../../outside' }, { name: 'd/l/x/y', data: 'pwned' }], /below the symlink d\/l/],
      ['symlink dir entry', [{ name: 'a', type: 'symlink', linkname: outside }, { name: 'a/sub/', type: 'dir' }], /below the symlink a/],
      ['hardlink out', [{ name: 'h', type: 'link', linkname: '../../etc/passwd' }], /escapes the context/],
      ['hardlink through symlink', [{ name: 'a', type: 'symlink', linkname: '/etc' }, { name: 'h', type: 'link', linkname: 'a/passwd' }], /below the symlink a/],
      ['hardlink to nothing', [{ name: 'h', type: 'link', linkname: 'missing' }], /not a file of the context/],
      ['file below a file', [{ name: 'f', data: 'x' }, { name: 'f/g', data: 'x' }], /f is not a directory/],
    ];
    for (const [what, entries, re] of cases) {
      const err = await rejection(openContext(bodyOf(tarOf([{ name: 'Dockerfile', data: DF }, ...entries])), { tmpDir: work }));
      assert.equal(errorCode(err), 'InvalidArgument', what);
      assert.match(err.message, re, what);
      assert.deepEqual(await readdir(work), [], `${what}: directory removed`);
    }
    assert.deepEqual(await readdir(outside), []);
    assert.equal(existsSync(join(tmp, 'escaped')), false);

    // A symlink replaced by a directory entry later is a fresh directory, and a directory
    // replaced by a symlink takes nothing of the old directory's metadata through it.
    const ctx = await openContext(bodyOf(tarOf([
      { name: 'Dockerfile', data: DF },
      { name: 'a', type: 'symlink', linkname: outside },
      { name: 'a/', type: 'dir', mode: 0o700 },
      { name: 'a/file', data: 'inside' },
      { name: 'b/', type: 'dir', mode: 0o777 },
      { name: 'b', type: 'symlink', linkname: outside },
    ])), { tmpDir: work });
    assert.ok(lstatSync(join(ctx.root, 'a')).isDirectory());
    assert.equal(readFileSync(join(ctx.root, 'a/file'), 'utf8'), 'inside');
    assert.equal(readlinkSync(join(ctx.root, 'b')), outside);
    assert.notEqual(statSync(outside).mode & 0o777, 0o777);
    assert.deepEqual(await readdir(outside), []);
    await ctx.close();
  });
});

test('garbage, truncated archives and corrupt compression are InvalidArgument, and leave nothing', async () => {
  const noise = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) & 0xff));
  const good = tarOf([{ name: 'Dockerfile', data: DF }, { name: 'f', data: noise }]);
  const half = (b: Buffer) => b.subarray(0, b.length >> 1);
  const bodies: Record<string, Buffer> = {
    'short text': Buffer.from('this is not a tar'),
    'noise': noise,
    'truncated in a file': good.subarray(0, 512 + 512 + 1000),
    'truncated in a header': good.subarray(0, 512 + 512 + 200),
    'truncated gzip': half(gzipSync(good)),
    'gzip without its trailer': gzipSync(good).subarray(0, gzipSync(good).length - 4),
    'corrupt gzip': Buffer.concat([Buffer.from([0x1f, 0x8b]), noise]),
    'corrupt bzip2': Buffer.concat([Buffer.from('BZh9'), noise]),
    'truncated xz': half(compressWith('xz', good)),
    'truncated bzip2': half(compressWith('bzip2', good)),
    'truncated zstd': half(zstdCompressSync(good)),
    'gzip of garbage': gzipSync(noise),
  };
  await withTmp(async (tmp) => {
    for (const [what, b] of Object.entries(bodies)) {
      const err = await rejection(openContext(bodyOf(b), { tmpDir: tmp }));
      assert.equal(errorCode(err), 'InvalidArgument', `${what}: ${err.message}`);
      assert.match(err.message, /^invalid build context: \S.*$/, what);
      assert.deepEqual(await readdir(tmp), [], what);
    }
  });
});

/** The pids of this process's children running `cmd`. */
function children(cmd: string): string[] {
  const r = spawnSync('ps', ['-o', 'pid=,comm=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return r.stdout.split('\n').filter((l) => l.trim().endsWith(cmd));
}

test('an abort stops a stalled body (plain and through a decompressor); a failing body surfaces its error', async () => {
  await withTmp(async (tmp) => {
    const tar = tarOf([{ name: 'Dockerfile', data: DF }, { name: 'f', data: Buffer.alloc(100_000, 1) }], false);
    for (const [kind, b] of [['plain', tar], ['gzip', gzipSync(tar)], ['bzip2', compressWith('bzip2', tar)], ['xz', compressWith('xz', tar)]] as const) {
      const body = new PassThrough();
      body.write(b.subarray(0, Math.floor(b.length / 2)));
      const ac = new AbortController();
      const p = openContext(body, { tmpDir: tmp, signal: ac.signal });
      await sleep(50);
      ac.abort();
      const err = await rejection(p);
      assert.equal(errorCode(err), 'Canceled', `${kind}: ${err.message}`);
      assert.ok(body.destroyed, kind);
      assert.deepEqual(await readdir(tmp), [], kind);
      await sleep(20);
      assert.deepEqual(children(kind), [], `${kind}: decompressor killed`);
    }

    const pre = new AbortController();
    pre.abort();
    assert.equal(errorCode(await rejection(openContext(bodyOf(tar), { tmpDir: tmp, signal: pre.signal }))), 'Canceled');

    for (const kind of ['plain', 'bzip2']) {
      const body = new PassThrough();
      body.write(kind === 'plain' ? tar.subarray(0, 3000) : compressWith('bzip2', tar).subarray(0, 3000));
      const p = openContext(body, { tmpDir: tmp });
      await sleep(50);
      body.destroy(new Error('client went away'));
      const err = await rejection(p);
      assert.equal(err.message, 'client went away', kind);
      assert.deepEqual(await readdir(tmp), [], kind);
    }
  });
});
