// The feature supervisor-snapshotter (issue (11 of 21)), first part: with it, image and container
// layers are snapshots of the supervisor's overlayfs snapshotter (drivers/storage/snapshotter.ts),
// no layer goes through a graph driver of ours, `docker info` shows the driver as the reference
// does with the feature; turning it on or off is like switching drivers (the other's images
// hidden, not deleted); a reload that flips it is refused.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { apiRequest, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { startRegistry } from './registry/registry.ts';
import { layerFromTar, layerOf, writeImage, writeIndex } from './registry/images.ts';
import { ociManifest } from '../../lib/image-target.ts';

const execFileAsync = promisify(execFile);
const native = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch] ?? process.arch;
const foreign = native === 'amd64' ? 'arm64' : 'amd64';

interface ManifestSummary {
  ID: string;
  Descriptor: { mediaType: string; digest: string; size: number; platform?: { os: string; architecture: string } };
  Available: boolean;
  Size: { Total: number; Content: number };
  Kind: string;
  ImageData?: { Platform: { os: string; architecture: string }; Containers: string[]; Size: { Unpacked: number } };
}

describe('the supervisor\'s snapshotter', { skip: process.getuid?.() !== 0 && 'needs root' }, () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = (...args: string[]) => dockerOk(() => d)(...args);
  /** The supervisor's snapshots (ctr on its socket), name → kind. */
  const snapshots = () =>
    execFileSync('ctr', ['-a', join(d.execRoot, 'containerd', 'containerd.sock'), '-n', 'engine', 'snapshots', '--snapshotter', 'overlayfs', 'ls'], { encoding: 'utf8' })
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f[0])
      .map((f) => ({ key: f[0]!, kind: f[f.length - 1]! }));

  /** The digests of the supervisor's content store holding the engine.layer-blob label. */
  const blobs = () =>
    execFileSync('ctr', ['-a', join(d.execRoot, 'containerd', 'containerd.sock'), '-n', 'engine', 'content', 'ls'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => /engine\.layer-blob=1/.test(l))
      .map((l) => l.trim().split(/\s+/)[0]!)
      .sort();

  before(async () => {
    imgs = await testImages();
    d = await startDaemon({ args: ['--feature', 'supervisor-snapshotter'] });
    await dk('load', '-i', imgs.dockerArchive);
  }, { timeout: 120_000 });
  after(async () => {
    await d?.cleanup();
  });

  test('docker info: driver overlayfs, driver-type io.containerd.snapshotter.v1', async () => {
    const info = (await apiRequest(d, 'GET', '/info')).body;
    assert.equal(info.Driver, 'overlayfs');
    assert.deepEqual(info.DriverStatus, [['driver-type', 'io.containerd.snapshotter.v1']]);
  });

  test('layers are the snapshotter\'s snapshots: the image\'s committed, a container\'s active on top; run, diff, commit, export; removal takes the snapshots; no graph driver directory', async () => {
    const layers = (await dk('inspect', '-f', '{{len .RootFS.Layers}}', imgs.tag)).trim();
    // The blobs are the content store's (a loaded archive's layers are plain tars: blob = diff id).
    const diffIds = (await dk('inspect', '-f', '{{range .RootFS.Layers}}{{println .}}{{end}}', imgs.tag)).split('\n').filter(Boolean).sort();
    assert.deepEqual(blobs(), diffIds);
    assert.equal(existsSync(join(d.dataRoot, 'image', 'overlayfs', 'layerdb', 'sha256', diffIds[0]!.slice(7), 'blob')), false, 'no blob of its own');
    assert.equal(snapshots().length >= Number(layers), true, JSON.stringify(snapshots()));
    const id = await dk('create', imgs.tag, 'sh', '-c', 'echo hi > /made && rm /bin/true');
    // The image's layers are committed once something is made on them; the container's is active.
    const made = snapshots();
    assert.equal(made.filter((s) => s.kind === 'Committed').length >= Number(layers), true, JSON.stringify(made));
    assert.deepEqual(made.filter((s) => s.kind === 'Active').map((s) => s.key.replace(/[0-9a-f]{64}$/, 'ID')), ['engine/active/ID']);
    const before = made.filter((s) => s.kind !== 'Active');
    await dk('start', '-a', id);
    const diff = (await dk('diff', id)).split('\n').sort();
    assert.deepEqual(diff.filter((l) => /made|true/.test(l)), ['A /made', 'D /bin/true']);
    const committed = await dk('commit', id, 'snap:committed');
    assert.equal((await dk('run', '--rm', 'snap:committed', 'cat', '/made')).trim(), 'hi');
    const tar = execFileSync('docker', ['-H', d.dockerHost, 'export', id], { maxBuffer: 64 << 20 });
    assert.equal(tar.includes(Buffer.from('made')), true);
    await dk('rm', id);
    assert.equal(blobs().length, diffIds.length + 1, 'the committed layer\'s blob');
    await dk('rmi', committed.trim());
    assert.deepEqual(blobs(), diffIds, 'a removed layer\'s blob goes with it');
    const after = snapshots();
    assert.equal(after.filter((s) => s.kind === 'Active').length, 0, JSON.stringify(after));
    assert.deepEqual(after.map((s) => s.key).sort(), before.map((s) => s.key).sort());
    for (const g of ['overlay2', 'vfs', 'btrfs', 'fuse-overlayfs']) assert.equal(existsSync(join(d.dataRoot, g)) && readdirSync(join(d.dataRoot, g)).length > 0, false, g);
  });

  test('an image\'s Id is its target digest: a loaded one\'s OCI manifest, a pulled one\'s manifest digest; found by it and a prefix of it; containers and history show it', async () => {
    const id = (await dk('inspect', '-f', '{{.Id}}', imgs.tag)).trim();
    // The archive's config and layers: the manifest made of them (a loaded tar is kept as it came).
    const archive = join(d.root, 'ids.tar');
    await dk('save', '-o', archive, imgs.tag);
    const manifest = JSON.parse(execFileSync('tar', ['-xOf', archive, 'manifest.json'], { encoding: 'utf8' }))[0] as { Config: string; Layers: string[] };
    const rawConfig = execFileSync('tar', ['-xOf', archive, manifest.Config], { encoding: 'utf8' });
    const configDigest = `sha256:${createHash('sha256').update(rawConfig).digest('hex')}`;
    const layers = manifest.Layers.map((l) => {
      const tar = execFileSync('tar', ['-xOf', archive, l], { maxBuffer: 64 << 20 });
      return { media: 'none' as const, digest: `sha256:${createHash('sha256').update(tar).digest('hex')}`, size: tar.length };
    });
    assert.notEqual(id, configDigest, 'not the config digest');
    assert.equal(id, `sha256:${createHash('sha256').update(ociManifest(rawConfig, configDigest, layers)).digest('hex')}`);
    assert.equal((await dk('images', '-q', '--no-trunc', imgs.tag)).trim(), id);
    assert.equal((await dk('inspect', '-f', '{{.Id}}', id.slice(7, 19))).trim(), id, 'found by a prefix of its Id');
    const c = await dk('create', id.slice(7, 19), 'true');
    assert.equal((await dk('inspect', '-f', '{{.Image}}', c)).trim(), id);
    assert.equal((await dk('ps', '-a', '--no-trunc', '--format', '{{.ID}} {{.Image}}')).includes(c), true);
    assert.equal((await dk('history', '-q', '--no-trunc', imgs.tag)).split('\n')[0], id);
    await dk('rm', c);

    // Pulled: the manifest digest it came by.
    const reg = await startRegistry({});
    try {
      const name = `${reg.hostPort}/ids/busybox:1`;
      await dk('tag', imgs.tag, name);
      await dk('push', name);
      const gone = await dk('rmi', '-f', name, imgs.tag);
      assert.match(gone, new RegExp(`Deleted: ${id}`), 'the Id in the delete records');
      await dk('pull', name);
      const pulled = JSON.parse(await dk('inspect', name))[0] as { Id: string; RepoDigests: string[] };
      assert.equal(pulled.Id, pulled.RepoDigests[0]!.split('@')[1]);
      assert.notEqual(pulled.Id, id);
      await dk('tag', name, imgs.tag);
      await dk('rmi', name);
    } finally {
      await reg.stop();
    }
  });

  test('a multi-platform index (issue (12 of 21), 2): a pull keeps it; --platform picks from it on pull, create and run; one image whose Manifests (API 1.47) list each platform and what is here; API 1.48: Descriptor and Manifests on inspect, --platform on save, load and history', { timeout: 240_000 }, async () => {
    const reg = await startRegistry({});
    const name = `${reg.hostPort}/mp/multi:v1`;
    let index: { digest: string } | undefined;
    try {
      // The test image, and a copy of it under a second architecture's config, in one OCI index.
      const busybox = layerFromTar(readFileSync(imgs.rootfsTar));
      const n = await writeImage(reg.url, 'mp/multi', 'n', { layers: [busybox, await layerOf({ 'etc/platform': `${native}\n` })], architecture: native, format: 'oci' });
      const f = await writeImage(reg.url, 'mp/multi', 'f', { layers: [busybox, await layerOf({ 'etc/platform': `${foreign}\n` })], architecture: foreign, format: 'oci' });
      const ix = await writeIndex(reg.url, 'mp/multi', 'v1', 'oci', [
        { manifest: f.manifest, platform: { os: 'linux', architecture: foreign } },
        { manifest: n.manifest, platform: { os: 'linux', architecture: native } },
      ]);
      index = ix;
      const rows = async () => ((await apiRequest(d, 'GET', '/v1.47/images/json?manifests=1')).body as Array<{ Id: string; RepoTags: string[]; Manifests?: ManifestSummary[] }>).filter((r) => r.Id === ix.digest);
      const byArch = (ms: ManifestSummary[]) => Object.fromEntries(ms.map((m) => [m.Descriptor.platform?.architecture, m]));

      await dk('pull', name);
      let [row, ...more] = await rows();
      assert.equal(more.length, 0, 'one image');
      assert.deepEqual(row!.RepoTags, [name]);
      let ms = byArch(row!.Manifests ?? []);
      assert.equal(row!.Manifests!.length, 2, JSON.stringify(row));
      assert.equal(ms[native]!.ID, n.manifest.digest);
      assert.equal(ms[native]!.Available, true);
      assert.equal(ms[native]!.Kind, 'image');
      assert.deepEqual(ms[native]!.ImageData!.Platform, { architecture: native, os: 'linux' });
      assert.ok(ms[native]!.Size.Content >= n.manifest.body.length + n.config.length, JSON.stringify(ms[native]));
      assert.ok(ms[native]!.ImageData!.Size.Unpacked > 0);
      assert.equal(ms[foreign]!.Available, false);
      assert.equal(ms[foreign]!.ImageData!.Size.Unpacked, 0);
      // Without manifests=1 (or before API 1.47) no Manifests.
      const plain = ((await apiRequest(d, 'GET', '/v1.47/images/json')).body as Array<Record<string, unknown>>).find((r) => r.Id === ix.digest)!;
      assert.equal('Manifests' in plain, false);

      // The second platform joins the same image.
      await dk('pull', '--platform', `linux/${foreign}`, name);
      [row, ...more] = await rows();
      assert.equal(more.length, 0, 'still one image');
      assert.deepEqual(row!.RepoTags, [name]);
      ms = byArch(row!.Manifests ?? []);
      assert.equal(ms[native]!.Available, true);
      assert.equal(ms[foreign]!.Available, true);
      assert.equal(ms[foreign]!.ID, f.manifest.digest);
      const shown = JSON.parse(await dk('image', 'inspect', name))[0] as { Id: string; Architecture: string; RepoDigests: string[] };
      assert.equal(shown.Id, ix.digest, 'the index is the image');
      assert.equal(shown.Architecture, native, 'inspect shows the host\'s platform');
      assert.deepEqual(shown.RepoDigests, [`${reg.hostPort}/mp/multi@${ix.digest}`]);

      // Create and run pick the platform: the host's by default, another with --platform.
      assert.equal(await dk('run', '--rm', '--network', 'none', name, 'cat', '/etc/platform'), native);
      assert.equal(await dk('run', '--rm', '--network', 'none', '--platform', `linux/${foreign}`, name, 'cat', '/etc/platform'), foreign);
      const c = await dk('create', '--platform', `linux/${foreign}`, name, 'sleep', '1');
      ms = byArch((await rows())[0]!.Manifests!);
      assert.deepEqual(ms[foreign]!.ImageData!.Containers, [c.trim()]);
      assert.deepEqual(ms[native]!.ImageData!.Containers, []);
      // API 1.48: a container's ImageManifestDescriptor is its platform's manifest.
      const listed = ((await apiRequest(d, 'GET', '/v1.48/containers/json?all=1')).body as Array<{ Id: string; ImageManifestDescriptor?: { digest: string; platform: { architecture: string } } }>).find((x) => x.Id === c.trim())!;
      assert.equal(listed.ImageManifestDescriptor?.digest, f.manifest.digest, JSON.stringify(listed));
      assert.equal(listed.ImageManifestDescriptor?.platform.architecture, foreign);
      await dk('rm', c.trim());
      const none = await apiRequest(d, 'POST', `/v1.47/containers/create?platform=linux/s390x`, JSON.stringify({ Image: name }));
      assert.equal(none.status, 404);
      assert.equal((none.body as { message: string }).message, `image with reference ${name} was found but does not provide the specified platform (linux/s390x)`);

      // API 1.48: inspect shows the index as the image's Descriptor, and its Manifests with manifests=1.
      const inspected = JSON.parse(await dk('image', 'inspect', name))[0] as { Descriptor?: { mediaType: string; digest: string } };
      assert.equal(inspected.Descriptor?.digest, ix.digest);
      assert.equal(inspected.Descriptor?.mediaType, 'application/vnd.oci.image.index.v1+json');
      const withManifests = (await apiRequest(d, 'GET', `/v1.48/images/${name}/json?manifests=1`)).body as { Manifests?: ManifestSummary[] };
      assert.deepEqual(Object.keys(byArch(withManifests.Manifests ?? [])).sort(), [foreign, native].sort());
      assert.equal('Manifests' in ((await apiRequest(d, 'GET', `/v1.47/images/${name}/json?manifests=1`)).body as object), false, 'not before 1.48');

      // --platform on history and save picks one platform; save without it keeps both under one index.
      const historyOf = async (...args: string[]) => (await dk('history', '--no-trunc', '--format', '{{.Size}}', ...args, name)).split('\n').filter(Boolean);
      assert.equal((await historyOf('--platform', `linux/${foreign}`)).length, 2);
      const none2 = await apiRequest(d, 'GET', `/v1.48/images/${name}/history?platform=${encodeURIComponent(JSON.stringify({ os: 'linux', architecture: 's390x' }))}`);
      assert.equal(none2.status, 404);
      const two = await apiRequest(d, 'GET', `/v1.48/images/get?names=${encodeURIComponent(name)}&platform=${encodeURIComponent('{"os":"linux","architecture":"arm64"}')}&platform=${encodeURIComponent('{"os":"linux","architecture":"amd64"}')}`);
      assert.equal(two.status, 400);
      assert.match((two.body as { message: string }).message, /multiple platform parameters not supported/);
      const one = join(d.root, 'mp-one.tar');
      const whole = join(d.root, 'mp-whole.tar');
      await dk('save', '--platform', `linux/${foreign}`, '-o', one, name);
      await dk('save', '-o', whole, name);
      const tarJson = (file: string, entry: string) => JSON.parse(execFileSync('tar', ['-xOf', file, entry], { encoding: 'utf8' }));
      const blob = (file: string, digest: string) => tarJson(file, `blobs/sha256/${digest.slice(7)}`);
      const oneIndex = tarJson(one, 'index.json') as { manifests: Array<{ mediaType: string; digest: string }> };
      assert.equal(oneIndex.manifests[0]!.mediaType, 'application/vnd.oci.image.manifest.v1+json');
      assert.equal(blob(one, blob(one, oneIndex.manifests[0]!.digest).config.digest).architecture, foreign);
      const wholeIndex = tarJson(whole, 'index.json') as { manifests: Array<{ mediaType: string; digest: string; annotations: Record<string, string> }> };
      assert.equal(wholeIndex.manifests.length, 1);
      assert.equal(wholeIndex.manifests[0]!.mediaType, 'application/vnd.oci.image.index.v1+json');
      assert.equal(wholeIndex.manifests[0]!.annotations['io.containerd.image.name'], name);
      const inner = blob(whole, wholeIndex.manifests[0]!.digest) as { manifests: Array<{ platform: { architecture: string } }> };
      assert.deepEqual(inner.manifests.map((m) => m.platform.architecture).sort(), [foreign, native].sort());
      assert.equal((tarJson(whole, 'manifest.json') as unknown[]).length, 1, 'manifest.json: the host\'s platform');

      // Removed whole, every platform of it, as the reference removes an image.
      const gone = await dk('rmi', name);
      assert.match(gone, new RegExp(`^Untagged: ${name.replace(/[.]/g, '\\.')}$`, 'm'));
      assert.match(gone, new RegExp(`^Deleted: ${ix.digest}$`, 'm'));
      assert.deepEqual(await rows(), [], 'no record of it is left');

      // Load of the whole archive: the host's platform; load --platform (API 1.48) another of it.
      await dk('load', '-i', whole);
      assert.equal(await dk('run', '--rm', '--network', 'none', name, 'cat', '/etc/platform'), native);
      await dk('rmi', name);
      await dk('load', '--platform', `linux/${foreign}`, '-i', whole);
      assert.equal((await dk('image', 'inspect', '-f', '{{.Architecture}}', name)).trim(), foreign);
      await dk('rmi', name);
    } finally {
      // Each platform's record goes (the reference removes the image whole: see the closing note).
      for (let i = 0; index && i < 3; i++) await dk('rmi', '-f', index.digest).catch(() => undefined);
      await dk('rmi', '-f', name).catch(() => undefined);
      await reg.stop();
    }
  });

  test('image prune frees the content store\'s space; a load cut by kill -9 leaves no blob, lease or snapshot the supervisor keeps', async () => {
    const content = () => Number(execFileSync('du', ['-sb', join(d.dataRoot, 'containerd', 'io.containerd.content.v1.content')], { encoding: 'utf8' }).split('\t')[0]);
    const ctx = join(d.root, 'big-ctx');
    execFileSync('mkdir', ['-p', ctx]);
    writeFileSync(join(ctx, 'Dockerfile'), `FROM ${imgs.tag}\nRUN dd if=/dev/urandom of=/big bs=1M count=40 2>/dev/null\n`);
    const empty = content();
    await dk('build', '-q', '-t', 'big:1', ctx);
    const built = content();
    assert.equal(built - empty > 40 << 20, true, `${empty} → ${built}`);
    const archive = join(d.root, 'big.tar');
    await dk('save', '-o', archive, 'big:1');
    const pruned = await dk('image', 'prune', '-a', '-f');
    assert.match(pruned, /Total reclaimed space/);
    // Freed by the supervisor's collection, which every deletion schedules.
    for (let i = 0; i < 50 && content() >= empty + (1 << 20); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(content() < empty + (1 << 20), true, `after prune ${content()} (was ${empty} before the build)`);

    // A load killed in the middle (wherever the kill lands, nothing is kept that no layer names).
    const tmp = join(d.dataRoot, 'image', 'overlayfs', 'layerdb', 'tmp');
    const load = execFileAsync('docker', ['-H', d.dockerHost, 'load', '-i', archive]).catch(() => {});
    for (let i = 0; i < 200 && !(existsSync(tmp) && readdirSync(tmp).length > 0); i++) await new Promise((r) => setTimeout(r, 10));
    process.kill(d.pid, 'SIGKILL');
    await load;
    await d.restart();
    const layerBlobs = new Set<string>();
    for (const id of (await dk('images', '-aq', '--no-trunc')).split('\n').filter(Boolean)) {
      // Loaded tars are kept as they came: the blob of each layer is its diff id.
      for (const l of (await dk('inspect', '-f', '{{range .RootFS.Layers}}{{println .}}{{end}}', id)).split('\n').filter(Boolean)) layerBlobs.add(l);
    }
    assert.deepEqual(blobs(), [...layerBlobs].sort());
    const ctr = (...args: string[]) => execFileSync('ctr', ['-a', join(d.execRoot, 'containerd', 'containerd.sock'), '-n', 'engine', ...args], { encoding: 'utf8' });
    assert.doesNotMatch(ctr('leases', 'ls'), /engine\.layer-blob-write/);
    assert.deepEqual(snapshots().filter((x) => x.kind === 'Active'), []);
    await dk('load', '-i', archive);
    assert.equal((await dk('run', '--rm', 'big:1', 'sh', '-c', 'wc -c < /big')).trim(), String(40 << 20));
  });

  test('a reload that flips the feature is refused; turned off at a restart, its images are hidden, and shown again when it is on', async () => {
    const e = await startDaemon({ daemonJson: { features: { 'supervisor-snapshotter': true } } });
    try {
      const ek = dockerOk(() => e);
      await ek('load', '-i', imgs.dockerArchive);
      await ek('create', '--name', 'kept', imgs.tag, 'true');
      writeFileSync(e.configFile, JSON.stringify({ features: { 'supervisor-snapshotter': false } }));
      process.kill(e.pid, 'SIGHUP');
      for (let i = 0; i < 50 && !/cannot be changed by a reload, restart the daemon to apply them: features/.test(e.logs()); i++) await new Promise((r) => setTimeout(r, 100));
      assert.match(e.logs(), /reload refused.*cannot be changed by a reload, restart the daemon to apply them: features/);
      assert.equal((await apiRequest(e, 'GET', '/info')).body.Driver, 'overlayfs');

      await e.restart();
      assert.equal((await apiRequest(e, 'GET', '/info')).body.Driver, 'overlay2');
      assert.equal(await ek('images', '-q'), '');
      assert.equal(await ek('ps', '-aq'), '');
      writeFileSync(e.configFile, JSON.stringify({ features: { 'supervisor-snapshotter': true } }));
      await e.restart();
      assert.equal((await apiRequest(e, 'GET', '/info')).body.Driver, 'overlayfs');
      assert.notEqual(await ek('images', '-q'), '');
      assert.equal(await ek('ps', '-a', '--format', '{{.Names}}'), 'kept');
      await ek('start', 'kept');
    } finally {
      await e.cleanup();
    }
  });
});
