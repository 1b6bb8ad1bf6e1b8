// The layer store's concurrent applies (children unpacked before their parent is committed,
// commits bottom-up), verified blob files kept as links, leases and the removal checks that guard
// layers in use (run as root: real overlay2 and vfs directories).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe as suite, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { isCode } from '../../../lib/errors.ts';
import { createLayerStore } from '../../../drivers/storage/layer-store.ts';
import type { LayerStore } from '../../../drivers/storage/types.ts';
import { body, collect, describe, digest, makeTar, removeRoot, silentLog, tempRoot } from './helpers.ts';

const open = (dataRoot: string, driver: 'overlay2' | 'vfs' = 'overlay2') =>
  createLayerStore({ dataRoot, driver, tmpDir: join(dataRoot, 'tmp'), usePigz: true, log: silentLog() });

function deferred<T = void>(): { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

async function rejectsWith(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(isCode(err, code as never), `expected ${code}, got ${String(err)}`);
    return true;
  });
}

const tick = () => new Promise((r) => setTimeout(r, 20));

/** Three layers: a base, one deleting a file and making a dir opaque, one adding a file. */
async function layers(): Promise<Buffer[]> {
  return [
    await makeTar([
      { name: 'etc/', type: 'directory' },
      { name: 'etc/a', data: 'a1' },
      { name: 'etc/b', data: 'b1' },
      { name: 'dir/', type: 'directory' },
      { name: 'dir/x', data: 'x1' },
    ]),
    await makeTar([
      { name: 'etc/', type: 'directory' },
      { name: 'etc/.wh.a', data: '' },
      { name: 'dir/', type: 'directory' },
      { name: 'dir/.wh..wh..opq', data: '' },
      { name: 'dir/z', data: 'z2' },
    ]),
    await makeTar([{ name: 'top', data: randomBytes(300_000).toString('base64') }]),
  ];
}

/** Cache ids and staging entries on disk, to show that nothing is left behind. */
async function leftovers(root: string, driver: 'overlay2' | 'vfs' = 'overlay2'): Promise<{ dirs: number; tmp: number }> {
  const dirs = driver === 'overlay2'
    ? (await readdir(join(root, 'overlay2'))).filter((n) => n !== 'l').length
    : (await readdir(join(root, 'vfs', 'dir'))).length;
  const tmp = (await readdir(join(root, 'image', driver, 'layerdb', 'tmp'))).length;
  return { dirs, tmp };
}

for (const driver of ['overlay2', 'vfs'] as const) {
  suite(`layer store: concurrent applies (${driver})`, () => {
    let root: string;
    let store: LayerStore;
    before(async () => {
      root = await tempRoot(`layers-conc-${driver}-`);
      store = await open(root, driver);
    });
    after(async () => {
      await store?.cleanup().catch(() => {});
      await removeRoot(root);
    });

    test('children applied before their parents commit bottom-up and give the same view', async () => {
      const tars = await layers();
      const diffIds = tars.map(digest);
      const chain: string[] = [];
      let parent: string | null = null;
      for (const d of diffIds) chain.push((parent = store.chainIdOf(parent, d)));
      assert.equal(store.concurrentApply, driver === 'overlay2');

      // All three start at once; the blobs arrive top first, the bottom one last.
      const streams = tars.map(() => new PassThrough());
      const applies: Array<Promise<unknown>> = [];
      for (let i = 0; i < tars.length; i++) {
        applies.push(store.applyLayer(i === 0 ? null : chain[i - 1]!, streams[i]!, {
          expectedDiffId: diffIds[i], parentReady: applies[i - 1],
        }));
      }
      streams[2]!.end(gzipSync(tars[2]!));
      streams[1]!.end(tars[1]);
      await tick();
      // Nothing is visible before the layers below are.
      assert.equal(store.has(chain[1]!), false);
      assert.equal(store.has(chain[2]!), false);
      streams[0]!.end(tars[0]);
      const infos = await Promise.all(applies) as Array<{ chainId: string; parent: string | null }>;
      assert.deepEqual(infos.map((l) => l.chainId), chain);
      assert.deepEqual(infos.map((l) => l.parent), [null, chain[0], chain[1]]);

      await store.createRW('conc', chain[2]!);
      const view = await describe(await store.mountRW('conc'));
      assert.equal(view['etc/a'], undefined);
      assert.equal(view['etc/b'], 'file 644 0:0 b1');
      assert.equal(view['dir/x'], undefined);
      assert.equal(view['dir/z'], 'file 644 0:0 z2');
      assert.ok(view.top?.startsWith('file 644 0:0 '));
      await store.removeRW('conc');
      for (const c of [...chain].reverse()) await store.removeLayer(c);
      assert.deepEqual(await leftovers(root, driver), { dirs: 0, tmp: 0 });
    });

    test('a failed parent fails the children and leaves nothing behind', async () => {
      const tars = await layers();
      const bad = Buffer.from(tars[0]!);
      const parentReady = deferred<unknown>();
      const parentChain = store.chainIdOf(null, digest(tars[0]!));
      const child = store.applyLayer(parentChain, body(tars[1]!), { expectedDiffId: digest(tars[1]!), parentReady: parentReady.promise });
      // The parent's bytes are not what its diff id says.
      bad[600] ^= 0xff;
      const parent = store.applyLayer(null, body(bad), { expectedDiffId: digest(tars[0]!) });
      parent.then(parentReady.resolve, parentReady.reject);
      await rejectsWith(parent, 'InvalidArgument');
      await rejectsWith(child, 'InvalidArgument');
      assert.equal(store.list().length, 0);
      assert.deepEqual(await leftovers(root, driver), { dirs: 0, tmp: 0 });
    });
  });
}

