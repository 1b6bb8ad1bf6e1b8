// Multi-platform images with the supervisor's snapshotter (api/images/platforms.ts): records
// sharing a target are one image; a platform is picked from them; their Manifests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { groupImages, manifestSummaries, resolveForPlatform } from '../../../api/images/platforms.ts';
import { findImage } from '../../../api/images/resolve.ts';
import { hostPlatform } from '../../../lib/platform.ts';
import type { PulledManifests } from '../../../lib/image-target.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { Images, type ImageResource } from '../../../store/kinds/image.ts';
import { References } from '../../../store/kinds/reference.ts';

const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;
const host = hostPlatform().architecture;
const other = host === 'amd64' ? 'arm64' : 'amd64';
const OCI = 'application/vnd.oci.image.manifest.v1+json';

function record(arch: string, pulled?: PulledManifests, target?: string, loadedAt = '2026-01-01T00:00:00Z'): ImageResource {
  const rawConfig = JSON.stringify({ architecture: arch, os: 'linux', rootfs: { type: 'layers', diff_ids: [] } });
  return {
    name: sha(rawConfig),
    generation: 1,
    createdAt: loadedAt,
    spec: { id: sha(rawConfig), rawConfig, diffIds: [], chainId: null, size: arch === host ? 1000 : 2000, repoDigests: target ? [`docker.io/library/multi@${target}`] : [], parent: '', loadedAt, desired: 'present', ...(pulled ? { pulled } : {}) },
    status: { observedGeneration: 1, phase: 'ready', error: '', ...(target ? { target } : {}) },
  } as unknown as ImageResource;
}

const index = { mediaType: 'application/vnd.oci.image.index.v1+json', digest: sha('index'), size: 500 };
const entries = [
  { mediaType: OCI, digest: sha(`m-${other}`), size: 400, platform: { os: 'linux', architecture: other } },
  { mediaType: OCI, digest: sha(`m-${host}`), size: 401, platform: { os: 'linux', architecture: host } },
  { mediaType: OCI, digest: sha('att'), size: 300, annotations: { 'vnd.docker.reference.type': 'attestation-manifest', 'vnd.docker.reference.digest': sha(`m-${host}`) } },
];
const pulledAs = (arch: string): PulledManifests => ({ manifest: entries.find((e) => e.platform?.architecture === arch)!, contentSize: 5000, index: { ...index, manifests: entries } });

function storeOf(images: ImageResource[], tags: Record<string, string> = {}, containers: Array<{ id: string; imageId: string }> = []) {
  return {
    get: (kind: unknown, name: string) => (kind === Images ? images.find((i) => i.name === name) : kind === References && tags[name] ? { name, spec: { imageId: tags[name] } } : undefined),
    list: (kind: unknown) =>
      kind === Images ? images : kind === References ? Object.entries(tags).map(([name, imageId]) => ({ name, spec: { imageId } })) : kind === Containers ? containers.map((c) => ({ spec: c })) : [],
  } as never;
}

test('records sharing a target are one image: grouped under the tagged one; found as the host\'s platform by tag, id and prefix', () => {
  const mine = record(host, pulledAs(host), index.digest);
  const theirs = record(other, pulledAs(other), index.digest, '2026-02-01T00:00:00Z');
  const alone = record('riscv64');
  const groups = groupImages([mine, theirs, alone], (i) => i === theirs);
  assert.equal(groups.length, 2);
  assert.equal(groups[0]!.primary, theirs, 'the tagged record shows the image');
  assert.deepEqual(groups[0]!.members.map((m) => m.name).sort(), [mine.name, theirs.name].sort());
  // The tag points at the other platform (pulled last); lookups give the host's.
  const store = storeOf([mine, theirs, alone], { 'docker.io/library/multi:latest': theirs.name });
  assert.equal(findImage(store, 'multi'), mine);
  assert.equal(findImage(store, index.digest), mine);
  assert.equal(findImage(store, index.digest.slice(7, 19)), mine, 'a prefix shared by one image\'s records is not ambiguous');
});

test('create\'s platform picks the record; one the image lacks is the reference\'s 404', () => {
  const mine = record(host, pulledAs(host), index.digest);
  const theirs = record(other, pulledAs(other), index.digest);
  const store = storeOf([mine, theirs], { 'docker.io/library/multi:latest': theirs.name });
  assert.equal(resolveForPlatform(store, 'multi'), mine);
  assert.equal(resolveForPlatform(store, 'multi', `linux/${other}`), theirs);
  assert.equal(resolveForPlatform(store, 'multi', `linux/${host}`), mine);
  assert.throws(() => resolveForPlatform(store, 'multi', 'linux/s390x'), { message: 'image with reference multi was found but does not provide the specified platform (linux/s390x)' });
  // Without targets (no feature): as before, another OS finds no image.
  const plain = record('amd64');
  const old = storeOf([plain], { 'docker.io/library/plain:latest': plain.name });
  assert.equal(resolveForPlatform(old, 'plain', 'linux/amd64'), plain);
  assert.throws(() => resolveForPlatform(old, 'plain', 'windows/amd64'), { message: 'No such image: plain' });
});

test('Manifests: each entry of the index, available where a record came by it, with its containers and sizes; an attestation; an image made here has its one manifest', () => {
  const mine = record(host, pulledAs(host), index.digest);
  const store = storeOf([mine], {}, [{ id: 'c1', imageId: mine.name }]);
  const ms = manifestSummaries(store, [mine]);
  assert.equal(ms.length, 3);
  const [theirs, ours, att] = ms;
  assert.deepEqual(theirs, {
    ID: entries[0]!.digest, Descriptor: { mediaType: OCI, digest: entries[0]!.digest, size: 400, platform: { architecture: other, os: 'linux' } },
    Available: false, Size: { Total: 0, Content: 0 }, Kind: 'image', ImageData: { Platform: { architecture: other, os: 'linux' }, Containers: [], Size: { Unpacked: 0 } },
  });
  assert.equal(ours!.Available, true);
  assert.deepEqual(ours!.Size, { Total: 6000, Content: 5000 });
  assert.deepEqual(ours!.ImageData!.Containers, ['c1']);
  assert.equal(att!.Kind, 'attestation');
  assert.deepEqual(att!.AttestationData, { For: entries[1]!.digest });

  const made = record(host, undefined, sha('local-manifest'));
  made.status.descriptor = { mediaType: OCI, digest: sha('local-manifest'), size: 321 };
  made.status.contentSize = 4321;
  const [one, ...none] = manifestSummaries(storeOf([made]), [made]);
  assert.equal(none.length, 0);
  assert.equal(one!.ID, sha('local-manifest'));
  assert.equal(one!.Available, true);
  assert.deepEqual(one!.Size, { Total: 4321 + 1000, Content: 4321 });
  assert.deepEqual(one!.ImageData!.Platform, { architecture: host, os: 'linux' });
});
