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
