// Two registry options seen end to end (issue 40, item 4): --https-proxy, with a TLS registry
// whose name only the proxy knows (reached through a CONNECT tunnel, verified against a test CA in
// the certificates directory) and --no-proxy bypassing it; and --allow-nondistributable-artifacts,
// with an image whose manifest names a foreign layer served from a plain HTTP URL: pulled from the
// URL, left out of pushes by default (the descriptor with its urls is kept), uploaded to the
// registries the option names (host:port or CIDR), where it becomes an ordinary layer.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { docker, testImages, type RunResult, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { layerFromTar, layerOf, MEDIA, putManifest, sha256, uploadBlob, type Layer } from './registry/images.ts';
import { startProxy, type TestProxy } from './registry/proxy.ts';
import { makeTestCa, registryAvailable, startRegistry, type TestRegistry } from './registry/registry.ts';

const skip = !registryAvailable() && 'docker-registry is not installed';
const FOREIGN = 'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip';
const GOARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64' };
const native = GOARCH[process.arch] ?? process.arch;
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface PushedManifest {
  mediaType: string;
  config: { digest: string };
  layers: Array<{ mediaType: string; digest: string; size: number; urls?: string[] }>;
}

describe('more proxy and registry options, end to end', { skip }, () => {
  let imgs: TestImages;
  const daemons: DaemonHandle[] = [];
  const registries: TestRegistry[] = [];
  const proxies: TestProxy[] = [];
  const dirs: string[] = [];
  const servers: Server[] = [];

  const run = (h: DaemonHandle, args: string[]): Promise<RunResult> => docker(h, args);
  const ok = async (h: DaemonHandle, args: string[]): Promise<string> => {
    const r = await run(h, args);
    assert.equal(r.code, 0, `docker ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
  };
  const daemon = async (opts: Parameters<typeof startDaemon>[0]) => {
    const h = await startDaemon(opts);
    daemons.push(h);
    return h;
  };
  const registry = async (opts: Parameters<typeof startRegistry>[0] = {}) => {
    const r = await startRegistry(opts);
    registries.push(r);
    return r;
  };
  const tempDir = async (prefix: string) => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };

  before(async () => {
    imgs = await testImages();
  });

  after(async () => {
    for (const h of daemons) await h.cleanup();
    for (const p of proxies) await p.stop();
    for (const r of registries) await r.stop();
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  test('--https-proxy: a TLS registry known only to the proxy is pulled through a CONNECT tunnel; --no-proxy bypasses it', async () => {
    // The registry's certificate names registry.test; its CA is trusted through the certificates
    // directory for registry.test:PORT (a name that does not resolve, so the registry is secure).
    const ca = await makeTestCa(['registry.test', '127.0.0.1']);
    dirs.push(ca.dir);
    const treg = await registry({ tls: { cert: ca.cert, key: ca.key } });
    const port = treg.hostPort.split(':')[1]!;
    const certsDir = await tempDir('engine-e2e-certs-');
    await mkdir(join(certsDir, `registry.test:${port}`), { recursive: true });
    await copyFile(ca.caCert, join(certsDir, `registry.test:${port}`, 'ca.crt'));
    const proxy = await startProxy(treg.url);
    proxies.push(proxy);

    const d = await daemon({ args: ['--https-proxy', proxy.url], env: { ENGINE_CERTS_DIR: certsDir } });
    assert.equal((await ok(d, ['info', '--format', '{{.HTTPSProxy}}'])).trim(), proxy.url);
    await ok(d, ['load', '-i', imgs.dockerArchive]);
    // Pushed to 127.0.0.1 (loopback is never proxied): straight to the registry.
    const direct = `${treg.hostPort}/proxied/busybox:v1`;
    await ok(d, ['tag', imgs.tag, direct]);
    assert.match(await ok(d, ['push', direct]), /^v1: digest: sha256:[0-9a-f]{64} size: \d+$/m);
    assert.equal(proxy.stats.requests.length, 0, proxy.stats.requests.join('\n'));
    await ok(d, ['rmi', direct, imgs.tag]);
    assert.equal((await run(d, ['image', 'inspect', imgs.id])).code, 1);

    // Pulled as registry.test:PORT: only through the proxy's tunnel, TLS verified end to end.
    const name = `registry.test:${port}/proxied/busybox:v1`;
    const pull = await ok(d, ['pull', name]);
    assert.match(pull, /^v1: Pulling from proxied\/busybox$/m);
    assert.match(pull, /^[0-9a-f]{12}: Pull complete$/m);
    assert.match(pull, new RegExp(`^Status: Downloaded newer image for ${esc(name)}$`, 'm'));
    assert.equal((await ok(d, ['image', 'inspect', '--format', '{{.Id}}', name])).trim(), imgs.id);
    assert.ok((proxy.stats.tunnels.get(`registry.test:${port}`) ?? 0) > 0, proxy.stats.requests.join('\n'));
    // Every request went through a tunnel: the proxy never saw a plain-HTTP request.
    assert.ok(proxy.stats.requests.every((r) => r === `CONNECT registry.test:${port}`), proxy.stats.requests.join('\n'));
    assert.equal(await ok(d, ['run', '--rm', '--network', 'none', name, 'echo', 'through the tunnel']), 'through the tunnel\n');

    // --no-proxy naming the registry: the daemon goes direct, where the name resolves nowhere.
    proxy.reset();
    const bypass = await daemon({ args: ['--https-proxy', proxy.url, '--no-proxy', 'registry.test'], env: { ENGINE_CERTS_DIR: certsDir } });
    const r = await run(bypass, ['pull', name]);
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, /registry\.test/);
    assert.equal(proxy.stats.requests.length, 0, proxy.stats.requests.join('\n'));
    // ...while a registry.test:PORT not covered (no-proxy for another port) still goes through it.
    const otherPort = await daemon({ args: ['--https-proxy', proxy.url, '--no-proxy', `registry.test:${Number(port) === 65535 ? 1 : Number(port) + 1}`], env: { ENGINE_CERTS_DIR: certsDir } });
    assert.match(await ok(otherPort, ['pull', name]), new RegExp(`^Status: Downloaded newer image for ${esc(name)}$`, 'm'));
    assert.ok((proxy.stats.tunnels.get(`registry.test:${port}`) ?? 0) > 0, proxy.stats.requests.join('\n'));
  });

  describe('--allow-nondistributable-artifacts', () => {
    /** Holds the image; the foreign layer is not in it, only at its URL. */
    let src: TestRegistry;
    /** Push targets: named by host:port in the option (allowed), and not named (default). */
    let allowed: TestRegistry;
    let other: TestRegistry;
    let urlServer: Server;
    const urlRequests: string[] = [];
    let foreignUrl: string;
    let base: Layer;
    let foreignLayer: Layer;
    const name = () => `${src.hostPort}/nondist/image:v1`;

    before(async () => {
      // docker-registry refuses manifests with urls unless they match an allow pattern.
      const urlsAllowed = { extraConfig: `validation:\n  manifests:\n    urls:\n      allow:\n        - '^http://127\\.0\\.0\\.1:'\n` };
      src = await registry(urlsAllowed);
      allowed = await registry(urlsAllowed);
      other = await registry(urlsAllowed);
      base = layerFromTar(await readFile(imgs.rootfsTar));
      foreignLayer = await layerOf({ 'etc/foreign-layer': 'fetched from its URL\n' });
      urlServer = createServer((req, res) => {
        urlRequests.push(`${req.method} ${req.url}`);
        if (req.url === `/layers/${foreignLayer.digest}` && (req.method === 'GET' || req.method === 'HEAD')) {
          res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(foreignLayer.blob.length) });
          res.end(req.method === 'GET' ? foreignLayer.blob : undefined);
          return;
        }
        res.writeHead(404).end();
      });
      servers.push(urlServer);
      await new Promise<void>((resolve) => urlServer.listen(0, '127.0.0.1', () => resolve()));
      foreignUrl = `http://127.0.0.1:${(urlServer.address() as { port: number }).port}/layers/${foreignLayer.digest}`;

      // The image, written by hand: config and base layer uploaded, the foreign layer only named.
      const created = '2024-01-01T00:00:00Z';
      const config = Buffer.from(JSON.stringify({
        architecture: native,
        os: 'linux',
        created,
        config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], Cmd: ['sh'] },
        rootfs: { type: 'layers', diff_ids: [base.diffId, foreignLayer.diffId] },
        history: [{ created, created_by: 'busybox' }, { created, created_by: 'foreign layer' }],
      }));
      await uploadBlob(src.url, 'nondist/image', base.blob);
      await uploadBlob(src.url, 'nondist/image', config);
      await putManifest(src.url, 'nondist/image', 'v1', MEDIA.dockerManifest, {
        schemaVersion: 2,
        mediaType: MEDIA.dockerManifest,
        config: { mediaType: MEDIA.dockerConfig, size: config.length, digest: sha256(config) },
        layers: [
          { mediaType: MEDIA.dockerLayer, size: base.blob.length, digest: base.digest },
          { mediaType: FOREIGN, size: foreignLayer.blob.length, digest: foreignLayer.digest, urls: [foreignUrl] },
        ],
      });
      assert.equal((await fetch(`${src.url}/v2/nondist/image/blobs/${foreignLayer.digest}`, { method: 'HEAD' })).status, 404);
    });

    const blobStatus = async (reg: TestRegistry, repo: string, digest: string) =>
      (await fetch(`${reg.url}/v2/${repo}/blobs/${digest}`, { method: 'HEAD' })).status;
    const manifestOf = async (reg: TestRegistry, repo: string, tag: string): Promise<PushedManifest> => {
      const res = await fetch(`${reg.url}/v2/${repo}/manifests/${tag}`, { headers: { Accept: MEDIA.dockerManifest } });
      assert.equal(res.status, 200, await res.clone().text());
      return (await res.json()) as PushedManifest;
    };
    /** Pull the image (its foreign layer from the URL) and run it. */
    const pullAndRun = async (h: DaemonHandle) => {
      urlRequests.length = 0;
      const pull = await ok(h, ['pull', name()]);
      assert.match(pull, new RegExp(`^Status: Downloaded newer image for ${esc(name())}$`, 'm'));
      assert.ok(urlRequests.includes(`GET /layers/${foreignLayer.digest}`), urlRequests.join('\n'));
      assert.equal(await ok(h, ['run', '--rm', '--network', 'none', name(), 'cat', '/etc/foreign-layer']), 'fetched from its URL\n');
    };
    /** Push under `reg/repo:v1`; the push output. */
    const pushTo = async (h: DaemonHandle, reg: TestRegistry, repo: string) => {
      await ok(h, ['tag', name(), `${reg.hostPort}/${repo}:v1`]);
      return ok(h, ['push', `${reg.hostPort}/${repo}:v1`]);
    };
    const foreignId = () => foreignLayer.diffId.slice(7, 19);
    const assertSkipped = async (push: string, reg: TestRegistry, repo: string) => {
      assert.match(push, new RegExp(`^${foreignId()}: Skipped foreign layer$`, 'm'));
      assert.equal(await blobStatus(reg, repo, foreignLayer.digest), 404);
      const m = await manifestOf(reg, repo, 'v1');
      assert.deepEqual(m.layers[1], { mediaType: FOREIGN, size: foreignLayer.blob.length, digest: foreignLayer.digest, urls: [foreignUrl] });
      assert.equal(m.layers[0]!.mediaType, MEDIA.dockerLayer);
      assert.equal(await blobStatus(reg, repo, m.layers[0]!.digest), 200);
    };
    const assertUploaded = async (push: string, reg: TestRegistry, repo: string) => {
      assert.match(push, new RegExp(`^${foreignId()}: Pushed$`, 'm'));
      assert.doesNotMatch(push, /Skipped foreign layer/);
      const m = await manifestOf(reg, repo, 'v1');
      const layer = m.layers[1]!;
      // An ordinary layer now, with no urls: the registry serves it itself.
      assert.equal(layer.mediaType, MEDIA.dockerLayer, JSON.stringify(m.layers));
      assert.equal(layer.urls, undefined, JSON.stringify(m.layers));
      assert.equal(await blobStatus(reg, repo, layer.digest), 200);
      const blob = Buffer.from(await (await fetch(`${reg.url}/v2/${repo}/blobs/${layer.digest}`)).arrayBuffer());
      assert.equal(sha256(blob), layer.digest);
      assert.equal(`sha256:${createHash('sha256').update(gunzipSync(blob)).digest('hex')}`, foreignLayer.diffId);
    };

    test('without the option: the foreign layer is pulled from its URL, and a push leaves it out, keeping its descriptor', async () => {
      const d = await daemon({});
      await pullAndRun(d);
      urlRequests.length = 0;
      await assertSkipped(await pushTo(d, other, 'default/image'), other, 'default/image');
      // The push did not fetch it again either.
      assert.deepEqual(urlRequests, []);
    });

    test('with the option naming host:port: pushed to that registry as an ordinary layer, still skipped for others', async () => {
      const d = await daemon({ args: ['--allow-nondistributable-artifacts', allowed.hostPort] });
      await pullAndRun(d);
      await assertUploaded(await pushTo(d, allowed, 'allowed/image'), allowed, 'allowed/image');
      await assertSkipped(await pushTo(d, other, 'notlisted/image'), other, 'notlisted/image');
    });

    test('with the option as a CIDR (daemon.json): a registry whose address matches receives it', async () => {
      const d = await daemon({ daemonJson: { 'allow-nondistributable-artifacts': ['127.0.0.0/8'] } });
      await pullAndRun(d);
      await assertUploaded(await pushTo(d, other, 'bycidr/image'), other, 'bycidr/image');
    });
  });
});
