// Test images written straight into a registry through its HTTP API (monolithic blob uploads and
// manifest PUTs): multi-layer images, and multi-platform indexes (Docker manifest list or OCI index).
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { tarOf, type Entry } from '../../../hack/images/build-busybox.ts';

export const sha256 = (b: Buffer | string): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

export const MEDIA = {
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  dockerConfig: 'application/vnd.docker.container.image.v1+json',
  dockerLayer: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  ociLayer: 'application/vnd.oci.image.layer.v1.tar+gzip',
} as const;

export interface Layer {
  /** The gzip blob as the registry stores it. */
  blob: Buffer;
  digest: string;
  /** sha256 of the uncompressed tar. */
  diffId: string;
}

/** `size` bytes that do not compress, the same for the same seed. */
export function noise(seed: string, size: number): Buffer {
  const out = Buffer.alloc(size);
  let block = createHash('sha256').update(seed).digest();
  for (let off = 0; off < size; off += block.length) {
    block.copy(out, off);
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

/** A gzip layer from an uncompressed tar. */
export function layerFromTar(tar: Buffer): Layer {
  const blob = gzipSync(tar);
  return { blob, digest: sha256(blob), diffId: sha256(tar) };
}

/** A gzip layer holding the given regular files (fixed mtimes and owners, so it is reproducible). */
export async function layerOf(files: Record<string, Buffer | string>): Promise<Layer> {
  const entries: Entry[] = [];
  const dirs = new Set<string>();
  for (const name of Object.keys(files).sort()) {
    const parts = name.split('/').slice(0, -1);
    for (let i = 1; i <= parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      if (dirs.has(dir)) continue;
      dirs.add(dir);
      entries.push({ name: `${dir}/`, type: 'directory', mode: 0o755 });
    }
    entries.push({ name, type: 'file', mode: 0o644, data: Buffer.from(files[name]!) });
  }
  return layerFromTar(await tarOf(entries, new Date(0)));
}

async function check(res: Response, what: string): Promise<Response> {
  if (!res.ok) throw new Error(`${what}: ${res.status} ${res.statusText}: ${await res.text()}`);
  return res;
}

/** Upload one blob unless the repository has it already; returns its digest. */
export async function uploadBlob(registryUrl: string, repo: string, data: Buffer): Promise<string> {
  const digest = sha256(data);
  const head = await fetch(`${registryUrl}/v2/${repo}/blobs/${digest}`, { method: 'HEAD' });
  if (head.ok) return digest;
  const start = await check(await fetch(`${registryUrl}/v2/${repo}/blobs/uploads/`, { method: 'POST' }), `start upload to ${repo}`);
  const location = new URL(start.headers.get('location') ?? '', registryUrl);
  location.searchParams.set('digest', digest);
  await check(await fetch(location, { method: 'PUT', body: data, headers: { 'Content-Type': 'application/octet-stream' } }), `upload ${digest}`);
  return digest;
}

export interface Manifest {
  mediaType: string;
  body: Buffer;
  digest: string;
}

/** PUT a manifest or index under a tag (or its digest); returns it with its digest. */
export async function putManifest(registryUrl: string, repo: string, reference: string, mediaType: string, doc: unknown): Promise<Manifest> {
  const body = Buffer.from(JSON.stringify(doc, null, 2));
  await check(await fetch(`${registryUrl}/v2/${repo}/manifests/${reference}`, { method: 'PUT', body, headers: { 'Content-Type': mediaType } }), `put manifest ${repo}:${reference}`);
  return { mediaType, body, digest: sha256(body) };
}

export interface ImageSpec {
  layers: Layer[];
  os?: string;
  architecture: string;
  variant?: string;
  cmd?: string[];
  /** Docker schema 2 (default) or OCI media types. */
  format?: 'docker' | 'oci';
}

export interface WrittenImage {
  manifest: Manifest;
  /** The image id a daemon gives it: the config digest. */
  id: string;
  config: Buffer;
}

/** Upload the layers and config of an image and PUT its manifest under `reference`. */
export async function writeImage(registryUrl: string, repo: string, reference: string, spec: ImageSpec): Promise<WrittenImage> {
  const oci = spec.format === 'oci';
  const created = '2024-01-01T00:00:00Z';
  const config = Buffer.from(JSON.stringify({
    architecture: spec.architecture,
    os: spec.os ?? 'linux',
    ...(spec.variant ? { variant: spec.variant } : {}),
    created,
    config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], Cmd: spec.cmd ?? ['sh'] },
    rootfs: { type: 'layers', diff_ids: spec.layers.map((l) => l.diffId) },
    history: spec.layers.map((_l, i) => ({ created, created_by: `test layer ${i}` })),
  }));
  for (const l of spec.layers) await uploadBlob(registryUrl, repo, l.blob);
  const configDigest = await uploadBlob(registryUrl, repo, config);
  const mediaType = oci ? MEDIA.ociManifest : MEDIA.dockerManifest;
  const manifest = await putManifest(registryUrl, repo, reference, mediaType, {
    schemaVersion: 2,
    mediaType,
    config: { mediaType: oci ? MEDIA.ociConfig : MEDIA.dockerConfig, size: config.length, digest: configDigest },
    layers: spec.layers.map((l) => ({ mediaType: oci ? MEDIA.ociLayer : MEDIA.dockerLayer, size: l.blob.length, digest: l.digest })),
  });
  return { manifest, id: configDigest, config };
}

/** PUT a multi-platform index of images already in the repository. */
export async function writeIndex(
  registryUrl: string, repo: string, tag: string, format: 'docker' | 'oci',
  entries: Array<{ manifest: Manifest; platform: { os: string; architecture: string; variant?: string } }>,
): Promise<Manifest> {
  const mediaType = format === 'oci' ? MEDIA.ociIndex : MEDIA.dockerList;
  return putManifest(registryUrl, repo, tag, mediaType, {
    schemaVersion: 2,
    mediaType,
    manifests: entries.map((e) => ({ mediaType: e.manifest.mediaType, size: e.manifest.body.length, digest: e.manifest.digest, platform: e.platform })),
  });
}
