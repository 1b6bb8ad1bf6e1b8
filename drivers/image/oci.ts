// OCI / Docker distribution media types and the JSON shapes of the archive formats.

export const MEDIA = {
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  ociLayer: 'application/vnd.oci.image.layer.v1.tar',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
} as const;

export const ANNOTATION_IMAGE_NAME = 'io.containerd.image.name';
export const ANNOTATION_REF_NAME = 'org.opencontainers.image.ref.name';
/** Marks BuildKit attestation manifests inside an index; they are not images. */
export const ANNOTATION_REFERENCE_TYPE = 'vnd.docker.reference.type';

export const OCI_LAYOUT = { imageLayoutVersion: '1.0.0' } as const;

export interface Descriptor {
  mediaType?: string;
  digest: string;
  size?: number;
  annotations?: Record<string, string>;
  platform?: { os?: string; architecture?: string; variant?: string };
}

export interface OciIndex {
  schemaVersion?: number;
  mediaType?: string;
  manifests: Descriptor[];
}

export interface OciManifest {
  schemaVersion?: number;
  mediaType?: string;
  config: Descriptor;
  layers: Descriptor[];
}

/** One entry of a `docker save` manifest.json. */
export interface DockerSaveEntry {
  Config: string;
  RepoTags: string[] | null;
  Layers: string[];
}

export function isIndexMedia(m: string | undefined): boolean {
  return m === MEDIA.ociIndex || m === MEDIA.dockerList;
}

/** `blobs/<alg>/<hex>` for a digest. */
export function blobPath(digest: string): string {
  const i = digest.indexOf(':');
  return `blobs/${digest.slice(0, i)}/${digest.slice(i + 1)}`;
}
