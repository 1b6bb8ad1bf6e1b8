// The layer store on real file systems and real overlay mounts (run as root).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { appendFile, lstat, mkdir, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe as suite, test } from 'node:test';
import { gzipSync, zstdCompressSync } from 'node:zlib';
import { isCode } from '../../../lib/errors.ts';
import { lgetxattr } from '../../../drivers/sys/fs-syscalls.ts';
import { createLayerStore } from '../../../drivers/storage/layer-store.ts';
import type { LayerInfo, LayerStore } from '../../../drivers/storage/types.ts';
import { body, collect, describe, digest, makeTar, mountsUnder, removeRoot, silentLog, tempRoot } from './helpers.ts';

const open = (dataRoot: string, driver: 'overlay2' | 'vfs' = 'overlay2') =>
  createLayerStore({ dataRoot, driver, tmpDir: join(dataRoot, 'tmp'), usePigz: true, log: silentLog() });

async function rejectsWith(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(isCode(err, code as never), `expected ${code}, got ${String(err)}`);
    return true;
  });
}

/** Layer 1: a base; layer 2 deletes etc/a and makes dir/ opaque; layer 3 adds a file. */
async function threeLayers(): Promise<Buffer[]> {
  return [
    await makeTar([
      { name: 'etc/', type: 'directory' },
      { name: 'etc/a', data: 'a1' },
      { name: 'etc/b', data: 'b1' },
      { name: 'dir/', type: 'directory' },
      { name: 'dir/x', data: 'x1' },
      { name: 'dir/sub/', type: 'directory' },
      { name: 'dir/sub/y', data: 'y1' },
      { name: 'bin/', type: 'directory' },
      { name: 'bin/tool', data: 'tool', mode: 0o4755, uid: 1000, gid: 1001 },
      { name: 'bin/alias', type: 'symlink', linkname: 'tool' },
      { name: 'bin/hard', type: 'link', linkname: 'bin/tool' },
    ]),
    await makeTar([
      { name: 'etc/', type: 'directory' },
      { name: 'etc/.wh.a', data: '' },
      { name: 'dir/', type: 'directory' },
      { name: 'dir/.wh..wh..opq', data: '' },
      { name: 'dir/z', data: 'z2' },
    ]),
    await makeTar([{ name: 'top', data: 'top3' }]),
  ];
}

async function applyAll(store: LayerStore, tars: Buffer[], gzip = false): Promise<LayerInfo[]> {
  const out: LayerInfo[] = [];
  let parent: string | null = null;
  for (const t of tars) {
    const info: LayerInfo = await store.applyLayer(parent, body(gzip ? gzipSync(t) : t), { expectedDiffId: digest(t) });
    out.push(info);
    parent = info.chainId;
  }
  return out;
}

const EXPECTED_VIEW = {
  'bin': 'dir 755 0:0',
  'bin/alias': 'symlink -> tool',
  'bin/hard': 'file 4755 1000:1001 tool',
  'bin/tool': 'file 4755 1000:1001 tool',
  'dir': 'dir 755 0:0',
  'dir/z': 'file 644 0:0 z2',
  'etc': 'dir 755 0:0',
  'etc/b': 'file 644 0:0 b1',
  'top': 'file 644 0:0 top3',
};

