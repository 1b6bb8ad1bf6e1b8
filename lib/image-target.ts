// The digest an image is known by when the supervisor's snapshotter keeps images (the feature
// supervisor-snapshotter), as the reference's containerd image store names images by their
// target: the manifest or index a pull came by, or, for an image made here (load, import, build,
// commit), the OCI image manifest of its config and layer blobs.
import { createHash } from 'node:crypto';

export interface TargetLayer {
  /** The blob as kept: 'none' (a plain tar), 'gzip' or 'zstd'. */
  media: 'none' | 'gzip' | 'zstd';
  digest: string;
  size: number;
}

const LAYER_MEDIA = {
  none: 'application/vnd.oci.image.layer.v1.tar',
  gzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
  zstd: 'application/vnd.oci.image.layer.v1.tar+zstd',
} as const;

/** The OCI image manifest of a config (its exact text) and layer blobs, as bytes. */
export function ociManifest(rawConfig: string, configDigest: string, layers: readonly TargetLayer[]): Buffer {
  return Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: configDigest, size: Buffer.byteLength(rawConfig) },
    layers: layers.map((l) => ({ mediaType: LAYER_MEDIA[l.media], digest: l.digest, size: l.size })),
  }));
}

/** The target digest: the digest of the first repo digest (`name@sha256:…`) when pulled, else of ociManifest. */
export function imageTarget(img: { id: string; rawConfig: string; repoDigests: readonly string[] }, layers: readonly TargetLayer[]): string {
  const pulled = img.repoDigests[0]?.split('@')[1];
  if (pulled) return pulled;
  return `sha256:${createHash('sha256').update(ociManifest(img.rawConfig, img.id, layers)).digest('hex')}`;
}

/** A manifest or index as an OCI descriptor (an image's Descriptor and Manifests on the wire). */
export interface ManifestRef {
  mediaType: string;
  digest: string;
  size: number;
}

/** One entry of an index: a manifest and the platform it is for. */
export interface IndexEntry extends ManifestRef {
  platform?: { os: string; architecture: string; variant?: string };
  annotations?: Record<string, string>;
}

/** What a pull came by: the image manifest of this image's content, and the index the name led to, if any. */
export interface PulledManifests {
  manifest: ManifestRef;
  /** The manifest, config and layer blobs as the registry served them (ManifestSummary's Size.Content). */
  contentSize: number;
  index?: ManifestRef & { manifests: IndexEntry[] };
}

/** What an image's target is as a descriptor, and the size of its content blobs (manifest, config, layers). */
export interface TargetDescriptor {
  descriptor: ManifestRef;
  contentSize: number;
}

/**
 * The target as a descriptor: the index or manifest a pull came by (`pulled`), else the OCI
 * manifest of the config and layer blobs; undefined for a pulled image recorded before pulls kept
 * their manifests (its target is known by digest only).
 */
export function targetDescriptor(img: { id: string; rawConfig: string; repoDigests: readonly string[]; pulled?: PulledManifests }, layers: readonly TargetLayer[]): TargetDescriptor | undefined {
  if (img.pulled) return { descriptor: img.pulled.index ? pick(img.pulled.index) : img.pulled.manifest, contentSize: img.pulled.contentSize };
  if (img.repoDigests.length > 0) return undefined;
  const m = ociManifest(img.rawConfig, img.id, layers);
  return {
    descriptor: { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${createHash('sha256').update(m).digest('hex')}`, size: m.length },
    contentSize: m.length + Buffer.byteLength(img.rawConfig) + layers.reduce((n, l) => n + l.size, 0),
  };
}

const pick = (r: ManifestRef): ManifestRef => ({ mediaType: r.mediaType, digest: r.digest, size: r.size });
