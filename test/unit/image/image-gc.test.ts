// The image reconciler and layer leases, against the real store: layers a lease lets go of are
// collected unless an image (or a container's image) uses them; an image removal leaves layers a
// pull in flight holds; an image recorded while a collection is under way keeps its layers.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, test } from 'node:test';
import pino from 'pino';
import { ImageReconciler } from '../../../reconcilers/image/reconciler.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { type ImageSpec, Images } from '../../../store/kinds/image.ts';

import { FakeLayerStore } from './fake-layer-store.ts';
import { makeTar } from './tar-helpers.ts';
import { Containers } from '../../../store/kinds/container.ts';

const log = pino({ level: 'silent' });
let dir: string;
let store: Store;
let layers: FakeLayerStore;
let images: ImageReconciler;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'image-gc-'));
  store = openStore(join(dir, 'engine.db'));
  layers = new FakeLayerStore();
  images = new ImageReconciler(store, layers, { log });
});
afterEach(async () => {
  store.close();
  await rm(dir, { recursive: true, force: true });
});

/** Apply layers with these file names (one file each) on top of each other; returns chain ids. */
async function applyChain(names: string[], lease?: ReturnType<FakeLayerStore['lease']>): Promise<{ chain: string[]; diffIds: string[] }> {
  const chain: string[] = [];
  const diffIds: string[] = [];
  let parent: string | null = null;
  for (const n of names) {
    const tar = await makeTar([{ name: n, data: n }]);
    const info = await layers.applyLayer(parent, Readable.from([tar]), { lease });
    chain.push(info.chainId);
    diffIds.push(info.diffId);
    parent = info.chainId;
  }
  return { chain, diffIds };
}

function recordImage(id: string, diffIds: string[], chainId: string | null): void {
  const spec: ImageSpec = {
    id, rawConfig: '{}', diffIds, chainId, size: 0, repoDigests: [], parent: '', loadedAt: new Date().toISOString(), desired: 'present',
  };
  store.create(Images, id, spec, { observedGeneration: 0, phase: 'pending', error: '' });
}

const imageId = (n: number) => `sha256:${String(n).repeat(64).slice(0, 64)}`;

test('layers a failed pull let go of are collected; layers an image uses stay', async () => {
  const base = await applyChain(['base']);
  recordImage(imageId(1), base.diffIds, base.chain[0]!);

  // A pull on top of the image's layer that fails after applying two more layers.
  const lease = layers.lease();
  lease.add(base.chain[0]!);
  let parent = base.chain[0]!;
  const mine: string[] = [];
  for (const n of ['x', 'y']) {
    const info = await layers.applyLayer(parent, Readable.from([await makeTar([{ name: n, data: n }])]), { lease });
    mine.push(info.chainId);
    parent = info.chainId;
  }
  lease.release();
  await images.idle();
  assert.deepEqual(layers.list().map((l) => l.chainId), [base.chain[0]]);
});

test('an image removal leaves the layers a pull in flight holds; the pull failing lets them go', async () => {
  const { chain, diffIds } = await applyChain(['a', 'b', 'c']);
  recordImage(imageId(2), diffIds, chain[2]!);
  // A pull of another image sharing the two lower layers found them already there.
  const pull = layers.lease();
  pull.add(chain[0]!);
  pull.add(chain[1]!);
  store.updateSpec(Images, imageId(2), (s) => ({ ...s, desired: 'removed' }));
  await images.reconcile(imageId(2), { log });
  assert.equal(store.get(Images, imageId(2)), undefined);
  assert.deepEqual(layers.list().map((l) => l.chainId), chain.slice(0, 2));
  pull.release();
  await images.idle();
  assert.deepEqual(layers.list(), []);
});

test('a pull that records its image before letting go keeps the layers', async () => {
  const lease = layers.lease();
  const { chain, diffIds } = await applyChain(['p', 'q'], lease);
  recordImage(imageId(3), diffIds, chain[1]!);
  lease.release();
  await images.idle();
  assert.equal(layers.list().length, 2);
  await images.reconcile(imageId(3), { log });
  assert.equal(store.get(Images, imageId(3))?.status.phase, 'ready');
});

test('layers of an image a container was created from stay even when the image is being removed', async () => {
  const lease = layers.lease();
  const { chain, diffIds } = await applyChain(['r'], lease);
  recordImage(imageId(4), diffIds, chain[0]!);
  store.updateSpec(Images, imageId(4), (s) => ({ ...s, desired: 'removed' }));
  store.create(Containers, 'c1', { id: 'c1', imageId: imageId(4) } as never, {} as never);
  lease.release();
  await images.idle();
  assert.equal(layers.list().length, 1);
});

test('whether a layer is in use is decided at its removal: an image recorded meanwhile keeps it', async () => {
  const lease = layers.lease();
  const { chain, diffIds } = await applyChain(['s', 't'], lease);
  // The image is written after the release was reported but before the collection reaches the
  // layers (the removal waits for the layer's lock, as a real store would).
  const remove = layers.removeLayer.bind(layers);
  let recorded = false;
  layers.removeLayer = async (chainId, opts) => {
    if (!recorded) {
      recorded = true;
      recordImage(imageId(5), diffIds, chain[1]!);
    }
    return remove(chainId, opts);
  };
  lease.release();
  await images.idle();
  assert.equal(layers.list().length, 2);
});

test('at start-up, layers no image uses (a pull or build step cut off by a crash) are collected; leased and used ones stay', async () => {
  const used = await applyChain(['u1', 'u2']);
  recordImage(imageId(1), used.diffIds, used.chain[1]!);
  // A build step's layer on top of the image, its image record never written.
  const strayTar = await makeTar([{ name: 'stray', data: 'stray' }]);
  const stray = await layers.applyLayer(used.chain[1]!, Readable.from([strayTar]));
  // An unrelated chain of two, and a layer a pull in flight holds.
  const lone = await applyChain(['l1', 'l2']);
  const lease = layers.lease();
  const held = await applyChain(['h1'], lease);
  await images.collectUnreferenced();
  assert.ok(layers.has(used.chain[0]!) && layers.has(used.chain[1]!), 'the image keeps its layers');
  assert.ok(!layers.has(stray.chainId), 'the stray build layer is collected');
  assert.ok(!layers.has(lone.chain[0]!) && !layers.has(lone.chain[1]!), 'the unused chain is collected, child first');
  assert.ok(layers.has(held.chain[0]!), 'a leased layer stays');
  lease.release();
});
