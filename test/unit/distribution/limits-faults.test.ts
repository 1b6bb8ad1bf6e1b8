// Concurrency limits and retries observed through a small HTTP proxy in front of docker-registry;
// the insecure-registry decision and error; proxy selection.
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import { networkInterfaces } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { createDistribution, type DistributionDriver } from '../../../drivers/distribution/distribution.ts';
import { createInsecureMatcher, proxyFor } from '../../../drivers/distribution/registry-config.ts';
import { progressBar, humanSize } from '../../../drivers/distribution/progress.ts';
import type { JsonMessage } from '../../../drivers/distribution/types.ts';
import { registryAvailable, startRegistry, type TestRegistry } from '../../e2e/registry/registry.ts';
import { buildImage, MemLayerStore, noise, quietLog, type TestImage } from './helpers.ts';

const skip = !registryAvailable() && 'docker-registry is not installed';

function makeDist(layers: MemLayerStore, extra: Partial<Parameters<typeof createDistribution>[0]> = {}): DistributionDriver {
  return createDistribution({
    log: quietLog, insecureRegistries: [], registryMirrors: [], certsDir: '/etc/engine/certs.d', maxConcurrentDownloads: 3, maxDownloadAttempts: 5,
    maxConcurrentUploads: 5, allowNondistributable: [], proxies: {}, layers, platform: { os: 'linux', architecture: 'amd64' }, retryDelayMs: 10, ...extra,
  });
}

/** A forwarding proxy that counts concurrent blob requests, delays them, and can cut the first one short. */
function faultProxy(target: URL, opts: { delayMs: number; cutFirstBlob: boolean }) {
  const state = { active: 0, maxActive: 0, blobGets: 0, ranges: [] as string[], cut: 0 };
  const server: Server = createServer((req, res) => {
    const isBlob = req.method === 'GET' && /\/blobs\/sha256:/.test(req.url ?? '');
    if (isBlob) {
      state.blobGets++;
      state.active++;
      state.maxActive = Math.max(state.maxActive, state.active);
      if (req.headers.range) state.ranges.push(req.headers.range);
    }
    const done = () => isBlob && state.active--;
    const go = () => {
      const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
        res.writeHead(ur.statusCode ?? 500, ur.headers);
        if (isBlob && opts.cutFirstBlob && state.cut === 0 && Number(ur.headers['content-length']) > 1000 && ur.statusCode === 200) {
          state.cut++;
          let sent = 0;
          ur.on('data', (c: Buffer) => {
            if (sent > 0) return;
            sent += c.length;
            res.write(c.subarray(0, 600));
            // Let the bytes reach the client, then drop the connection mid-body.
            setTimeout(() => {
              done();
              res.socket?.destroy();
              ur.destroy();
            }, 50);
          });
          return;
        }
        ur.pipe(res);
        ur.on('end', done);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    };
    if (isBlob) setTimeout(go, opts.delayMs);
    else go();
  });
  return { server, state };
}