suite('layer store (overlay2)', () => {
  let root: string;
  let store: LayerStore;
  before(async () => {
    // A long root: 60 absolute lowerdirs would not fit in a page, so mounting must go relative.
    root = await tempRoot(`layers-ovl-${'x'.repeat(60)}-`);
    store = await open(root);
  });
  after(async () => {
    await store?.cleanup().catch(() => {});
    await removeRoot(root);
  });

  test('applies plain, gzip and zstd blobs, keeping the blob and its digest', async () => {
    const tar = await makeTar([
      { name: 'f', data: 'hello', mtime: new Date(1_500_000_000_000), pax: { 'SCHILY.xattr.user.test': 'v1' } },
      { name: 'fifo', type: 'fifo', mode: 0o600 },
      { name: 'null', type: 'character-device', devmajor: 1, devminor: 3, mode: 0o666 },
    ]);
    const plain = await store.applyLayer(null, body(tar));
    assert.equal(plain.diffId, digest(tar));
    assert.equal(plain.chainId, plain.diffId);
    assert.equal(plain.blobMedia, 'none');
    assert.equal(plain.blobDigest, digest(tar));
    assert.equal(plain.size, 5);

    const tar2 = await makeTar([{ name: 'g', data: 'gz' }]);
    const gz = gzipSync(tar2);
    const g = await store.applyLayer(plain.chainId, body(gz), { expectedDiffId: digest(tar2), blobDigest: digest(gz) });
    assert.equal(g.blobMedia, 'gzip');
    assert.equal(g.blobDigest, digest(gz));
    assert.equal(g.blobSize, gz.length);
    assert.equal(g.chainId, store.chainIdOf(plain.chainId, digest(tar2)));
    assert.deepEqual(await collect(store.layerBlob(g.chainId)), gz);
    assert.equal(digest(await collect(store.layerTar(g.chainId))), g.diffId);

    const tar3 = await makeTar([{ name: 'z', data: 'zstd' }]);
    const z = await store.applyLayer(g.chainId, body(zstdCompressSync(tar3)));
    assert.equal(z.blobMedia, 'zstd');
    assert.equal(z.diffId, digest(tar3));

    // Applying it again returns the same layer without unpacking; so does its own exported tar.
    const again = await store.applyLayer(plain.chainId, body(gz), { expectedDiffId: digest(tar2) });
    assert.deepEqual(again, g);
    const exported = await collect(store.layerTar(g.chainId));
    assert.equal((await store.applyLayer(plain.chainId, body(exported))).chainId, g.chainId);
    // ...but a wrong expected diff id is still caught on the already-present path.
    await rejectsWith(store.applyLayer(plain.chainId, body(gz), { expectedDiffId: digest(tar) }), 'InvalidArgument');

    // Concurrent applies of one new layer unpack it once and agree.
    const tar4 = await makeTar([{ name: 'c', data: 'concurrent' }]);
    const dirsBefore = (await readdir(join(root, 'overlay2'))).length;
    const both = await Promise.all([
      store.applyLayer(g.chainId, body(tar4), { expectedDiffId: digest(tar4) }),
      store.applyLayer(g.chainId, body(gzipSync(tar4)), { expectedDiffId: digest(tar4) }),
    ]);
    assert.equal(both[0].chainId, both[1].chainId);
    assert.equal((await readdir(join(root, 'overlay2'))).length, dirsBefore + 1);
    await store.removeLayer(both[0].chainId);

    await store.createRW('plain', z.chainId);
    const merged = await store.mountRW('plain');
    assert.equal(await readFile(join(merged, 'f'), 'utf8'), 'hello');
    const st = await lstat(join(merged, 'f'));
    assert.equal(st.mtimeMs, 1_500_000_000_000);
    assert.equal(lgetxattr(join(merged, 'f'), 'user.test')?.toString(), 'v1');
    assert.ok((await lstat(join(merged, 'fifo'))).isFIFO());
    const dev = await lstat(join(merged, 'null'));
    assert.ok(dev.isCharacterDevice());
    assert.equal(dev.rdev, 0x103);
    assert.equal(await readFile(join(merged, 'z'), 'utf8'), 'zstd');
    await store.removeRW('plain');
    assert.equal(store.hasRW('plain'), false);
    assert.deepEqual(await mountsUnder(root), []);
  });

  test('3-layer image with whiteout and opaque dir; RW changes, size and commit tar', async () => {
    const tars = await threeLayers();
    const [, l2, l3] = await applyAll(store, tars, true);
    // The overlay diff of layer 2 holds the whiteout device and the opaque marker.
    const meta0 = await readdir(join(root, 'overlay2'));
    assert.ok(meta0.includes('l'));

    await store.createRW('c1', l3!.chainId);
    await store.createRW('c1', l3!.chainId); // idempotent
    const merged = await store.mountRW('c1');
    assert.equal(await store.mountRW('c1'), merged); // refcounted
    assert.deepEqual(await describe(merged), EXPECTED_VIEW);

    const md = store.metadataRW('c1');
    assert.equal(md.MergedDir, merged);
    assert.equal(md.LowerDir!.split(':').length, 3);
    assert.ok(md.UpperDir && md.WorkDir);

    await writeFile(join(merged, 'new'), 'x'.repeat(1000));
    await appendFile(join(merged, 'etc/b'), '+');
    await unlink(join(merged, 'top'));
    await rm(join(merged, 'dir/z'));
    const changes = await store.changesRW('c1');
    assert.deepEqual(changes, [
      { Path: '/dir', Kind: 0 },
      { Path: '/dir/z', Kind: 2 },
      { Path: '/etc', Kind: 0 },
      { Path: '/etc/b', Kind: 0 },
      { Path: '/new', Kind: 1 },
      { Path: '/top', Kind: 2 },
    ]);
    assert.equal(await store.sizeRW('c1'), 1003);

    // Commit: the RW diff as a tar, applied on the same parent, gives the same view.
    const view = await describe(merged);
    const committed = await collect(store.tarRW!('c1'));
    const l4 = await store.applyLayer(l3!.chainId, body(committed));
    await store.createRW('c2', l4.chainId);
    assert.deepEqual(await describe(await store.mountRW('c2')), view);

    // An export rebuilt from the diff dir (no kept blob) re-applies to the same view.
    await rm(join(root, 'image/overlay2/layerdb/sha256', l2!.chainId.slice(7), 'blob'));
    const rebuilt = await collect(store.layerTar(l2!.chainId));
    const names = (await readTarNames(rebuilt)).sort();
    assert.deepEqual(names, ['dir/', 'dir/.wh..wh..opq', 'dir/z', 'etc/', 'etc/.wh.a']);

    await store.unmountRW('c1');
    assert.equal((await mountsUnder(root)).filter((m) => m === merged).length, 1, 'still mounted by the second mountRW');
    await store.unmountRW('c1');
    assert.ok(!(await mountsUnder(root)).includes(merged));
    await store.removeRW('c1');
    await store.removeRW('c2');
    await store.removeRW('c2'); // idempotent
    await store.removeLayer(l4.chainId);
  });

  test('diff id mismatch is rejected and leaves nothing behind', async () => {
    const before = await readdir(join(root, 'overlay2'));
    const tar = await makeTar([{ name: 'm', data: 'mismatch' }]);
    const wrong = digest(Buffer.from('other'));
    await rejectsWith(store.applyLayer(null, body(gzipSync(tar)), { expectedDiffId: wrong }), 'InvalidArgument');
    assert.deepEqual((await readdir(join(root, 'overlay2'))).sort(), before.sort());
    assert.deepEqual(await readdir(join(root, 'image/overlay2/layerdb/tmp')), []);
    assert.equal(store.has(store.chainIdOf(null, wrong)), false);
    await rejectsWith(store.applyLayer(null, body(Buffer.from([0x1f, 0x8b, 8, 0, 1, 2, 3]))), 'InvalidArgument');
  });

  test('path traversal is rejected; symlinks cannot lead outside the layer', async () => {
    const outside = join(root, 'outside');
    await mkdir(outside);
    const before = await readdir(join(root, 'overlay2'));
    const evil = await makeTar([{ name: '../../outside/evil', data: 'x' }]);
    await rejectsWith(store.applyLayer(null, body(evil)), 'InvalidArgument');
    const badLink = await makeTar([{ name: 'h', type: 'link', linkname: '../../outside/evil' }]);
    await rejectsWith(store.applyLayer(null, body(badLink)), 'InvalidArgument');
    assert.deepEqual((await readdir(join(root, 'overlay2'))).sort(), before.sort());

    // A symlink to an absolute path resolves inside the layer, as it would in a chroot.
    const viaLink = await makeTar([
      { name: 'esc', type: 'symlink', linkname: outside },
      { name: 'esc/pwned', data: 'x' },
      { name: 'up', type: 'symlink', linkname: '../../../../..' },
      { name: 'up/pwned2', data: 'y' },
    ]);
    const l = await store.applyLayer(null, body(viaLink));
    assert.deepEqual(await readdir(outside), []);
    await store.createRW('trav', l.chainId);
    const rootfs = await store.mountRW('trav');
    assert.equal(await readFile(join(rootfs, outside, 'pwned'), 'utf8'), 'x');
    assert.equal(await readFile(join(rootfs, 'pwned2'), 'utf8'), 'y');
    await store.removeRW('trav');
    await store.removeLayer(l.chainId);
  });

  test('a 60-layer chain mounts and shows the top file', async () => {
    let parent: string | null = null;
    for (let i = 0; i < 60; i++) {
      const tar = await makeTar([{ name: `layer-${i}`, data: String(i) }, { name: 'which', data: `layer ${i}` }]);
      parent = (await store.applyLayer(parent, body(tar))).chainId;
    }
    await store.createRW('deep', parent);
    const merged = await store.mountRW('deep');
    assert.equal(await readFile(join(merged, 'which'), 'utf8'), 'layer 59');
    assert.equal(await readFile(join(merged, 'layer-0'), 'utf8'), '0');
    assert.equal((await readdir(merged)).length, 61);
    await store.removeRW('deep');
  });

  test('removeLayer refuses layers in use by children or RW layers', async () => {
    const [l1, , l3] = await applyAll(store, await threeLayers());
    await store.createRW('holder', l3!.chainId);
    await rejectsWith(store.removeLayer(l1!.chainId), 'Conflict');
    await rejectsWith(store.removeLayer(l3!.chainId), 'Conflict');
    await store.removeRW('holder');
    assert.ok(store.has(l3!.chainId));
  });

  test('a reopened store knows its layers and RW layers; cleanup unmounts', async () => {
    const tars = await threeLayers();
    const [, , l3] = await applyAll(store, tars);
    await store.createRW('persist', l3!.chainId);
    const merged = await store.mountRW('persist');
    // Leftovers of a crash: a staging dir and an unreferenced driver dir.
    await mkdir(join(root, 'image/overlay2/layerdb/tmp/layer-dead'));
    await mkdir(join(root, 'overlay2', 'f'.repeat(64)));

    const reopened = await open(root);
    assert.deepEqual(reopened.list().map((l) => l.chainId).sort(), store.list().map((l) => l.chainId).sort());
    assert.deepEqual(reopened.get(l3!.chainId), l3);
    assert.ok(reopened.hasRW('persist'));
    assert.deepEqual(await readdir(join(root, 'image/overlay2/layerdb/tmp')), []);
    assert.ok(!existsSync(join(root, 'overlay2', 'f'.repeat(64))));
    assert.equal(await reopened.mountRW('persist'), merged); // adopts the existing mount
    assert.deepEqual(await describe(merged), EXPECTED_VIEW);
    assert.ok((await mountsUnder(root)).includes(merged));
    await reopened.cleanup();
    assert.deepEqual(await mountsUnder(root), []);
    store = reopened;
  });

  test('driver status', () => {
    const status = Object.fromEntries(store.driverStatus());
    assert.equal(status['Native Overlay Diff'], 'true');
    assert.equal(status['Supports d_type'], 'true');
    assert.ok(status['Backing Filesystem']);
  });
});

