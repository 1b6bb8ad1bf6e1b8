// Pulls into the real layer store (overlay2, run as root) from docker-registry through a proxy that
// can delay, cut or corrupt blobs: layers unpack while they download and commit bottom-up, a cut
// download falls back to the spooled file, a failed pull lets go of what it applied, and with
// holdLayers the layers stay leased until the caller releases them.
import assert from 'node:assert/strict';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createDistribution, type DistributionDriver } from '../../../drivers/distribution/distribution.ts';
import { createLayerStore } from '../../../drivers/storage/layer-store.ts';
import type { LayerStore } from '../../../drivers/storage/types.ts';
import { registryAvailable, startRegistry, type TestRegistry } from '../../e2e/registry/registry.ts';
import { removeRoot, tempRoot } from '../storage/helpers.ts';
import { buildImage, MemLayerStore, noise, quietLog, type TestImage } from './helpers.ts';

const skip = !registryAvailable() && 'docker-registry is not installed';

interface Faults {
  /** Blob digests answered with these bytes flipped (a digest mismatch). */
  corrupt?: Set<string>;
  /** Like corrupt, for the first download of each only. */
  corruptOnce?: Set<string>;
  /** Cut the first download of each of these blobs after 600 bytes. */
  cut?: Set<string>;
  delayMs?: number;
}

function faultProxy(target: URL, faults: Faults) {
  const state = { blobGets: new Map<string, number>() };
  const server: Server = createServer((req, res) => {
    const digest = /\/blobs\/(sha256:[a-f0-9]{64})/.exec(req.url ?? '')?.[1];
    if (digest && req.method === 'GET') state.blobGets.set(digest, (state.blobGets.get(digest) ?? 0) + 1);
    const go = () => {
      const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
        res.writeHead(ur.statusCode ?? 500, ur.headers);
        const first = digest && state.blobGets.get(digest) === 1;
        if (digest && ur.statusCode === 200 && faults.cut?.has(digest) && first) {
          let sent = false;
          ur.on('data', (c: Buffer) => {
            if (sent) return;
            sent = true;
            res.write(c.subarray(0, 600));
            setTimeout(() => {
              res.socket?.destroy();
              ur.destroy();
            }, 50);
          });
          return;
        }
        if (digest && ur.statusCode === 200 && (faults.corrupt?.has(digest) || (first && faults.corruptOnce?.has(digest)))) {
          let flipped = false;
          ur.on('data', (c: Buffer) => {
            if (!flipped && c.length > 100) {
              c = Buffer.from(c);
              c[100]! ^= 0xff;
              flipped = true;
            }
            res.write(c);
          });
          ur.on('end', () => res.end());
          return;
        }
        ur.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    };
    if (digest && faults.delayMs) setTimeout(go, faults.delayMs);
    else go();
  });
  return { server, state };
}

