// Multi-platform images with the supervisor's snapshotter (the feature supervisor-snapshotter): a
// pull of an index keeps one record per platform pulled (keyed by its config digest, as every
// record), and all of them share the index as their target. To clients they are one image, as in
// the reference's containerd store: one row of GET /images/json, its manifests listed with
// manifests=1 (API 1.47), the platform picked by `platform` on create. Without the feature no
// record has a target and each record is an image of its own.
import { invalidArgument, notFound } from '../../lib/errors.ts';
import { decodePlatform, formatPlatform, hostPlatform, parsePlatform, platformMatches, type Platform } from '../../lib/platform.ts';
import type { IndexEntry } from '../../lib/image-target.ts';
import { Containers } from '../../store/kinds/container.ts';
import { Images } from '../../store/kinds/image.ts';
import type { ApiStore } from '../containers/store.ts';
import { findImage, imageIdOf, isUsable, noSuchImage, platformOf, resolveImage, type ImageResource } from './resolve.ts';

type Reader = Pick<ApiStore, 'get' | 'list'>;

/** The records that are one image with `img` (itself first): those sharing its target. */
export function siblingsOf(store: Pick<ApiStore, 'list'>, img: ImageResource): ImageResource[] {
  const target = img.status.target;
  if (!target) return [img];
  return [img, ...store.list(Images).filter((r) => r !== img && r.name !== img.name && isUsable(r) && r.status.target === target)];
}

/** The record of the image `img` for `want`; undefined when the image has no such platform here. */
export function forPlatform(store: Pick<ApiStore, 'list'>, img: ImageResource, want: Platform): ImageResource | undefined {
  return siblingsOf(store, img).find((r) => platformMatches(platformOf(r), want));
}

/**
 * The record a container of `ref` is made from, for `platform` (create's query; the host's when
 * absent). An image that is its target has the platforms pulled of its index; one that is not has
 * the one of its config, and a platform other than linux[/amd64] finds no image, as before.
 */
export function resolveForPlatform(store: Reader, ref: string, platform?: string): ImageResource {
  const found = findImage(store, ref);
  if (platform && !found?.status.target && !/^linux(\/amd64)?(\/.*)?$/.test(platform)) throw noSuchImage(ref);
  const img = found ?? resolveImage(store, ref);
  if (!img.status.target) return img;
  // Found as the host's platform when the image has it (./resolve.ts).
  if (!platform) return img;
  const want = parsePlatform(platform);
  const rec = forPlatform(store, img, want);
  if (rec) return rec;
  throw noPlatform(ref, want);
}

/**
 * The record of the image `img` (named `ref`) for `want` (save and history with API 1.48's
 * `platform`): a sibling of a multi-platform image, or the image itself when its config is for it.
 */
export function pickPlatform(store: Pick<ApiStore, 'list'>, img: ImageResource, ref: string, want: Platform): ImageResource {
  const rec = img.status.target ? forPlatform(store, img, want) : platformMatches(platformOf(img), want) ? img : undefined;
  if (!rec) throw noPlatform(ref, want);
  return rec;
}

function noPlatform(ref: string, want: Platform): Error {
  return notFound(`image with reference ${ref} was found but does not provide the specified platform (${formatPlatform(want)})`);
}

/**
 * The `platform` query of save, load and history: API 1.48 takes one JSON-encoded OCI platform
 * (older versions have none and it is ignored); several are refused, as the reference does.
 */
export function platformQuery(values: readonly string[] | undefined, apiVersion: number): Platform | undefined {
  if (apiVersion < 1.48 || !values?.length) return undefined;
  if (values.length > 1) throw invalidArgument('multiple platform parameters not supported');
  return decodePlatform(values[0]!);
}

/**
 * Groups records into images: with the feature, records sharing a target are one, shown by its
 * `primary` (the one a tag points to, else the host's platform, else the newest).
 */
