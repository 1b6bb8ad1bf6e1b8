import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { createImageArchive } from '../../../drivers/image/archive.ts';
import { EngineError } from '../../../lib/errors.ts';
import type { ImageArchivePort, SaveImage } from '../../../api/ports.ts';
import { FakeLayerStore } from './fake-layer-store.ts';
import { body, digest, hex, makeTar, readTar } from './tar-helpers.ts';

const log = pino({ level: 'silent' });
const platform = { os: 'linux', architecture: 'amd64' };
let tmp: string;
let store: FakeLayerStore;
let archive: ImageArchivePort;
const signal = () => new AbortController().signal;

beforeEach(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'image-archive-test-'));
  store = new FakeLayerStore();
  archive = createImageArchive({ layers: store, tmpDir: tmp, log, platform });
});
afterEach(async () => {
  assert.deepEqual(await readdir(tmp), []);
  await rm(tmp, { recursive: true, force: true });
});

test('import builds a one-layer image with changes and the reference config shape', async () => {
  const rootfs = await makeTar([{ name: 'bin/sh', data: 'x' }, { name: 'etc/os-release', data: 'y' }]);
  const img = await archive.importRootfs(body(gzipSync(rootfs)), { changes: ['CMD ["sh"]', 'ENV A=1', 'WORKDIR /x'], message: '' }, signal());
  assert.equal(img.id, digest(img.rawConfig));
  assert.deepEqual(img.diffIds, [digest(rootfs)]);
  assert.equal(img.chainId, digest(rootfs));
  assert.equal(img.size, rootfs.length);
  assert.deepEqual(img.repoTags, []);
  const cfg = JSON.parse(img.rawConfig);
  assert.equal(cfg.architecture, 'amd64');
  assert.equal(cfg.os, 'linux');
  assert.match(cfg.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
  assert.equal(cfg.comment, 'Imported from -');
  assert.deepEqual(cfg.rootfs, { type: 'layers', diff_ids: [digest(rootfs)] });
  assert.deepEqual(cfg.history, [{ created: cfg.created, comment: 'Imported from -' }]);
  assert.deepEqual(cfg.config.Cmd, ['sh']);
  assert.deepEqual(cfg.config.Env, ['A=1']);
  assert.equal(cfg.config.WorkingDir, '/x');
  assert.equal(cfg.config.Entrypoint, null);
  assert.equal(cfg.config.Hostname, '');
});

test('import takes the message and the platform', async () => {
  const rootfs = await makeTar([{ name: 'f', data: 'z' }]);
  const img = await archive.importRootfs(body(rootfs), { changes: [], message: 'hello', platform: 'linux/arm64/v8' }, signal());
  const cfg = JSON.parse(img.rawConfig);
  assert.equal(cfg.comment, 'hello');
  assert.equal(cfg.history[0].comment, 'hello');
  assert.equal(cfg.architecture, 'arm64');
  assert.equal(cfg.variant, 'v8');
});

test('import refuses a bad change before unpacking anything', async () => {
  const rootfs = await makeTar([{ name: 'f', data: 'z' }]);
  await assert.rejects(archive.importRootfs(body(rootfs), { changes: ['RUN x'], message: '' }, signal()),
    (e: unknown) => e instanceof EngineError && e.code === 'InvalidArgument' && e.message === 'run is not a valid change command');
  await assert.rejects(archive.importRootfs(body(rootfs), { changes: [], message: '', platform: 'windows/amd64' }, signal()),
    (e: unknown) => e instanceof EngineError && e.code === 'InvalidArgument');
  assert.deepEqual(store.applied, []);
});

async function seedImages(): Promise<SaveImage[]> {
  const base = await makeTar([{ name: 'bin/sh', data: 'shell' }]);
  const top = await makeTar([{ name: 'app', data: 'app' }]);
  const lb = await store.applyLayer(null, body(base));
  const lt = await store.applyLayer(lb.chainId, body(top));
  const c1 = JSON.stringify({ architecture: 'amd64', os: 'linux', config: {}, rootfs: { type: 'layers', diff_ids: [lb.diffId] } });
  const c2 = JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Cmd: ['app'] }, rootfs: { type: 'layers', diff_ids: [lb.diffId, lt.diffId] } });
  const c3 = JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] } });
  return [
    { id: digest(c1), rawConfig: c1, diffIds: [lb.diffId], chainId: lb.chainId, repoTags: ['docker.io/library/busybox:latest'] },
    { id: digest(c2), rawConfig: c2, diffIds: [lb.diffId, lt.diffId], chainId: lt.chainId,
      repoTags: ['docker.io/me/app:1', 'localhost:5000/app:2'] },
    { id: digest(c3), rawConfig: c3, diffIds: [], chainId: null, repoTags: [] },
  ];
}

