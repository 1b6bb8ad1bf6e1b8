// The pull, push, auth and distribution routes driven through fastify inject, with the real
// distribution driver against docker-registry on 127.0.0.1 and the real store.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createApp } from '../../../api/app.ts';
import { authRoutes } from '../../../api/distribution/auth-routes.ts';
import { pullHandler } from '../../../api/distribution/pull-handler.ts';
import { pushHandler } from '../../../api/distribution/push-handler.ts';
import { createDistribution, type DistributionDriver } from '../../../drivers/distribution/distribution.ts';
import { PullReconciler } from '../../../reconcilers/image/pull-reconciler.ts';

import { openStore, type Store } from '../../../store/store.ts';
import { type ImageStatus, Images } from '../../../store/kinds/image.ts';
import { registryAvailable, startRegistry, type TestRegistry } from '../../e2e/registry/registry.ts';
import { buildImage, MemLayerStore, quietLog, type TestImage } from './helpers.ts';
import { References } from '../../../store/kinds/reference.ts';
import { pullController } from '../../../reconcilers/image/controller.ts';

const skip = !registryAvailable() && 'docker-registry is not installed';

interface Daemon {
  app: FastifyInstance;
  store: Store;
  layers: MemLayerStore;
  dist: DistributionDriver;
  close(): Promise<void>;
}

