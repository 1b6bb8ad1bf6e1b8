// How the daemon moves images, seen from the registry's side: docker.io pulls going to a
// --registry-mirror, the --max-concurrent-downloads/uploads limits, download retries
// (--max-download-attempts) against dropped connections and a registry stalling mid-blob, and platform selection from a
// multi-platform index. The images are written straight into docker-registry through its API;
// a small proxy in front of it counts and breaks requests.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { docker, testImages, type RunResult, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { layerFromTar, layerOf, noise, writeImage, writeIndex, type Layer, type Manifest, type WrittenImage } from './registry/images.ts';
import { startProxy, type TestProxy } from './registry/proxy.ts';
import { registryAvailable, startRegistry, type TestRegistry } from './registry/registry.ts';

const skip = !registryAvailable() && 'docker-registry is not installed';
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const GOARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64' };
const native = GOARCH[process.arch] ?? process.arch;
const foreign = native === 'amd64' ? 'arm64' : 'amd64';

describe('registry transfers: mirrors, limits, retries, platforms', { skip }, () => {
  let imgs: TestImages;
  let reg: TestRegistry;
  /** In front of reg: the mirror, and the registry the limit and retry tests pull from. */
  let proxy: TestProxy;
  /** A second proxy in front of reg, a different registry name to push to (no cross-repository mounts). */
  let pushProxy: TestProxy;
  let d: DaemonHandle;
  const daemons: DaemonHandle[] = [];
  let busybox: Layer;
  let five: WrittenImage;
  let fiveLayers: Layer[];
  let flaky: WrittenImage;
  let flakyLayers: Layer[];
  let mirrored: WrittenImage;
  const multi: { list?: Manifest; oci?: Manifest; native?: WrittenImage } = {};

  const ok = async (h: DaemonHandle, args: string[]): Promise<string> => {
    const r = await docker(h, args);
    assert.equal(r.code, 0, `docker ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
  };
  const fails = async (h: DaemonHandle, args: string[]): Promise<RunResult> => {
    const r = await docker(h, args);
    assert.equal(r.code, 1, `docker ${args.join(' ')} should fail:\n${r.stdout}\n${r.stderr}`);
    return r;
  };
  const daemon = async (args: string[]) => {
    const h = await startDaemon({ args });
    daemons.push(h);
    return h;
  };

  before(async () => {
    imgs = await testImages();
    reg = await startRegistry();
    proxy = await startProxy(reg.url);
    pushProxy = await startProxy(reg.url);
    busybox = layerFromTar(await readFile(imgs.rootfsTar));
    mirrored = await writeImage(reg.url, 'library/busybox', 'v1', { layers: [busybox], architecture: native });
    fiveLayers = await Promise.all([0, 1, 2, 3, 4].map((i) => layerOf({ [`data/layer${i}`]: noise(`five-${i}`, 256 << 10) })));
    five = await writeImage(reg.url, 'test/five', 'v1', { layers: fiveLayers, architecture: native });
    flakyLayers = await Promise.all([0, 1, 2].map((i) => layerOf({ [`data/flaky${i}`]: noise(`flaky-${i}`, 64 << 10) })));
    flaky = await writeImage(reg.url, 'test/flaky', 'v1', { layers: flakyLayers, architecture: native });
    for (const format of ['docker', 'oci'] as const) {
      const n = await writeImage(reg.url, 'test/multi', `${native}-${format}`, { layers: [busybox, await layerOf({ 'etc/platform': `${native}\n` })], architecture: native, format });
      const f = await writeImage(reg.url, 'test/multi', `${foreign}-${format}`, { layers: [busybox, await layerOf({ 'etc/platform': `${foreign}\n` })], architecture: foreign, format });
      // The foreign platform first, so that taking the first entry would be wrong.
      const index = await writeIndex(reg.url, 'test/multi', format === 'oci' ? 'oci' : 'v1', format, [
        { manifest: f.manifest, platform: { os: 'linux', architecture: foreign } },
        { manifest: n.manifest, platform: { os: 'linux', architecture: native } },
      ]);
      if (format === 'oci') multi.oci = index;
      else multi.list = index;
      multi.native = n;
    }
    d = await daemon(['--registry-mirror', proxy.url, '--max-concurrent-downloads', '2', '--max-concurrent-uploads', '2', '--max-download-attempts', '5']);
  });

  after(async () => {
    for (const h of daemons) await h.cleanup();
    await proxy?.stop();
    await pushProxy?.stop();
    await reg?.stop();
  });

  test('docker.io pulls go to the --registry-mirror; a mirror miss fails at once, clearly', async () => {
    proxy.reset();
    const pull = await ok(d, ['pull', 'busybox:v1']);
    assert.match(pull, /^v1: Pulling from library\/busybox$/m);
    assert.match(pull, /^[0-9a-f]{12}: Pull complete$/m);
    assert.match(pull, new RegExp(`^Digest: ${mirrored.manifest.digest}$`, 'm'));
    assert.match(pull, /^Status: Downloaded newer image for busybox:v1$/m);
    assert.match(pull, /^docker\.io\/library\/busybox:v1$/m);
    assert.ok(proxy.stats.requests.includes(`GET /v2/library/busybox/blobs/${busybox.digest}`), proxy.stats.requests.join('\n'));
    assert.equal((await ok(d, ['image', 'inspect', '--format', '{{.Id}}', 'busybox:v1'])).trim(), mirrored.id);
    assert.equal(await ok(d, ['run', '--rm', '--network', 'none', 'busybox:v1', 'echo', 'via the mirror']), 'via the mirror\n');
    const again = await ok(d, ['pull', 'docker.io/library/busybox:v1']);
    assert.match(again, /^Status: Image is up to date for busybox:v1$/m);

    const started = Date.now();
    const miss = await fails(d, ['pull', 'busybox:nope']);
    assert.ok(Date.now() - started < 30_000, `a mirror miss took ${Date.now() - started} ms`);
    assert.equal(miss.stderr.trim(), 'Error response from daemon: manifest for busybox:nope not found: manifest unknown: manifest unknown');
    assert.ok(proxy.stats.requests.includes('GET /v2/library/busybox/manifests/nope'), proxy.stats.requests.join('\n'));
    // Mirrors are for docker.io only: another registry is asked directly.
    proxy.reset();
    await ok(d, ['pull', `${reg.hostPort}/library/busybox:v1`]);
    assert.equal(proxy.stats.requests.length, 0, proxy.stats.requests.join('\n'));
  });

  test('--max-concurrent-downloads 2: at most two layers of five in flight', async () => {
    proxy.reset();
    proxy.delayMs = 300;
    const name = `${proxy.hostPort}/test/five:v1`;
    const pull = await ok(d, ['pull', name]);
    assert.match(pull, /: Waiting$/m);
    assert.equal(pull.match(/: Pull complete$/gm)?.length, 5, pull);
    for (const l of fiveLayers) assert.equal(proxy.stats.downloads.get(l.digest), 1, `downloads of ${l.digest}`);
    assert.equal(proxy.stats.maxDownloads, 2);
    assert.equal((await ok(d, ['image', 'inspect', '--format', '{{.Id}}', name])).trim(), five.id);
  });

  test('kill -9 during a pull: after the restart the image arrives without a new request', async () => {
    const h = await daemon([]);
    proxy.reset();
    proxy.delayMs = 500;
    const name = `${proxy.hostPort}/test/five:v1`;
    const pulling = docker(h, ['pull', name]);
    const deadline = Date.now() + 20_000;
    while (proxy.stats.downloads.size === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.ok(proxy.stats.downloads.size > 0, 'a layer download started');
    await h.stop({ signal: 'SIGKILL' });
    assert.notEqual((await pulling).code, 0, 'the client saw its daemon go away');
    assert.notEqual((await docker(h, ['image', 'inspect', name]).catch(() => ({ code: 1 }))).code, 0, 'no daemon, no image');
    proxy.delayMs = 0;
    await h.restart();
    let id = '';
    for (const until = Date.now() + 60_000; Date.now() < until && !id; await new Promise((r) => setTimeout(r, 200))) {
      const r = await docker(h, ['image', 'inspect', '--format', '{{.Id}}', name]);
      if (r.code === 0) id = r.stdout.trim();
    }
    assert.equal(id, five.id, `the pull resumed by itself after the restart:\n${h.logs().split('\n').slice(-30).join('\n')}`);
    assert.equal((await ok(h, ['images', '--format', '{{.Repository}}:{{.Tag}}'])).trim(), name);
  });

  test('--max-concurrent-uploads 2: at most two layers of five in flight', async () => {
    pushProxy.reset();
    pushProxy.delayMs = 300;
    const name = `${pushProxy.hostPort}/copy/five:v1`;
    await ok(d, ['tag', `${proxy.hostPort}/test/five:v1`, name]);
    const push = await ok(d, ['push', name]);
    assert.equal(push.match(/: Pushed$/gm)?.length, 5, push);
    assert.match(push, /: Waiting$/m);
    // Each layer is one PATCH and one PUT; the config one PUT.
    assert.equal(pushProxy.stats.uploads, 11, pushProxy.stats.requests.join('\n'));
    assert.equal(pushProxy.stats.maxUploads, 2);
    // The registry holds what the daemon said it pushed, made of the very blobs that were pulled.
    const digest = /^v1: digest: (sha256:[0-9a-f]{64}) size: \d+$/m.exec(push)?.[1];
    const res = await fetch(`${reg.url}/v2/copy/five/manifests/v1`, { headers: { Accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
    assert.equal(res.headers.get('docker-content-digest'), digest);
    const manifest = (await res.json()) as { config: { digest: string }; layers: Array<{ digest: string }> };
    assert.equal(manifest.config.digest, five.id);
    assert.deepEqual(manifest.layers.map((l) => l.digest), fiveLayers.map((l) => l.digest));
  });

  test('--max-download-attempts 5: a download whose connection is reset twice is retried and succeeds', async () => {
    proxy.reset();
    proxy.dropNext(flakyLayers[1]!.digest, 2);
    const name = `${proxy.hostPort}/test/flaky:v1`;
    const started = Date.now();
    const pull = await ok(d, ['pull', name]);
    assert.equal(proxy.stats.dropped, 2);
    // The first retry after 5 s, the second after 10 s, each counted down a second at a time.
    const id = flakyLayers[1]!.digest.slice(7, 19);
    const countdown = [...pull.matchAll(new RegExp(`^${id}: Retrying in (\\d+) seconds?$`, 'gm'))].map((m) => Number(m[1]));
    assert.deepEqual(countdown, [5, 4, 3, 2, 1, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1], pull);
    assert.match(pull, new RegExp(`^${id}: Retrying in 1 second$`, 'm'));
    assert.ok(Date.now() - started >= 15_000, 'the retries waited 5 s, then 10 s');
    assert.equal(pull.match(/: Pull complete$/gm)?.length, 3, pull);
    assert.equal((await ok(d, ['image', 'inspect', '--format', '{{.Id}}', name])).trim(), flaky.id);
  });

  test('--max-download-attempts 1: one reset fails the pull cleanly, and a later pull works', async () => {
    const once = await daemon(['--max-download-attempts', '1']);
    proxy.reset();
    proxy.dropNext(flakyLayers[2]!.digest, 1);
    const name = `${proxy.hostPort}/test/flaky:v1`;
    const pull = await fails(once, ['pull', name]);
    assert.equal(proxy.stats.dropped, 1);
    assert.match(pull.stderr, new RegExp(`Get "http://${esc(proxy.hostPort)}/v2/test/flaky/blobs/${flakyLayers[2]!.digest}": read: connection reset by peer`));
    assert.doesNotMatch(pull.stdout, /Retrying/);
    // No half image: no name, no image record.
    assert.equal((await ok(once, ['images', '-q', '--no-trunc'])).trim(), '');
    assert.equal((await docker(once, ['image', 'inspect', flaky.id])).code, 1);
    // Nor a spooled download left behind.
    assert.deepEqual((await readdir(join(once.dataRoot, 'tmp'))).filter((f) => f.startsWith('engine-pull-')), []);
    const retry = await ok(once, ['pull', name]);
    assert.match(retry, new RegExp(`^Status: Downloaded newer image for ${esc(name)}$`, 'm'));
    assert.equal((await ok(once, ['image', 'inspect', '--format', '{{.Id}}', name])).trim(), flaky.id);
    await once.cleanup();
  });

  test('a registry that stalls mid-blob: the silent download fails its attempt and is retried (resumed); with no attempt left the pull fails in words; nothing is left', async () => {
    // The silence allowed is shortened for the test (default 60 s).
    const stalling = await startDaemon({ args: ['--max-download-attempts', '2'], env: { ENGINE_PULL_STALL_TIMEOUT_MS: '1500' } });
    daemons.push(stalling);
    proxy.reset();
    proxy.stallNext(flakyLayers[0]!.digest, 1);
    const name = `${proxy.hostPort}/test/flaky:v1`;
    const pull = await ok(stalling, ['pull', name]);
    assert.equal(proxy.stats.stalled, 1);
    assert.match(pull, new RegExp(`^${flakyLayers[0]!.digest.slice(7, 19)}: Retrying in 5 seconds$`, 'm'), pull);
    assert.equal((await ok(stalling, ['image', 'inspect', '--format', '{{.Id}}', name])).trim(), flaky.id);
    // The retry asked for the rest only.
    assert.ok(proxy.stats.requests.filter((r) => r.endsWith(flakyLayers[0]!.digest)).length >= 2);
    await ok(stalling, ['rmi', name]);

    proxy.reset();
    proxy.stallNext(flakyLayers[1]!.digest, 2);
    const failed = await fails(stalling, ['pull', name]);
    assert.equal(proxy.stats.stalled, 2);
    assert.match(failed.stderr, new RegExp(`Get "http://${esc(proxy.hostPort)}/v2/test/flaky/blobs/${flakyLayers[1]!.digest}": net/http: request canceled \\(Client.Timeout or context cancellation while reading body\\)`), failed.stderr);
    assert.equal((await ok(stalling, ['images', '-q', '--no-trunc'])).trim(), '');
    assert.deepEqual((await readdir(join(stalling.dataRoot, 'tmp'))).filter((f) => f.startsWith('engine-pull-')), []);
    assert.match(await ok(stalling, ['pull', name]), /^Status: Downloaded newer image for /m, 'a later pull works');
  });

  test(`a multi-platform index: the daemon's platform (linux/${native}) is selected; --platform picks another`, async () => {
    for (const [tag, index] of [['v1', multi.list!], ['oci', multi.oci!]] as const) {
      const name = `${reg.hostPort}/test/multi:${tag}`;
      const pull = await ok(d, ['pull', name]);
      assert.match(pull, new RegExp(`^Digest: ${index.digest}$`, 'm'));
      const [img] = JSON.parse(await ok(d, ['image', 'inspect', name])) as Array<{ Id: string; Architecture: string; RepoDigests: string[] }>;
      assert.equal(img!.Id, multi.native!.id);
      assert.equal(img!.Architecture, native);
      assert.ok(img!.RepoDigests.includes(`${reg.hostPort}/test/multi@${index.digest}`), JSON.stringify(img!.RepoDigests));
      assert.equal(await ok(d, ['run', '--rm', '--network', 'none', name, 'cat', '/etc/platform']), `${native}\n`);
    }
    const name = `${reg.hostPort}/test/multi:oci`;
    await ok(d, ['pull', '--platform', `linux/${foreign}`, name]);
    assert.equal((await ok(d, ['image', 'inspect', '--format', '{{.Architecture}}', name])).trim(), foreign);
    const none = await fails(d, ['pull', '--platform', 'linux/s390x', name]);
    assert.match(none.stderr, /no matching manifest for linux\/s390x in the manifest list entries/);
  });
});