test('save writes the current docker save layout, each shared layer once', async () => {
  const images = await seedImages();
  const files = await readTar(archive.save(images, signal()));
  const names = [...files.keys()];
  const [lb, lt] = images[1]!.diffIds;
  for (const d of [lb!, lt!, images[0]!.id, images[1]!.id, images[2]!.id]) {
    assert.equal(names.filter((n) => n === `blobs/sha256/${d.slice(7)}`).length, 1, d);
  }
  assert.equal(hex(files.get(`blobs/sha256/${lb!.slice(7)}`)!), lb!.slice(7));
  for (const n of names) if (n.startsWith('blobs/sha256/') && !n.endsWith('/')) assert.equal(hex(files.get(n)!), n.slice(13), n);

  const manifest = JSON.parse(files.get('manifest.json')!.toString());
  assert.deepEqual(manifest, [
    { Config: `blobs/sha256/${images[0]!.id.slice(7)}`, RepoTags: ['busybox:latest'], Layers: [`blobs/sha256/${lb!.slice(7)}`] },
    { Config: `blobs/sha256/${images[1]!.id.slice(7)}`, RepoTags: ['me/app:1', 'localhost:5000/app:2'],
      Layers: [`blobs/sha256/${lb!.slice(7)}`, `blobs/sha256/${lt!.slice(7)}`] },
    { Config: `blobs/sha256/${images[2]!.id.slice(7)}`, RepoTags: null, Layers: [] },
  ]);
  assert.deepEqual(JSON.parse(files.get('repositories')!.toString()), {
    busybox: { latest: images[0]!.id.slice(7) },
    'me/app': { '1': images[1]!.id.slice(7) },
    'localhost:5000/app': { '2': images[1]!.id.slice(7) },
  });
  assert.deepEqual(JSON.parse(files.get('oci-layout')!.toString()), { imageLayoutVersion: '1.0.0' });
  const index = JSON.parse(files.get('index.json')!.toString());
  assert.equal(index.schemaVersion, 2);
  assert.equal(index.manifests.length, 4);
  assert.deepEqual(index.manifests[0].annotations, {
    'io.containerd.image.name': 'docker.io/library/busybox:latest', 'org.opencontainers.image.ref.name': 'latest',
  });
  assert.equal(index.manifests[3].annotations, undefined);
  const m = JSON.parse(files.get(`blobs/sha256/${index.manifests[1].digest.slice(7)}`)!.toString());
  assert.equal(m.mediaType, 'application/vnd.oci.image.manifest.v1+json');
  assert.equal(m.config.digest, images[1]!.id);
  assert.deepEqual(m.layers.map((l: { mediaType: string }) => l.mediaType), Array(2).fill('application/vnd.oci.image.layer.v1.tar'));
});

test('save then load reproduces ids, layers and tags (through manifest.json and through index.json)', async () => {
  const images = await seedImages();
  const chunks: Buffer[] = [];
  for await (const c of archive.save(images, signal())) chunks.push(c as Buffer);
  const saved = Buffer.concat(chunks);

  const fresh = new FakeLayerStore();
  const other = createImageArchive({ layers: fresh, tmpDir: tmp, log, platform });
  const loaded = await other.load(body(saved), signal());
  assert.deepEqual(loaded.map((i) => ({ id: i.id, rawConfig: i.rawConfig, diffIds: i.diffIds, chainId: i.chainId, repoTags: i.repoTags })),
    images.map((i) => ({ id: i.id, rawConfig: i.rawConfig, diffIds: i.diffIds, chainId: i.chainId, repoTags: i.repoTags })));
  assert.equal(fresh.applied.length, 2);

  // The same archive without manifest.json is a valid OCI layout and gives the same images.
  const files = await readTar([saved]);
  files.delete('manifest.json');
  const ociOnly = await makeTar([...files].filter(([n]) => !n.endsWith('/')).map(([name, data]) => ({ name, data })));
  const viaOci = await createImageArchive({ layers: new FakeLayerStore(), tmpDir: tmp, log, platform }).load(body(ociOnly), signal());
  assert.deepEqual(viaOci.map((i) => [i.id, i.repoTags]), images.map((i) => [i.id, i.repoTags]));
});

test('save of a layer the store cannot export fails the stream and cleans up', async () => {
  const c = JSON.stringify({ rootfs: { type: 'layers', diff_ids: [digest('missing')] } });
  const stream = archive.save([{ id: digest(c), rawConfig: c, diffIds: [digest('missing')], chainId: digest('missing'), repoTags: [] }], signal());
  await assert.rejects(readTar(stream), /layer/);
  await new Promise((r) => setTimeout(r, 20));
});

test('a save whose reader goes away stops and cleans up', async () => {
  const big = await makeTar([{ name: 'blob', data: Buffer.alloc(8 << 20, 7) }]);
  const l = await store.applyLayer(null, body(big));
  const c = JSON.stringify({ rootfs: { type: 'layers', diff_ids: [l.diffId] } });
  const stream = archive.save([{ id: digest(c), rawConfig: c, diffIds: [l.diffId], chainId: l.chainId, repoTags: [] }], signal());
  for await (const _ of stream) break; // destroys the stream after the first chunk
  for (let i = 0; i < 50 && (await readdir(tmp)).length > 0; i++) await new Promise((r) => setTimeout(r, 10));
});

test('aborting a save mid-stream errors the stream as Canceled', async () => {
  const big = await makeTar([{ name: 'blob', data: Buffer.alloc(8 << 20, 7) }]);
  const l = await store.applyLayer(null, body(big));
  const c = JSON.stringify({ rootfs: { type: 'layers', diff_ids: [l.diffId] } });
  const ac = new AbortController();
  const stream = archive.save([{ id: digest(c), rawConfig: c, diffIds: [l.diffId], chainId: l.chainId, repoTags: [] }], ac.signal);
  await assert.rejects((async () => {
    for await (const _ of stream) ac.abort();
  })(), (e: unknown) => e instanceof EngineError && e.code === 'Canceled');
  for (let i = 0; i < 50 && (await readdir(tmp)).length > 0; i++) await new Promise((r) => setTimeout(r, 10));
});