suite('layer store: verified blobs, leases and removal', () => {
  let root: string;
  let store: LayerStore;
  before(async () => {
    root = await tempRoot('layers-lease-');
    store = await open(root);
  });
  after(async () => {
    await store?.cleanup().catch(() => {});
    await removeRoot(root);
  });

  test('a verified blob file becomes the layer blob by a link, not a copy', async () => {
    const tar = await makeTar([{ name: 'f', data: 'verified' }]);
    const gz = gzipSync(tar);
    const file = join(root, 'tmp', 'spooled');
    await mkdir(join(root, 'tmp'), { recursive: true });
    await writeFile(file, gz);
    const info = await store.applyLayer(null, body(gz), { expectedDiffId: digest(tar), blobDigest: digest(gz), blobFile: file });
    assert.equal(info.blobDigest, digest(gz));
    assert.equal(info.blobSize, gz.length);
    assert.equal(info.blobMedia, 'gzip');
    const kept = join(root, 'image', 'overlay2', 'layerdb', 'sha256', info.chainId.slice(7), 'blob');
    assert.equal((await stat(kept)).ino, (await stat(file)).ino);
    assert.deepEqual(await collect(store.layerBlob(info.chainId)), gz);
    assert.equal(digest(await collect(store.layerTar(info.chainId))), info.diffId);
    // A verified blob needs its digest.
    await rejectsWith(store.applyLayer(null, body(gz), { blobFile: file }), 'InvalidArgument');
    await store.removeLayer(info.chainId);
  });

  test('leased layers are not removed; releasing reports what nothing holds any more', async () => {
    const [a, b] = await layers();
    const released: string[][] = [];
    const off = store.onRelease((ids) => released.push(ids));
    const lease = store.lease();
    const other = store.lease();
    const la = await store.applyLayer(null, body(a!), { lease });
    const lb = await store.applyLayer(la.chainId, body(b!), { lease });
    other.add(la.chainId);
    other.add('sha256:' + 'f'.repeat(64)); // not there (yet): held all the same, never reported
    assert.ok(store.isLeased(lb.chainId));
    await rejectsWith(store.removeLayer(lb.chainId), 'Conflict');
    lease.release();
    lease.release();
    assert.deepEqual(released, [[lb.chainId]]);
    assert.equal(store.isLeased(lb.chainId), false);
    assert.ok(store.isLeased(la.chainId));
    // `keep` has the last word, under the lock.
    await store.removeLayer(lb.chainId, { keep: (c) => c === lb.chainId });
    assert.ok(store.has(lb.chainId));
    await store.removeLayer(lb.chainId, { keep: () => false });
    assert.equal(store.has(lb.chainId), false);
    await rejectsWith(store.removeLayer(la.chainId), 'Conflict');
    other.release();
    assert.deepEqual(released.at(-1), [la.chainId]);
    assert.throws(() => other.add(la.chainId));
    off();
    await store.removeLayer(la.chainId);
    assert.equal(released.length, 2);
  });

  test('a parent cannot be removed while a layer is being applied on it', async () => {
    const [a, b] = await layers();
    const la = await store.applyLayer(null, body(a!));
    const slow = new PassThrough();
    const child = store.applyLayer(la.chainId, slow, { expectedDiffId: digest(b!) });
    await tick();
    await rejectsWith(store.removeLayer(la.chainId), 'Conflict');
    slow.end(b);
    const lb = await child;
    await store.removeLayer(lb.chainId);
    await store.removeLayer(la.chainId);
    assert.equal(store.list().length, 0);
  });

  test('an apply racing a removal of the same layer waits for it and ends with the layer whole', async () => {
    const [a] = await layers();
    const la = await store.applyLayer(null, body(a!));
    const removing = store.removeLayer(la.chainId);
    // The removal has passed its checks and is moving the directory away.
    while (store.has(la.chainId)) await Promise.resolve();
    const info = await store.applyLayer(null, body(a!), { expectedDiffId: digest(a!) });
    await removing;
    assert.ok(store.has(info.chainId));
    assert.equal(digest(await collect(store.layerTar(info.chainId))), info.diffId);
    await store.removeLayer(info.chainId);
    assert.ok(!existsSync(join(root, 'image', 'overlay2', 'layerdb', 'sha256', info.chainId.slice(7))));
  });

  test('a layer found already there is held while the bytes of the caller are checked', async () => {
    const [a] = await layers();
    const la = await store.applyLayer(null, body(a!));
    const slow = new PassThrough();
    const again = store.applyLayer(null, slow, { expectedDiffId: digest(a!) });
    await tick();
    await rejectsWith(store.removeLayer(la.chainId), 'Conflict');
    slow.end(a);
    assert.deepEqual(await again, la);
    await store.removeLayer(la.chainId);
  });
});