suite('layer store (vfs)', () => {
  let root: string;
  let store: LayerStore;
  before(async () => {
    root = await tempRoot('layers-vfs-');
    store = await open(root, 'vfs');
  });
  after(async () => {
    await store?.cleanup().catch(() => {});
    await removeRoot(root);
  });

  test('gives the same merged view, changes and commit tar', async () => {
    const [l1, , l3] = await applyAll(store, await threeLayers(), true);
    assert.equal(store.driverName, 'vfs');
    await store.createRW('v1', l3!.chainId);
    const rootfs = await store.mountRW('v1');
    assert.deepEqual(await describe(rootfs), EXPECTED_VIEW);

    await writeFile(join(rootfs, 'new'), 'abc');
    await unlink(join(rootfs, 'top'));
    assert.deepEqual(await store.changesRW('v1'), [{ Path: '/new', Kind: 1 }, { Path: '/top', Kind: 2 }]);
    assert.equal(await store.sizeRW('v1'), 3);
    const view = await describe(rootfs);
    const l4 = await store.applyLayer(l3!.chainId, body(await collect(store.tarRW!('v1'))));
    await store.createRW('v2', l4.chainId);
    assert.deepEqual(await describe(await store.mountRW('v2')), view);

    await rejectsWith(store.removeLayer(l1!.chainId), 'Conflict');
    await store.removeRW('v1');
    await store.removeRW('v2');
    await store.removeLayer(l4.chainId);
    const reopened = await open(root, 'vfs');
    assert.equal(reopened.list().length, 3);
    store = reopened;
  });
});

async function readTarNames(tar: Buffer): Promise<string[]> {
  const { readTar } = await import('../../../drivers/storage/tar-reader.ts');
  const names: string[] = [];
  for await (const e of readTar(body(tar))) names.push(e.header.name);
  return names;
}

test('large gzip blobs (by their declared size) go through unpigz: same diff id, and a truncated stream is refused', async () => {
  const root = await tempRoot('layers-pigz-');
  const store = await open(root);
  try {
    const tar = await makeTar([{ name: 'big', data: 'pigz path '.repeat(1000) }]);
    const gz = gzipSync(tar);
    const info = await store.applyLayer(null, body(gz), { expectedDiffId: digest(tar), blobSize: 64 << 20 });
    assert.equal(info.diffId, digest(tar));
    const other = await makeTar([{ name: 'other', data: 'x'.repeat(5000) }]);
    const cut = gzipSync(other).subarray(0, 40);
    await rejectsWith(store.applyLayer(null, body(cut), { blobSize: 64 << 20 }), 'InvalidArgument');
  } finally {
    await store.cleanup();
    await removeRoot(root);
  }
});