/** A store whose image "reconciler" marks every pending image ready, and the routes under test. */
async function daemon(): Promise<Daemon> {
  const dir = await mkdtemp(join(tmpdir(), 'engine-dist-api-'));
  const store = openStore(join(dir, 'store.db'));
  const stopWatch = store.watch(Images, (ev) => {
    const r = ev.resource as { status: ImageStatus };
    if (ev.type === 'put' && r.status.phase === 'pending') {
      setImmediate(() => store.updateStatus(Images, ev.name, (s, cur) => ({ ...s, phase: 'ready', observedGeneration: cur.generation })));
    }
  });
  const layers = new MemLayerStore();
  const dist = createDistribution({
    log: quietLog, insecureRegistries: [], registryMirrors: [], certsDir: '/nonexistent', maxConcurrentDownloads: 3, maxDownloadAttempts: 3,
    maxConcurrentUploads: 5, allowNondistributable: [], proxies: {}, layers, platform: { os: 'linux', architecture: 'amd64' }, retryDelayMs: 10,
  });
  // The pull reconciler under its controller, as cmd runs it.
  const pulls = new PullReconciler(store, dist, { waitTimeoutMs: 5000 });
  const pullCtl = pullController(pulls).build({ store, reconciler: pulls, log: quietLog });
  await pullCtl.start();
  const app = createApp({
    log: quietLog, version: { api: '1.47', min: '1.24' },
    plugins: [
      async (a) => {
        a.post('/images/create', pullHandler({ distribution: dist, store, jobs: { watch: (n, fn) => pulls.progress.subscribe(n, fn), setCredentials: (n, auth) => pulls.setCredentials(n, auth) } }));
        a.post('/images/*', pushHandler({ distribution: dist, store }));
        await a.register(authRoutes({ distribution: dist }));
      },
    ],
  });
  await app.ready();
  return {
    app, store, layers, dist,
    close: async () => {
      await app.close();
      await pullCtl.stop();
      await pulls.shutdown();
      dist.close();
      stopWatch();
      store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const lines = (body: string) => body.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

describe('distribution routes', { skip }, () => {
  let reg: TestRegistry;
  let src: Daemon;
  let img: TestImage;
  before(async () => {
    reg = await startRegistry();
    src = await daemon();
    img = await buildImage(src.layers, [{ a: 'one' }, { b: 'two' }], { label: 'api' });
    src.store.create(Images, img.id, {
      id: img.id, rawConfig: img.rawConfig, diffIds: img.diffIds, chainId: img.chainId, size: 0, repoDigests: [], parent: '', loadedAt: '', desired: 'present',
    }, { observedGeneration: 1, phase: 'ready', error: '' });
    src.store.create(References, `${reg.hostPort}/api/img:v1`, { imageId: img.id }, {});
  });
  after(async () => {
    await src?.close();
    await reg?.stop();
  });

  it('pushes, then pulls into a fresh daemon and records image and tag', async () => {
    const push = await src.app.inject({ method: 'POST', url: `/v1.47/images/${reg.hostPort}/api/img/push?tag=v1`, headers: { 'X-Registry-Auth': Buffer.from('{}').toString('base64url') } });
    assert.equal(push.statusCode, 200, push.body);
    assert.equal(push.headers['content-type'], 'application/json');
    const pl = lines(push.body);
    const aux = pl.at(-1)!.aux as { Digest: string; Tag: string; Size: number };
    assert.equal(aux.Tag, 'v1');
    assert.ok(src.store.get(Images, img.id)!.spec.repoDigests.includes(`${reg.hostPort}/api/img@${aux.Digest}`));

    const dst = await daemon();
    try {
      const res = await dst.app.inject({ method: 'POST', url: `/v1.47/images/create?fromImage=${reg.hostPort}/api/img&tag=v1` });
      assert.equal(res.statusCode, 200, res.body);
      const ls = lines(res.body);
      assert.deepEqual(ls[0], { status: 'Pulling from api/img', id: 'v1' });
      assert.deepEqual(ls.at(-2), { status: `Digest: ${aux.Digest}` });
      assert.deepEqual(ls.at(-1), { status: `Status: Downloaded newer image for ${reg.hostPort}/api/img:v1` });
      const rec = dst.store.get(Images, img.id)!;
      assert.deepEqual(rec.spec.repoDigests, [`${reg.hostPort}/api/img@${aux.Digest}`]);
      assert.deepEqual(rec.spec.diffIds, img.diffIds);
      assert.equal(dst.store.get(References, `${reg.hostPort}/api/img:v1`)!.spec.imageId, img.id);

      const again = await dst.app.inject({ method: 'POST', url: `/images/create?fromImage=${reg.hostPort}/api/img:v1` });
      assert.deepEqual(lines(again.body).at(-1), { status: `Status: Image is up to date for ${reg.hostPort}/api/img:v1` });

      const byDigest = await dst.app.inject({ method: 'POST', url: `/images/create?fromImage=${reg.hostPort}/api/img&tag=${aux.Digest}` });
      assert.equal(byDigest.statusCode, 200);
      assert.match(String(lines(byDigest.body).at(-1)!.status), /^Status: (Image is up to date|Downloaded newer image) for .*@sha256:/);

      const missing = await dst.app.inject({ method: 'POST', url: `/images/create?fromImage=${reg.hostPort}/api/img&tag=nope` });
      assert.equal(missing.statusCode, 404);
      assert.equal(JSON.parse(missing.body).message, `manifest for ${reg.hostPort}/api/img:nope not found: manifest unknown: manifest unknown`);

      const bad = await dst.app.inject({ method: 'POST', url: '/images/create?fromImage=a//b' });
      assert.equal(bad.statusCode, 400);
    } finally {
      await dst.close();
    }
  });

  it('refuses to push a tag that does not exist locally', async () => {
    const res = await src.app.inject({ method: 'POST', url: `/images/${reg.hostPort}/api/none/push?tag=x` });
    assert.equal(res.statusCode, 404);
    assert.equal(JSON.parse(res.body).message, `An image does not exist locally with the tag: ${reg.hostPort}/api/none`);
  });

  it('answers POST /auth and GET /distribution/{name}/json', async () => {
    const auth = await src.app.inject({ method: 'POST', url: '/auth', payload: { serveraddress: reg.hostPort, username: 'u', password: 'p' } });
    assert.equal(auth.statusCode, 200, auth.body);
    assert.deepEqual(JSON.parse(auth.body), { IdentityToken: '', Status: 'Login Succeeded' });
    const d = await src.app.inject({ method: 'GET', url: `/v1.47/distribution/${reg.hostPort}/api/img:v1/json` });
    assert.equal(d.statusCode, 200, d.body);
    const body = JSON.parse(d.body);
    assert.equal(body.Descriptor.mediaType, 'application/vnd.docker.distribution.manifest.v2+json');
    assert.deepEqual(body.Platforms, [{ architecture: 'amd64', os: 'linux' }]);
  });
});
