// Push an image built in the test to a real docker-registry on 127.0.0.1 (plain HTTP, insecure
// because loopback) and pull it back into a fresh layer store.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createDistribution, type DistributionDriver } from '../../../drivers/distribution/distribution.ts';
import type { JsonMessage } from '../../../drivers/distribution/types.ts';
import { registryAvailable, startRegistry, type TestRegistry } from '../../e2e/registry/registry.ts';
import { buildImage, MemLayerStore, noise, quietLog, sha256, type TestImage } from './helpers.ts';

const skip = !registryAvailable() && 'docker-registry is not installed';

function makeDist(layers: MemLayerStore, extra: Partial<Parameters<typeof createDistribution>[0]> = {}): DistributionDriver {
  return createDistribution({
    log: quietLog, insecureRegistries: [], registryMirrors: [], certsDir: '/nonexistent', maxConcurrentDownloads: 3, maxDownloadAttempts: 5,
    maxConcurrentUploads: 5, allowNondistributable: [], proxies: {}, layers, platform: { os: 'linux', architecture: 'amd64' }, retryDelayMs: 10, ...extra,
  });
}

describe('push and pull against docker-registry', { skip }, () => {
  let reg: TestRegistry;
  let src: MemLayerStore;
  let img: TestImage;
  const dists: DistributionDriver[] = [];
  const dist = (l: MemLayerStore, extra = {}) => {
    const d = makeDist(l, extra);
    dists.push(d);
    return d;
  };

  before(async () => {
    reg = await startRegistry();
    src = new MemLayerStore();
    img = await buildImage(src, [{ 'etc/a': 'alpha' }, { 'bin/b': noise(200_000) }, { 'usr/c': 'gamma' }]);
  });
  after(async () => {
    dists.forEach((d) => d.close());
    await reg?.stop();
  });

  it('pushes a 3-layer image with the CLI progress messages and pulls it back', async () => {
    const pushMsgs: JsonMessage[] = [];
    const ref = `${reg.hostPort}/test/app:v1`;
    const pushed = await dist(src).push(ref, img, { signal: AbortSignal.timeout(30000), onProgress: (m) => pushMsgs.push(m) });
    assert.match(pushed.digest, /^sha256:[a-f0-9]{64}$/);
    assert.deepEqual(pushMsgs[0], { status: `The push refers to repository [${reg.hostPort}/test/app]` });
    const ids = img.diffIds.map((d) => d.slice(7, 19));
    for (const id of ids) {
      const mine = pushMsgs.filter((m) => m.id === id).map((m) => m.status);
      assert.equal(mine[0], 'Preparing');
      assert.equal(mine.at(-1), 'Pushed');
      assert.ok(mine.includes('Pushing'));
    }
    assert.deepEqual(pushMsgs.at(-2), { status: `v1: digest: ${pushed.digest} size: ${pushed.size}` });
    assert.deepEqual(pushMsgs.at(-1), { progressDetail: {}, aux: { Tag: 'v1', Digest: pushed.digest, Size: pushed.size } });

    // A second push finds every layer already there.
    const again: JsonMessage[] = [];
    const pushed2 = await dist(src).push(ref, img, { signal: AbortSignal.timeout(30000), onProgress: (m) => again.push(m) });
    assert.equal(pushed2.digest, pushed.digest);
    assert.equal(again.filter((m) => m.status === 'Layer already exists').length, 3);

    const dst = new MemLayerStore();
    const msgs: JsonMessage[] = [];
    const res = await dist(dst).pull(ref, { signal: AbortSignal.timeout(30000), onProgress: (m) => msgs.push(m) });
    assert.equal(res.id, img.id);
    assert.equal(res.rawConfig, img.rawConfig);
    assert.deepEqual(res.diffIds, img.diffIds);
    assert.equal(res.chainId, img.chainId);
    assert.equal(res.repoDigest, `${reg.hostPort}/test/app@${pushed.digest}`);
    assert.deepEqual(dst.applied, img.diffIds);
    assert.equal(res.size, [...dst.layers.values()].reduce((n, l) => n + l.info.size, 0));

    assert.deepEqual(msgs[0], { status: 'Pulling from test/app', id: 'v1' });
    const blobIds = img.blobs.map((b) => sha256(b).slice(7, 19));
    for (const id of blobIds) {
      const seq = msgs.filter((m) => m.id === id).map((m) => m.status);
      const order = ['Pulling fs layer', 'Verifying Checksum', 'Download complete', 'Extracting', 'Pull complete'];
      let at = -1;
      for (const s of order) {
        const i = seq.indexOf(s, at + 1);
        assert.ok(i > at, `${id}: ${s} after index ${at} in ${seq.join(', ')}`);
        at = i;
      }
      const dl = msgs.find((m) => m.id === id && m.status === 'Downloading');
      assert.ok(dl?.progressDetail?.total && dl.progress?.startsWith('['), JSON.stringify(dl));
    }
    assert.deepEqual(msgs.at(-1), { status: `Digest: ${pushed.digest}` });

    // Pulling again: every layer already exists.
    const msgs2: JsonMessage[] = [];
    await dist(dst).pull(ref, { signal: AbortSignal.timeout(30000), onProgress: (m) => msgs2.push(m) });
    assert.equal(msgs2.filter((m) => m.status === 'Already exists').length, 3);
    assert.equal(msgs2.filter((m) => m.status === 'Downloading').length, 0);
  });

  it('gzips layers stored uncompressed and mounts blobs known in another repository', async () => {
    const plain = new MemLayerStore();
    const pimg = await buildImage(plain, [{ 'x': 'one' }, { 'y': 'two' }], { compress: false, label: 'plain' });
    const d = dist(plain);
    const a = await d.push(`${reg.hostPort}/plain/a:1`, pimg, { signal: AbortSignal.timeout(30000), onProgress: () => {} });
    const msgs: JsonMessage[] = [];
    await d.push(`${reg.hostPort}/plain/b:1`, pimg, { signal: AbortSignal.timeout(30000), onProgress: (m) => msgs.push(m) });
    assert.equal(msgs.filter((m) => m.status === 'Mounted from plain/a').length, 2, JSON.stringify(msgs));

    const dst = new MemLayerStore();
    const res = await dist(dst).pull(`${reg.hostPort}/plain/b:1`, { signal: AbortSignal.timeout(30000), onProgress: () => {} });
    assert.deepEqual(res.diffIds, pimg.diffIds);
    assert.ok([...dst.layers.values()].every((l) => l.info.blobMedia === 'gzip'));
    assert.ok(a.digest);
  });

  it('answers the reference errors for unknown tags and repositories', async () => {
    const d = dist(new MemLayerStore());
    await assert.rejects(d.pull(`${reg.hostPort}/test/app:nope`, { signal: AbortSignal.timeout(10000), onProgress: () => {} }), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'NotFound');
      assert.equal(err.message, `manifest for ${reg.hostPort}/test/app:nope not found: manifest unknown: manifest unknown`);
      return true;
    });
    await assert.rejects(d.pull(`${reg.hostPort}/nothing/here:latest`, { signal: AbortSignal.timeout(10000), onProgress: () => {} }), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'NotFound');
      return true;
    });
  });

  it('inspects a distribution and lists tags', async () => {
    const d = dist(new MemLayerStore());
    const info = await d.inspectDistribution(`${reg.hostPort}/test/app:v1`, undefined);
    assert.equal(info.Descriptor.mediaType, 'application/vnd.docker.distribution.manifest.v2+json');
    assert.deepEqual(info.Platforms, [{ architecture: 'amd64', os: 'linux' }]);
    assert.deepEqual(await d.listTags(`${reg.hostPort}/test/app`, undefined), ['v1']);
    assert.deepEqual(await d.checkAuth(reg.hostPort, {}), { Status: 'Login Succeeded' });
  });
});