describe('limits and faults', { skip }, () => {
  let reg: TestRegistry;
  let img: TestImage;
  const dists: DistributionDriver[] = [];
  const servers: Server[] = [];
  const dist = (l: MemLayerStore, extra = {}) => {
    const d = makeDist(l, extra);
    dists.push(d);
    return d;
  };
  async function proxied(opts: { delayMs: number; cutFirstBlob: boolean }) {
    const p = faultProxy(new URL(reg.url), opts);
    await new Promise<void>((r) => p.server.listen(0, '127.0.0.1', r));
    servers.push(p.server);
    return { hostPort: `127.0.0.1:${(p.server.address() as { port: number }).port}`, state: p.state };
  }

  before(async () => {
    reg = await startRegistry();
    const src = new MemLayerStore();
    img = await buildImage(src, [0, 1, 2, 3, 4].map((i) => ({ [`f${i}`]: noise(50_000, i + 1) })));
    await dist(src).push(`${reg.hostPort}/lim/five:1`, img, { signal: AbortSignal.timeout(30000), onProgress: () => {} });
  });
  after(async () => {
    dists.forEach((d) => d.close());
    servers.forEach((s) => s.close());
    await reg?.stop();
  });

  it('never downloads more than maxConcurrentDownloads layers at once, and says Waiting', async () => {
    const p = await proxied({ delayMs: 150, cutFirstBlob: false });
    const msgs: JsonMessage[] = [];
    const dst = new MemLayerStore();
    const res = await dist(dst, { maxConcurrentDownloads: 2 }).pull(`${p.hostPort}/lim/five:1`, { signal: AbortSignal.timeout(30000), onProgress: (m) => msgs.push(m) });
    assert.deepEqual(res.diffIds, img.diffIds);
    assert.equal(p.state.maxActive, 2);
    assert.equal(msgs.filter((m) => m.status === 'Waiting').length, 3);
  });

  it('retries a cut download and resumes it with Range', async () => {
    const p = await proxied({ delayMs: 0, cutFirstBlob: true });
    const msgs: JsonMessage[] = [];
    const dst = new MemLayerStore();
    const res = await dist(dst).pull(`${p.hostPort}/lim/five:1`, { signal: AbortSignal.timeout(30000), onProgress: (m) => msgs.push(m) });
    assert.deepEqual(res.diffIds, img.diffIds);
    assert.equal(p.state.cut, 1);
    assert.ok(p.state.ranges.some((r) => /^bytes=\d+-$/.test(r)), JSON.stringify(p.state.ranges));
    assert.ok(msgs.some((m) => m.status === 'Retrying in 1 second'));
  });

  it('fetches a layer shared by two concurrent pulls once', async () => {
    const p = await proxied({ delayMs: 50, cutFirstBlob: false });
    const dst = new MemLayerStore();
    const d = dist(dst);
    await Promise.all([1, 2].map(() => d.pull(`${p.hostPort}/lim/five:1`, { signal: AbortSignal.timeout(30000), onProgress: () => {} })));
    assert.equal(p.state.blobGets, 7); // 5 layers once + the config twice
  });

  const nonLoopback = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
  it('refuses a plain-HTTP registry on a non-loopback address unless it is marked insecure', { skip: !nonLoopback && 'no non-loopback address' }, async () => {
    const r2 = await startRegistry({ host: nonLoopback });
    try {
      const src = new MemLayerStore();
      await assert.rejects(
        dist(src).pull(`${r2.hostPort}/x/y:1`, { signal: AbortSignal.timeout(10000), onProgress: () => {} }),
        (err: Error) => {
          assert.equal(err.message, `Get "https://${r2.hostPort}/v2/": http: server gave HTTP response to HTTPS client. ` +
            `If this private registry supports only HTTP or HTTPS with an unknown CA certificate, please add \`--insecure-registry ${r2.hostPort}\` to the daemon's arguments. ` +
            `In the case of HTTPS, if you have access to the registry's CA certificate, no need for the flag; simply place the CA certificate at /etc/engine/certs.d/${r2.hostPort}/ca.crt`);
          return true;
        },
      );
      const ok = dist(src, { insecureRegistries: [`${nonLoopback}/32`] });
      await ok.push(`${r2.hostPort}/x/y:1`, img.diffIds.length ? await buildImage(src, [{ a: 'b' }]) : img, { signal: AbortSignal.timeout(10000), onProgress: () => {} });
      // Through an HTTP proxy (non-loopback destinations use it).
      const seen: string[] = [];
      const proxy = createServer((req, res) => {
        seen.push(req.url ?? '');
        const u = new URL(req.url ?? '');
        const up = request({ host: u.hostname, port: u.port, method: req.method, path: u.pathname + u.search, headers: req.headers }, (ur) => {
          res.writeHead(ur.statusCode ?? 500, ur.headers);
          ur.pipe(res);
        });
        req.pipe(up);
      });
      await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
      servers.push(proxy);
      const viaProxy = dist(new MemLayerStore(), { insecureRegistries: [r2.hostPort], proxies: { http: `http://127.0.0.1:${(proxy.address() as { port: number }).port}` } });
      await viaProxy.pull(`${r2.hostPort}/x/y:1`, { signal: AbortSignal.timeout(10000), onProgress: () => {} });
      assert.ok(seen.some((u) => u.startsWith(`http://${r2.hostPort}/v2/x/y/manifests/1`)), JSON.stringify(seen));
    } finally {
      await r2.stop();
    }
  });
});

describe('registry rules', () => {
  it('treats loopback and configured hosts or CIDRs as insecure', async () => {
    const m = createInsecureMatcher(['myreg:5000', '10.1.0.0/16']);
    assert.equal(await m.matches('127.0.0.1:5000'), true);
    assert.equal(await m.matches('localhost:5000'), true);
    assert.equal(await m.matches('myreg:5000'), true);
    assert.equal(await m.matches('10.1.2.3:443'), true);
    assert.equal(await m.matches('10.2.0.1:443'), false);
    assert.equal(await m.matches('192.0.2.99:5000'), false);
  });

  it('selects proxies per scheme and honours no-proxy', () => {
    const s = { http: 'http://p:3128', https: 'http://ps:3128', noProxy: '.internal,10.0.0.0/8,reg.example.com:5000' };
    assert.equal(proxyFor(new URL('http://reg.example.com/v2/'), s)?.host, 'p:3128');
    assert.equal(proxyFor(new URL('https://reg.example.com/v2/'), s)?.host, 'ps:3128');
    assert.equal(proxyFor(new URL('https://reg.example.com:5000/v2/'), s), undefined);
    assert.equal(proxyFor(new URL('https://a.internal/v2/'), s), undefined);
    assert.equal(proxyFor(new URL('https://10.3.4.5/v2/'), s), undefined);
    assert.equal(proxyFor(new URL('https://127.0.0.1:5000/v2/'), s), undefined);
  });

  it('renders progress as the CLI does', () => {
    assert.equal(humanSize(512), '512B');
    assert.equal(humanSize(1234567), '1.235MB');
    assert.equal(progressBar(50, 100), `[${'='.repeat(25)}>${' '.repeat(25)}]      50B/100B`);
  });
});