export function groupImages(images: readonly ImageResource[], tagged: (img: ImageResource) => boolean): Array<{ primary: ImageResource; members: ImageResource[] }> {
  const byId = new Map<string, ImageResource[]>();
  for (const img of images) {
    const id = imageIdOf(img);
    const list = byId.get(id);
    if (list) list.push(img);
    else byId.set(id, [img]);
  }
  const host = hostPlatform();
  return [...byId.values()].map((members) => {
    if (members.length === 1) return { primary: members[0]!, members };
    const primary =
      members.find(tagged) ?? members.find((m) => platformMatches(platformOf(m), host)) ?? [...members].sort((a, b) => b.spec.loadedAt.localeCompare(a.spec.loadedAt))[0]!;
    return { primary, members };
  });
}

/** One entry of an image summary's Manifests (API 1.47, ImageManifestSummary). */
export interface ManifestSummary {
  ID: string;
  Descriptor: Record<string, unknown>;
  Available: boolean;
  Size: { Total: number; Content: number };
  Kind: 'image' | 'attestation' | 'unknown';
  ImageData?: { Platform: Record<string, unknown>; Containers: string[]; Size: { Unpacked: number } };
  AttestationData?: { For: string };
}

const ATTESTATION = 'attestation-manifest';
const IMAGE_MEDIA = new Set(['application/vnd.oci.image.manifest.v1+json', 'application/vnd.docker.distribution.manifest.v2+json']);

/** The Manifests of an image (its records `members`): the index's entries, or its one manifest. */
export function manifestSummaries(store: Reader, members: readonly ImageResource[]): ManifestSummary[] {
  const containersOf = (img: ImageResource) =>
    store
      .list(Containers)
      .filter((c) => c.spec.imageId === img.name)
      .map((c) => c.spec.id);
  const index = members.map((m) => m.spec.pulled?.index).find(Boolean);
  if (index) {
    return index.manifests.map((e) => {
      const rec = members.find((m) => m.spec.pulled?.manifest.digest === e.digest);
      return entrySummary(e, rec, rec ? containersOf(rec) : []);
    });
  }
  const img = members[0]!;
  const d = img.status.descriptor;
  if (!d) return [];
  const p = platformOf(img);
  return [entrySummary({ ...d, platform: p }, img, containersOf(img))];
}

function entrySummary(e: IndexEntry, rec: ImageResource | undefined, containers: string[]): ManifestSummary {
  const descriptor: Record<string, unknown> = { mediaType: e.mediaType, digest: e.digest, size: e.size };
  if (e.annotations) descriptor.annotations = e.annotations;
  if (e.platform) descriptor.platform = ociPlatform(e.platform);
  const content = rec ? (rec.status.contentSize ?? rec.spec.pulled?.contentSize ?? 0) : 0;
  const unpacked = rec ? rec.spec.size : 0;
  const base = { ID: e.digest, Descriptor: descriptor, Available: !!rec };
  if (e.annotations?.['vnd.docker.reference.type'] === ATTESTATION) {
    return { ...base, Size: { Total: content, Content: content }, Kind: 'attestation', AttestationData: { For: e.annotations['vnd.docker.reference.digest'] ?? '' } };
  }
  if (!IMAGE_MEDIA.has(e.mediaType)) return { ...base, Size: { Total: content, Content: content }, Kind: 'unknown' };
  const platform = e.platform ?? (rec ? platformOf(rec) : { os: '', architecture: '' });
  return { ...base, Size: { Total: content + unpacked, Content: content }, Kind: 'image', ImageData: { Platform: ociPlatform(platform), Containers: containers, Size: { Unpacked: unpacked } } };
}

/**
 * The descriptor of the platform's manifest an image record is (a container summary's
 * ImageManifestDescriptor, API 1.48): the manifest a pull came by, or the image's own; only where
 * images are their targets (the feature).
 */
export function imageManifestDescriptor(img: ImageResource | undefined): Record<string, unknown> | undefined {
  if (!img?.status.target) return undefined;
  const m = img.spec.pulled?.manifest ?? img.status.descriptor;
  if (!m) return undefined;
  return { mediaType: m.mediaType, digest: m.digest, size: m.size, platform: ociPlatform(platformOf(img)) };
}

/** An OCI platform as the reference's JSON writes it (architecture, os, variant when set). */
function ociPlatform(p: { os: string; architecture: string; variant?: string }): Record<string, unknown> {
  return { architecture: p.architecture, os: p.os, ...(p.variant ? { variant: p.variant } : {}) };
}
