// A layer store whose blobs are kept elsewhere (LayerStoreOptions.blobs: the supervisor's content
// store with the feature supervisor-snapshotter), on a fake in-memory blob store: a blob is put
// before its layer is committed and not kept in the layer's directory, reads come from there
// (the blob as it came, the tar decompressed), a removed layer takes its blob unless another
// layer has the same one, and a reopened store removes the blobs no layer names (a crash's).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { createLayerStore } from '../../../drivers/storage/layer-store.ts';
import type { BlobPort } from '../../../drivers/storage/types.ts';
import { notFound } from '../../../lib/errors.ts';
import { body, collect, digest, makeTar, removeRoot, silentLog, tempRoot } from './helpers.ts';

class FakeBlobs implements BlobPort {
  readonly blobs = new Map<string, Buffer>();
  async put(d: string, file: string): Promise<void> {
    this.blobs.set(d, readFileSync(file));
  }
  read(d: string): Readable {
    const b = this.blobs.get(d);
    if (!b) throw notFound(`content digest ${d}: not found`);
    return Readable.from([b], { objectMode: false });
  }
  async remove(d: string): Promise<void> {
    this.blobs.delete(d);
  }
  async list(): Promise<string[]> {
    return [...this.blobs.keys()];
  }
  sweeps = 0;
  async sweep(): Promise<void> {
    this.sweeps++;
  }
}

let root = '';
before(async () => {
  root = await tempRoot('engine-layer-blobs-');
});
after(async () => {
  await removeRoot(root);
});

test('blobs kept in the blob store: put, read back, removed with the last layer naming them; orphans removed at open', async () => {
  const blobs = new FakeBlobs();
  const open = () => createLayerStore({ dataRoot: root, driver: 'vfs', tmpDir: join(root, 'tmp'), usePigz: false, log: silentLog(), blobs });
  let store = await open();
  const tar = await makeTar([{ name: 'a', data: 'one' }]);
  const gz = gzipSync(tar);
  const base = await store.applyLayer(null, body(gz), { expectedDiffId: digest(tar) });
  assert.deepEqual([...blobs.blobs.keys()], [digest(gz)]);
  assert.equal(existsSync(join(root, 'image', 'vfs', 'layerdb', 'sha256', base.chainId.slice(7), 'blob')), false);
  assert.deepEqual(await collect(store.layerBlob(base.chainId)), gz);
  assert.equal(digest(await collect(store.layerTar(base.chainId))), digest(tar));
  // The same blob on another parent: a second layer naming the same blob.
  const other = await store.applyLayer(null, body(await makeTar([{ name: 'b', data: 'two' }])), {});
  const twice = await store.applyLayer(other.chainId, body(gz), { expectedDiffId: digest(tar) });
  assert.equal(twice.blobDigest, digest(gz));
  await store.removeLayer(twice.chainId);
  assert.equal(blobs.blobs.has(digest(gz)), true, 'still named by the first layer');
  await store.removeLayer(base.chainId);
  assert.equal(blobs.blobs.has(digest(gz)), false);

  blobs.blobs.set('sha256:' + 'f'.repeat(64), Buffer.from('a crash\'s'));
  await store.cleanup();
  store = await open();
  assert.deepEqual([...blobs.blobs.keys()], [other.blobDigest]);
  assert.equal(blobs.sweeps, 2, 'each open sweeps what cut writes left');
  await store.cleanup();
});
