import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync, zstdCompressSync } from 'node:zlib';
import { pino } from 'pino';
import { createImageArchive } from '../../../drivers/image/archive.ts';
import { EngineError } from '../../../lib/errors.ts';
import type { ImageArchivePort } from '../../../api/ports.ts';
import { FakeLayerStore } from './fake-layer-store.ts';
import { body, digest, hex, makeTar } from './tar-helpers.ts';

const log = pino({ level: 'silent' });
let tmp: string;
let store: FakeLayerStore;
let archive: ImageArchivePort;

beforeEach(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'image-archive-test-'));
  store = new FakeLayerStore();
  archive = createImageArchive({ layers: store, tmpDir: tmp, log, platform: { os: 'linux', architecture: 'amd64' } });
});
afterEach(async () => {
  // Every load must clean its spool dir, on success and on failure alike.
  assert.deepEqual(await readdir(tmp), []);
  await rm(tmp, { recursive: true, force: true });
});

async function layer(files: Record<string, string>): Promise<Buffer> {
  return makeTar(Object.entries(files).map(([name, data]) => ({ name, data })));
}

function config(diffIds: string[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    architecture: 'amd64', os: 'linux', config: { Cmd: ['sh'] }, ...extra,
    rootfs: { type: 'layers', diff_ids: diffIds },
  });
}

const signal = () => new AbortController().signal;

function assertInvalid(re: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof EngineError, String(e));
    assert.equal(e.code, 'InvalidArgument');
    assert.match(e.message, re);
    return true;
  };
}

test('loads the legacy docker save layout, following layer symlinks', async () => {
  const l1 = await layer({ 'bin/sh': 'shell' });
  const l2 = await layer({ 'etc/hello': 'hi' });
  const c1 = config([digest(l1), digest(l2)]);
  const c2 = config([digest(l1)], { comment: 'second' });
  const tar = await makeTar([
    { name: 'manifest.json', data: JSON.stringify([
      { Config: `${hex(c1)}.json`, RepoTags: ['busybox:latest', 'me/app:1'], Layers: ['aaa/layer.tar', 'bbb/layer.tar'] },
      { Config: `${hex(c2)}.json`, RepoTags: null, Layers: ['ccc/layer.tar'] },
    ]) },
    { name: 'aaa/', dir: true },
    { name: 'aaa/layer.tar', data: l1 },
    { name: 'aaa/VERSION', data: '1.0' },
    { name: 'bbb/layer.tar', data: l2 },
    { name: 'ccc/layer.tar', symlink: '../aaa/layer.tar' },
    { name: `${hex(c1)}.json`, data: c1 },
    { name: `${hex(c2)}.json`, data: c2 },
    { name: 'repositories', data: '{}' },
  ]);
  const progress: string[] = [];
  const out = await archive.load(body(tar), signal(), (m) => progress.push(m));
  assert.equal(out.length, 2);
  const [a, b] = out;
  assert.equal(a!.id, digest(c1));
  assert.equal(a!.rawConfig, c1);
  assert.deepEqual(a!.diffIds, [digest(l1), digest(l2)]);
  assert.equal(a!.chainId, store.chainIdOf(digest(l1), digest(l2)));
  assert.equal(a!.size, l1.length + l2.length);
  assert.deepEqual(a!.repoTags, ['docker.io/library/busybox:latest', 'docker.io/me/app:1']);
  assert.equal(b!.id, digest(c2));
  assert.equal(b!.chainId, digest(l1));
  assert.deepEqual(b!.repoTags, []);
  assert.deepEqual(store.applied, [digest(l1), digest(l2)]);
  assert.equal(progress.length, 2);
  assert.match(progress[0]!, /^Loading layer [0-9a-f]{12}$/);
});

