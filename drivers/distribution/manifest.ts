// Manifest and index media types, parsing, and platform selection from a manifest list.
import { invalidArgument, notFound } from '../../lib/errors.ts';
import type { Platform } from './types.ts';

export const MEDIA = {
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  dockerSchema1: 'application/vnd.docker.distribution.manifest.v1+json',
  dockerSchema1Signed: 'application/vnd.docker.distribution.manifest.v1+prettyjws',
  dockerConfig: 'application/vnd.docker.container.image.v1+json',
  dockerLayer: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
  dockerForeignLayer: 'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  ociLayer: 'application/vnd.oci.image.layer.v1.tar',
  ociLayerGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
  ociLayerZstd: 'application/vnd.oci.image.layer.v1.tar+zstd',
  ociNondistributable: 'application/vnd.oci.image.layer.nondistributable.v1.tar',
  ociNondistributableGzip: 'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip',
  ociNondistributableZstd: 'application/vnd.oci.image.layer.nondistributable.v1.tar+zstd',
} as const;

/** What the client accepts when it asks for a manifest. */
export const MANIFEST_ACCEPT = [MEDIA.ociIndex, MEDIA.dockerList, MEDIA.ociManifest, MEDIA.dockerManifest].join(', ');

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  urls?: string[];
  platform?: Platform & { 'os.version'?: string; 'os.features'?: string[] };
  annotations?: Record<string, string>;
}

export interface ImageManifest {
  schemaVersion: number;
  mediaType?: string;
  config: Descriptor;
  layers: Descriptor[];
}

export interface ManifestIndex {
  schemaVersion: number;
  mediaType?: string;
  manifests: Descriptor[];
}

export type Parsed =
  | { kind: 'manifest'; mediaType: string; manifest: ImageManifest }
  | { kind: 'index'; mediaType: string; index: ManifestIndex }
  | { kind: 'schema1'; mediaType: string };

/** Parse a manifest body; the Content-Type wins, the body's mediaType field is the fallback. */
export function parseManifest(contentType: string | undefined, body: Buffer): Parsed {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  } catch {
    throw invalidArgument('invalid manifest: not JSON');
  }
  const ct = (contentType ?? '').split(';')[0]!.trim();
  let mediaType = typeof json.mediaType === 'string' ? json.mediaType : ct;
  if (!mediaType || mediaType === 'application/json' || mediaType === 'text/plain') {
    mediaType = Array.isArray(json.manifests) ? MEDIA.ociIndex : json.schemaVersion === 1 ? MEDIA.dockerSchema1 : MEDIA.ociManifest;
  }
  if (mediaType === MEDIA.dockerSchema1 || mediaType === MEDIA.dockerSchema1Signed || json.schemaVersion === 1) return { kind: 'schema1', mediaType };
  if (mediaType === MEDIA.dockerList || mediaType === MEDIA.ociIndex || Array.isArray(json.manifests)) {
    return { kind: 'index', mediaType, index: json as unknown as ManifestIndex };
  }
  const m = json as unknown as ImageManifest;
  if (!m.config || !Array.isArray(m.layers)) throw invalidArgument(`unsupported manifest media type: ${mediaType}`);
  return { kind: 'manifest', mediaType, manifest: m };
}

export function isForeign(mediaType: string): boolean {
  return mediaType === MEDIA.dockerForeignLayer || mediaType.startsWith('application/vnd.oci.image.layer.nondistributable.');
}

const ARCH_ALIASES: Record<string, string> = { x86_64: 'amd64', 'x86-64': 'amd64', aarch64: 'arm64', armhf: 'arm', armel: 'arm', i386: '386' };

/** Normalise os/arch/variant the way containerd's platforms package does. */
export function normalizePlatform(p: Platform): Platform {
  const os = p.os.toLowerCase();
  const architecture = ARCH_ALIASES[p.architecture.toLowerCase()] ?? p.architecture.toLowerCase();
  let variant = p.variant?.toLowerCase() || undefined;
  if (architecture === 'arm64' && (variant === 'v8' || variant === '8')) variant = undefined;
  if (architecture === 'amd64' && variant === 'v1') variant = undefined;
  if (architecture === 'arm' && !variant) variant = 'v7';
  if (architecture === 'arm' && variant && /^\d$/.test(variant)) variant = `v${variant}`;
  return variant ? { os, architecture, variant } : { os, architecture };
}

/** `linux/arm64/v8` → Platform. InvalidArgument on nonsense. */
export function parsePlatform(s: string, dflt: Platform): Platform {
  const parts = s.trim().split('/');
  if (!parts[0] || parts.length > 3 || parts.some((x) => !/^[A-Za-z0-9_.-]+$/.test(x))) {
    throw invalidArgument(`"${s}": unknown operating system or architecture: invalid argument`);
  }
  if (parts.length === 1) {
    if (parts[0] === dflt.os) return normalizePlatform(dflt);
    return normalizePlatform({ os: parts[0]!, architecture: dflt.architecture });
  }
  return normalizePlatform({ os: parts[0]!, architecture: parts[1]!, variant: parts[2] });
}

export function formatPlatform(p: Platform): string {
  return [p.os, p.architecture, p.variant].filter(Boolean).join('/');
}

export function platformMatches(want: Platform, have: Platform): boolean {
  const w = normalizePlatform(want);
  const h = normalizePlatform(have);
  return w.os === h.os && w.architecture === h.architecture && (w.variant === undefined || w.variant === h.variant);
}

/** The manifest of an index for `want`: an exact variant beats an unspecified one. */
export function selectPlatform(index: ManifestIndex, want: Platform): Descriptor {
  const candidates = (index.manifests ?? []).filter((d) => d.platform && d.platform.os !== 'unknown' && platformMatches(want, d.platform));
  const w = normalizePlatform(want);
  const exact = candidates.find((d) => normalizePlatform(d.platform!).variant === w.variant);
  const pick = exact ?? candidates[0];
  if (!pick) throw notFound(`no matching manifest for ${formatPlatform(w)} in the manifest list entries`);
  return pick;
}
