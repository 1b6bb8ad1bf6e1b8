// TLS with a test CA in the certificates directory, and basic auth through an htpasswd file.
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createDistribution, type DistributionDriver } from '../../../drivers/distribution/distribution.ts';
import { bcryptHtpasswd, makeTestCa, registryAvailable, startRegistry, type TestCa, type TestRegistry } from '../../e2e/registry/registry.ts';
import { buildImage, MemLayerStore, quietLog } from './helpers.ts';

const htpasswd = bcryptHtpasswd('alice', 's3cret');
const skip = (!registryAvailable() && 'docker-registry is not installed') || (!htpasswd && 'no bcrypt implementation to write an htpasswd file');

describe('TLS registry with basic auth', { skip }, () => {
  let ca: TestCa;
  let reg: TestRegistry;
  let certsDir: string;
  const dists: DistributionDriver[] = [];
  const dist = (layers: MemLayerStore, dir: string) => {
    const d = createDistribution({
      log: quietLog, insecureRegistries: [], registryMirrors: [], certsDir: dir, maxConcurrentDownloads: 3, maxDownloadAttempts: 2,
      maxConcurrentUploads: 5, allowNondistributable: [], proxies: {}, layers, platform: { os: 'linux', architecture: 'amd64' }, retryDelayMs: 10,
    });
    dists.push(d);
    return d;
  };

  before(async () => {
    ca = await makeTestCa(['localhost', '127.0.0.1']);
    reg = await startRegistry({ tls: { cert: ca.cert, key: ca.key }, htpasswd });
    certsDir = await mkdtemp(join(tmpdir(), 'engine-certs-'));
    await mkdir(join(certsDir, reg.hostPort));
    await copyFile(ca.caCert, join(certsDir, reg.hostPort, 'ca.crt'));
  });
  after(async () => {
    dists.forEach((d) => d.close());
    await reg?.stop();
    if (certsDir) await rm(certsDir, { recursive: true, force: true });
    if (ca) await rm(ca.dir, { recursive: true, force: true });
  });

  it('logs in, pushes and pulls with credentials over verified TLS', async () => {
    const src = new MemLayerStore();
    const d = dist(src, certsDir);
    const auth = { username: 'alice', password: 's3cret' };
    assert.deepEqual(await d.checkAuth(`https://${reg.hostPort}`, auth), { Status: 'Login Succeeded' });
    await assert.rejects(d.checkAuth(reg.hostPort, { username: 'alice', password: 'wrong' }), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'Unauthorized');
      assert.equal(err.message, `login attempt to https://${reg.hostPort}/v2/ failed with status: 401 Unauthorized`);
      return true;
    });
    const img = await buildImage(src, [{ a: '1' }, { b: '2' }]);
    await d.push(`${reg.hostPort}/sec/img:1`, img, { auth, signal: AbortSignal.timeout(20000), onProgress: () => {} });
    const dst = new MemLayerStore();
    const res = await dist(dst, certsDir).pull(`${reg.hostPort}/sec/img:1`, { auth: { auth: Buffer.from('alice:s3cret').toString('base64') }, signal: AbortSignal.timeout(20000), onProgress: () => {} });
    assert.deepEqual(res.diffIds, img.diffIds);
    await assert.rejects(dist(new MemLayerStore(), certsDir).pull(`${reg.hostPort}/sec/img:1`, { signal: AbortSignal.timeout(20000), onProgress: () => {} }), (err: Error & { code?: string }) => {
      // Not a 401: the CLI would answer one with a login prompt.
      assert.equal(err.code, 'Internal');
      assert.equal(err.message, `Head "https://${reg.hostPort}/v2/sec/img/manifests/1": no basic auth credentials`);
      return true;
    });
    await assert.rejects(dist(new MemLayerStore(), certsDir).pull(`${reg.hostPort}/sec/img:1`, { auth: { username: 'alice', password: 'wrong' }, signal: AbortSignal.timeout(20000), onProgress: () => {} }), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'Internal');
      assert.equal(err.message, 'unauthorized: authentication required');
      return true;
    });
    await assert.rejects(d.push(`${reg.hostPort}/sec/img:2`, img, { signal: AbortSignal.timeout(20000), onProgress: () => {} }), (err: Error & { code?: string }) => {
      assert.equal(err.message, 'no basic auth credentials');
      return true;
    });
  });
});