test('loads the blobs layout with a gzip layer, entries in any order, gzip-compressed archive', async () => {
  const l1 = await layer({ 'a.txt': 'a' });
  const gz = gzipSync(l1);
  const c = config([digest(l1)]);
  const tar = await makeTar([
    { name: `blobs/sha256/${hex(gz)}`, data: gz },
    { name: 'manifest.json', data: JSON.stringify([{ Config: `blobs/sha256/${hex(c)}`, RepoTags: ['localhost:5000/x/y:2'], Layers: [`blobs/sha256/${hex(gz)}`] }]) },
    { name: `blobs/sha256/${hex(c)}`, data: c },
  ]);
  const out = await archive.load(body(gzipSync(tar)), signal());
  assert.equal(out.length, 1);
  assert.equal(out[0]!.id, digest(c));
  assert.deepEqual(out[0]!.repoTags, ['localhost:5000/x/y:2']);
  assert.deepEqual(store.applied, [digest(l1)]);
});

test('loads an OCI layout: nested index, platform pick, name annotations', async () => {
  const amd = await layer({ arch: 'amd64' });
  const arm = await layer({ arch: 'arm64' });
  const cAmd = config([digest(amd)]);
  const cArm = config([digest(arm)], { architecture: 'arm64' });
  const manifest = (c: string, l: Buffer) => JSON.stringify({
    schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: digest(c), size: c.length },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: digest(l), size: l.length }],
  });
  const mAmd = manifest(cAmd, amd);
  const mArm = manifest(cArm, arm);
  const attest = JSON.stringify({ schemaVersion: 2, config: { digest: digest('x'), size: 1 }, layers: [] });
  const nested = JSON.stringify({
    schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [
      { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digest(mArm), size: mArm.length, platform: { os: 'linux', architecture: 'arm64' } },
      { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digest(mAmd), size: mAmd.length, platform: { os: 'linux', architecture: 'amd64' } },
      { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digest(attest), size: attest.length, platform: { os: 'unknown', architecture: 'unknown' },
        annotations: { 'vnd.docker.reference.type': 'attestation-manifest' } },
    ],
  });
  const index = JSON.stringify({
    schemaVersion: 2,
    manifests: [
      { mediaType: 'application/vnd.oci.image.index.v1+json', digest: digest(nested), size: nested.length,
        annotations: { 'io.containerd.image.name': 'docker.io/library/alpine:3.20', 'org.opencontainers.image.ref.name': '3.20' } },
      { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digest(mArm), size: mArm.length,
        annotations: { 'org.opencontainers.image.ref.name': 'quay.io/x/arm:1' } },
      { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digest(mAmd), size: mAmd.length,
        annotations: { 'org.opencontainers.image.ref.name': 'justatag' } },
    ],
  });
  const blob = (b: string | Buffer) => ({ name: `blobs/sha256/${hex(b)}`, data: b });
  const tar = await makeTar([
    { name: 'index.json', data: index },
    { name: 'oci-layout', data: '{"imageLayoutVersion":"1.0.0"}' },
    blob(nested), blob(mAmd), blob(mArm), blob(cAmd), blob(cArm), blob(amd), blob(arm),
  ]);
  // The arm64 image is loaded only because the archive names it at top level (docker load
  // does not refuse foreign architectures); the nested index resolves to amd64.
  const out = await archive.load(body(tar), signal());
  const byId = new Map(out.map((i) => [i.id, i]));
  assert.equal(out.length, 2);
  assert.deepEqual(byId.get(digest(cAmd))!.repoTags, ['docker.io/library/alpine:3.20']);
  assert.deepEqual(byId.get(digest(cArm))!.repoTags, ['quay.io/x/arm:1']);
});

test('a blob whose content does not match its digest is refused before any layer is applied', async () => {
  const l1 = await layer({ a: '1' });
  const c = config([digest(l1)]);
  const tampered = await layer({ a: '2' });
  const tar = await makeTar([
    { name: 'manifest.json', data: JSON.stringify([{ Config: `blobs/sha256/${hex(c)}`, RepoTags: ['a:b'], Layers: [`blobs/sha256/${hex(l1)}`] }]) },
    { name: `blobs/sha256/${hex(c)}`, data: c },
    { name: `blobs/sha256/${hex(l1)}`, data: tampered },
  ]);
  await assert.rejects(archive.load(body(tar), signal()), assertInvalid(/digest mismatch/));
  assert.deepEqual(store.applied, []);
});

