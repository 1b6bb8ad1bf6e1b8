// Target digests (lib/image-target.ts), the Id clients see with the supervisor's snapshotter: the
// image reconciler writes status.target with `ready` (the manifest digest of a pull, the made OCI
// manifest's digest otherwise) only when told to; lookups find an image by it and by its prefix.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, test } from 'node:test';
import pino from 'pino';
import { findImage, imageIdOf } from '../../../api/images/resolve.ts';
import { imageTarget, ociManifest } from '../../../lib/image-target.ts';
import { ImageReconciler } from '../../../reconcilers/image/reconciler.ts';
import { type ImageSpec, Images } from '../../../store/kinds/image.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { FakeLayerStore } from './fake-layer-store.ts';
import { makeTar } from './tar-helpers.ts';

const log = pino({ level: 'silent' });
let dir: string;
let store: Store;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'image-target-'));
  store = openStore(join(dir, 'engine.db'));
});
afterEach(async () => {
  store.close();
  await rm(dir, { recursive: true, force: true });
});

const sha = (b: string | Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

test('the OCI manifest of a config and its layer blobs; a pull\'s repo digest wins', () => {
  const raw = '{"architecture":"amd64"}';
  const m = JSON.parse(ociManifest(raw, sha(raw), [{ media: 'gzip', digest: sha('l'), size: 7 }]).toString());
  assert.deepEqual(m, {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha(raw), size: raw.length },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: sha('l'), size: 7 }],
  });
  assert.equal(imageTarget({ id: sha(raw), rawConfig: raw, repoDigests: [] }, []).digest, sha(ociManifest(raw, sha(raw), [])));
  assert.equal(imageTarget({ id: sha(raw), rawConfig: raw, repoDigests: [`docker.io/library/busybox@${sha('m')}`] }, []).digest, sha('m'));
});

for (const targets of [true, false]) {
  test(`the reconciler writes status.target with ready ${targets ? 'when told' : 'never when not told'}; lookups by it`, async () => {
    const layers = new FakeLayerStore();
    const images = new ImageReconciler(store, layers, { log, targets });
    const tar = await makeTar([{ name: 'a', data: 'a' }]);
    const info = await layers.applyLayer(null, Readable.from([tar]), {});
    const raw = '{"rootfs":{}}';
    const spec: ImageSpec = { id: sha(raw), rawConfig: raw, diffIds: [info.diffId], chainId: info.chainId, size: 1, repoDigests: [], parent: '', loadedAt: new Date().toISOString(), desired: 'present' };
    store.create(Images, spec.id, spec, { observedGeneration: 0, phase: 'pending', error: '' });
    await images.reconcile(spec.id, { log });
    const r = store.get(Images, spec.id)!;
    assert.equal(r.status.phase, 'ready');
    const want = sha(ociManifest(raw, spec.id, [{ media: info.blobMedia, digest: info.blobDigest, size: info.blobSize }]));
    assert.equal(r.status.target, targets ? want : undefined);
    assert.equal(imageIdOf(r), targets ? want : spec.id);
    assert.equal(findImage(store, imageIdOf(r))?.name, spec.id);
    assert.equal(findImage(store, imageIdOf(r).slice(7, 19))?.name, spec.id, 'by a prefix of its Id');
    assert.equal(findImage(store, spec.id)?.name, spec.id, 'the full config digest still finds it');
    images.stop();
  });
}