describe('pulls into the real layer store', { skip }, () => {
  let reg: TestRegistry;
  let img: TestImage;
  let root: string;
  const dists: DistributionDriver[] = [];
  const servers: Server[] = [];
  const stores: LayerStore[] = [];
  let n = 0;

  async function fresh(): Promise<{ store: LayerStore; dataRoot: string }> {
    const dataRoot = join(root, `d${n++}`);
    await mkdir(join(dataRoot, 'tmp'), { recursive: true });
    const store = await createLayerStore({ dataRoot, driver: 'overlay2', tmpDir: join(dataRoot, 'tmp'), usePigz: true, log: quietLog });
    stores.push(store);
    return { store, dataRoot };
  }
  function dist(store: LayerStore, dataRoot: string, extra: Partial<Parameters<typeof createDistribution>[0]> = {}): DistributionDriver {
    const d = createDistribution({
      log: quietLog, insecureRegistries: [], registryMirrors: [], certsDir: '/nonexistent', maxConcurrentDownloads: 3, maxDownloadAttempts: 2,
      maxConcurrentUploads: 5, allowNondistributable: [], proxies: {}, layers: store, platform: { os: 'linux', architecture: 'amd64' },
      retryDelayMs: 10, tmpDir: join(dataRoot, 'tmp'), ...extra,
    });
    dists.push(d);
    return d;
  }
  async function proxied(faults: Faults) {
    const p = faultProxy(new URL(reg.url), faults);
    await new Promise<void>((r) => p.server.listen(0, '127.0.0.1', r));
    servers.push(p.server);
    return { hostPort: `127.0.0.1:${(p.server.address() as { port: number }).port}`, state: p.state };
  }
  const pull = (d: DistributionDriver, ref: string, holdLayers = false) =>
    d.pull(ref, { signal: AbortSignal.timeout(60000), onProgress: () => {}, holdLayers });

  before(async () => {
    root = await tempRoot('pull-layers-');
    reg = await startRegistry();
    const src = new MemLayerStore();
    img = await buildImage(src, [0, 1, 2, 3].map((i) => ({ [`dir/f${i}`]: noise(400_000, i + 7) })));
    const push = createDistribution({
      log: quietLog, insecureRegistries: [], registryMirrors: [], certsDir: '/nonexistent', maxConcurrentDownloads: 3, maxDownloadAttempts: 2,
      maxConcurrentUploads: 5, allowNondistributable: [], proxies: {}, layers: src, platform: { os: 'linux', architecture: 'amd64' },
    });
    dists.push(push);
    await push.push(`${reg.hostPort}/layers/four:1`, img, { signal: AbortSignal.timeout(30000), onProgress: () => {} });
  });
  after(async () => {
    dists.forEach((d) => d.close());
    servers.forEach((s) => s.close());
    for (const s of stores) await s.cleanup().catch(() => {});
    await reg?.stop();
    if (root) await removeRoot(root);
  });

  it('unpacks while downloading, commits the chain, keeps each blob as a link, leaves no spool files', async () => {
    const { store, dataRoot } = await fresh();
    const p = await proxied({ delayMs: 30 });
    const res = await pull(dist(store, dataRoot), `${p.hostPort}/layers/four:1`);
    assert.deepEqual(res.diffIds, img.diffIds);
    assert.equal(res.chainId, img.chainId);
    const chain = [...store.list()].sort((a, b) => img.diffIds.indexOf(a.diffId) - img.diffIds.indexOf(b.diffId));
    assert.deepEqual(chain.map((l) => l.diffId), img.diffIds);
    for (const l of chain) {
      assert.equal(l.blobMedia, 'gzip');
      const blob = join(dataRoot, 'image', 'overlay2', 'layerdb', 'sha256', l.chainId.slice(7), 'blob');
      assert.equal((await stat(blob)).size, l.blobSize);
      assert.equal(store.isLeased(l.chainId), false);
    }
    assert.deepEqual((await readdir(join(dataRoot, 'tmp'))).filter((f) => f.startsWith('engine-pull-')), []);
  });

  it('a download cut short is retried and the layer applied from the spooled file', async () => {
    const { store, dataRoot } = await fresh();
    const digests = await blobDigests(`${reg.hostPort}/layers/four:1`);
    const p = await proxied({ cut: new Set(digests) });
    const res = await pull(dist(store, dataRoot), `${p.hostPort}/layers/four:1`);
    assert.equal(res.chainId, img.chainId);
    assert.equal(store.list().length, 4);
    for (const dg of digests) assert.equal(p.state.blobGets.get(dg), 2);
  });

  it('a blob corrupted in transit fails its unpacking early, yet the retried download decides', async () => {
    const { store, dataRoot } = await fresh();
    const digests = await blobDigests(`${reg.hostPort}/layers/four:1`);
    const p = await proxied({ corruptOnce: new Set(digests) });
    const res = await pull(dist(store, dataRoot), `${p.hostPort}/layers/four:1`);
    assert.equal(res.chainId, img.chainId);
    assert.equal(store.list().length, 4);
    for (const dg of digests) assert.equal(p.state.blobGets.get(dg), 2);
    assert.equal((await readdir(join(dataRoot, 'overlay2'))).length, 5);
  });

  it('a failed pull lets go of the layers it applied; holdLayers keeps them leased until release', async () => {
    const { store, dataRoot } = await fresh();
    const released: string[][] = [];
    store.onRelease((ids) => released.push(ids));
    const digests = await blobDigests(`${reg.hostPort}/layers/four:1`);
    // The top layer never verifies; the ones below commit first.
    const p = await proxied({ corrupt: new Set([digests[3]!]), delayMs: 20 });
    await assert.rejects(pull(dist(store, dataRoot), `${p.hostPort}/layers/four:1`), /verification failed/);
    const applied = store.list().map((l) => l.chainId);
    assert.ok(applied.length < 4);
    assert.deepEqual([...(released.flat())].sort(), [...applied].sort());
    for (const c of applied) assert.equal(store.isLeased(c), false);

    // Held: not removable until the caller has recorded the image and releases.
    released.length = 0;
    const held = await pull(dist(store, dataRoot), `${reg.hostPort}/layers/four:1`, true);
    assert.equal(store.list().length, 4);
    assert.equal(released.length, 0);
    await assert.rejects(store.removeLayer(held.chainId!), /in use by an image pull/);
    held.release();
    held.release();
    assert.equal(released.flat().length, 4);
    await store.removeLayer(held.chainId!);
  });

  it('two concurrent pulls of one image fetch and unpack each layer once', async () => {
    const { store, dataRoot } = await fresh();
    const p = await proxied({ delayMs: 30 });
    const d = dist(store, dataRoot);
    const [a, b] = await Promise.all([pull(d, `${p.hostPort}/layers/four:1`), pull(d, `${p.hostPort}/layers/four:1`)]);
    assert.equal(a.chainId, img.chainId);
    assert.equal(b.chainId, img.chainId);
    assert.equal(store.list().length, 4);
    for (const dg of await blobDigests(`${reg.hostPort}/layers/four:1`)) assert.equal(p.state.blobGets.get(dg), 1);
    // One directory per layer (plus the short-link dir): nothing unpacked twice was left behind.
    assert.equal((await readdir(join(dataRoot, 'overlay2'))).length, 5);
  });

  /** The layer blob digests of the image, bottom first. */
  async function blobDigests(ref: string): Promise<string[]> {
    const [hostPort, rest] = [ref.slice(0, ref.indexOf('/')), ref.slice(ref.indexOf('/') + 1)];
    const [path, tag] = rest.split(':') as [string, string];
    const res = await fetch(`http://${hostPort}/v2/${path}/manifests/${tag}`, { headers: { Accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
    const m = await res.json() as { layers: Array<{ digest: string }> };
    return m.layers.map((l) => l.digest);
  }
});