test('a legacy layer.tar that does not hash to its diff id is refused by the layer store', async () => {
  const l1 = await layer({ a: '1' });
  const c = config([digest(l1)]);
  const tar = await makeTar([
    { name: 'manifest.json', data: JSON.stringify([{ Config: `${hex(c)}.json`, RepoTags: [], Layers: ['x/layer.tar'] }]) },
    { name: `${hex(c)}.json`, data: c },
    { name: 'x/layer.tar', data: await layer({ a: 'other' }) },
  ]);
  await assert.rejects(archive.load(body(tar), signal()), assertInvalid(/diff id mismatch/));
});

test('broken archives are InvalidArgument with a clear message', async () => {
  const l1 = await layer({ a: '1' });
  const c = config([digest(l1)]);
  const cases: Array<[Buffer, RegExp]> = [
    [Buffer.from('definitely not a tar archive, just some bytes '.repeat(20)), /invalid tar archive|no manifest/],
    [await makeTar([{ name: 'hello', data: 'x' }]), /no manifest.json or index.json/],
    [await makeTar([{ name: 'manifest.json', data: '{nope' }]), /manifest.json is not valid JSON/],
    [await makeTar([{ name: 'manifest.json', data: JSON.stringify([{ Config: 'c.json', Layers: [] }]) }]), /c.json not found/],
    [await makeTar([
      { name: 'manifest.json', data: JSON.stringify([{ Config: 'c.json', RepoTags: [], Layers: [] }]) },
      { name: 'c.json', data: c },
    ]), /layers length mismatch: expected 1, got 0/],
    [await makeTar([
      { name: 'manifest.json', data: JSON.stringify([{ Config: 'c.json', RepoTags: ['Bad:Tag'], Layers: ['l.tar'] }]) },
      { name: 'c.json', data: c },
      { name: 'l.tar', data: l1 },
    ]), /invalid tag "Bad:Tag"/],
    [await makeTar([
      { name: 'manifest.json', data: JSON.stringify([{ Config: 'c.json', RepoTags: [], Layers: ['l.tar'] }]) },
      { name: 'c.json', data: config([digest(l1)], { os: 'windows' }) },
      { name: 'l.tar', data: l1 },
    ]), /cannot load windows image on linux/],
    [await makeTar([{ name: 'index.json', data: JSON.stringify({ manifests: [{ digest: digest('nothing'), size: 7 }] }) }]),
      /blobs\/sha256\/[0-9a-f]{64} not found/],
  ];
  for (const [tar, re] of cases) await assert.rejects(archive.load(body(tar), signal()), assertInvalid(re));
  assert.deepEqual(store.applied, []);
});

test('an aborted load is Canceled and cleans up', async () => {
  const ac = new AbortController();
  ac.abort();
  const tar = await makeTar([{ name: 'manifest.json', data: '[]' }]);
  await assert.rejects(archive.load(body(tar), ac.signal), (e: unknown) => e instanceof EngineError && e.code === 'Canceled');
});

test('an empty manifest list loads nothing', async () => {
  assert.deepEqual(await archive.load(body(await makeTar([{ name: 'manifest.json', data: '[]' }])), signal()), []);
});

test('aborting a load while the body is still arriving is Canceled and cleans up', async () => {
  const { PassThrough } = await import('node:stream');
  const pt = new PassThrough();
  const head = await makeTar([{ name: 'big', data: Buffer.alloc(1 << 20) }]);
  pt.write(head.subarray(0, 600_000)); // the rest never comes
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 30);
  await assert.rejects(archive.load(pt, ac.signal), (e: unknown) => e instanceof EngineError && e.code === 'Canceled');
});

test('a zstd-compressed archive loads too', async () => {
  const l1 = await layer({ z: 'z' });
  const c = config([digest(l1)]);
  const tar = await makeTar([
    { name: 'manifest.json', data: JSON.stringify([{ Config: 'c.json', RepoTags: ['z:1'], Layers: ['l.tar'] }]) },
    { name: 'c.json', data: c },
    { name: 'l.tar', data: l1 },
  ]);
  const out = await archive.load(body(zstdCompressSync(tar)), signal());
  assert.deepEqual(out.map((i) => [i.id, i.repoTags]), [[digest(c), ['docker.io/library/z:1']]]);
});
