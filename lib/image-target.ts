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

/**
 * An image's target: its digest (the first repo digest's when pulled, else the OCI manifest's of its
 * config and layer blobs) and, where known, it as a descriptor with the size of the image's content
 * blobs (manifest, config, layers): the index or manifest a pull came by (`pulled`), or that OCI
 * manifest. A pulled image recorded before pulls kept their manifests has its digest only.
 */
export type ImageTarget = { digest: string; descriptor: ManifestRef; contentSize: number } | { digest: string; descriptor?: undefined };

export function imageTarget(img: { id: string; rawConfig: string; repoDigests: readonly string[]; pulled?: PulledManifests }, layers: readonly TargetLayer[]): ImageTarget {
  const pulledBy = img.repoDigests[0]?.split('@')[1];
  const local = pulledBy ? undefined : localTarget(img, layers);
  const digest = pulledBy ?? local!.descriptor.digest;
  if (img.pulled) return { digest, descriptor: pick(img.pulled.index ?? img.pulled.manifest), contentSize: img.pulled.contentSize };
  return local ? { ...local, digest } : { digest };
}

/** The OCI manifest of an image made here, as a descriptor, and its content size. */
function localTarget(img: { id: string; rawConfig: string }, layers: readonly TargetLayer[]): { descriptor: ManifestRef; contentSize: number } {
  const m = ociManifest(img.rawConfig, img.id, layers);
  return {
    descriptor: { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${createHash('sha256').update(m).digest('hex')}`, size: m.length },
    contentSize: m.length + Buffer.byteLength(img.rawConfig) + layers.reduce((n, l) => n + l.size, 0),
  };
}

const pick = (r: ManifestRef): ManifestRef => ({ mediaType: r.mediaType, digest: r.digest, size: r.size });
