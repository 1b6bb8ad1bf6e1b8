// Image lookup as the reference daemon does it: full id, tag reference, digest reference, then a
// unique id prefix. Only images that are present and ready count.
import { notFound } from '../../lib/errors.ts';
import { familiarName, formatReference, parseReference, repositoryName, type Reference } from '../../lib/reference.ts';
import { Images, type ImageResource } from '../../store/kinds/image.ts';
import { configPlatform, hostPlatform, platformMatches, type Platform } from '../../lib/platform.ts';

import type { ApiStore } from '../containers/store.ts';
import { References } from '../../store/kinds/reference.ts';
export type { ImageResource } from '../../store/kinds/image.ts';

type ImageReader = Pick<ApiStore, 'get' | 'list'>;

const HEX64 = /^[a-f0-9]{64}$/;
const HEX = /^[a-f0-9]+$/;

/**
 * The Id clients see: the target digest with the supervisor's snapshotter (status.target, the
 * manifest's digest as the reference's containerd store shows it), else the config digest.
 */
export function imageIdOf(img: ImageResource): string {
  return img.status.target ?? img.name;
}

/** The Id clients see of the image record `name` (itself when there is none). */
export function shownImageId(store: Pick<ApiStore, 'get'>, name: string): string {
  const img = name ? store.get(Images, name) : undefined;
  return img ? imageIdOf(img) : name;
}

export function isUsable(r: ImageResource | undefined): r is ImageResource {
  return !!r && r.spec.desired === 'present' && r.status.phase === 'ready';
}

/** `No such image: busybox:latest` style error for what the client asked. */
export function noSuchImage(ref: string): Error {
  return notFound(`No such image: ${ref}`);
}

export function resolveImage(store: ImageReader, ref: string): ImageResource {
  const found = findImage(store, ref);
  if (found) return found;
  throw noSuchImage(describe(ref));
}

/** Like resolveImage but undefined instead of NotFound (InvalidArgument still throws). */
export function findImage(store: ImageReader, ref: string): ImageResource | undefined {
  const hex = ref.startsWith('sha256:') ? ref.slice(7) : ref;
  if (HEX64.test(hex)) {
    const r = store.get(Images, `sha256:${hex}`);
    if (isUsable(r)) return r;
    return hostFirst(store, store.list(Images).find((x) => isUsable(x) && x.status.target === `sha256:${hex}`));
  }
  if (ref.startsWith('sha256:')) return HEX.test(hex) ? hostFirst(store, byPrefix(store, hex)) : undefined;

  const parsed = parseReference(ref);
  if (parsed.digest) return hostFirst(store, byDigest(store, parsed));
  const name = formatReference({ ...parsed, tag: parsed.tag ?? 'latest' });
  const tagged = store.get(References, name);
  if (tagged) {
    const r = store.get(Images, tagged.spec.imageId);
    if (isUsable(r)) return hostFirst(store, r);
  }
  if (parsed.tag === undefined && HEX.test(ref)) return hostFirst(store, byPrefix(store, ref));
  return undefined;
}

/**
 * A multi-platform image (records sharing a target, the supervisor's snapshotter: ./platforms.ts)
 * is found as its record for the host's platform when it has one here, as the reference's
 * containerd store matches the default platform.
 */
function hostFirst(store: ImageReader, img: ImageResource | undefined): ImageResource | undefined {
  const target = img?.status.target;
  if (!img || !target) return img;
  const host = hostPlatform();
  if (platformMatches(platformOf(img), host)) return img;
  return store.list(Images).find((r) => isUsable(r) && r.status.target === target && platformMatches(platformOf(r), host)) ?? img;
}

/** The platform of an image record, from its config (empty where the config names none or is broken). */
export function platformOf(img: ImageResource): Platform {
  return configPlatform(img.spec.rawConfig);
}

function byDigest(store: ImageReader, ref: Reference): ImageResource | undefined {
  const wanted = `${repositoryName(ref)}@${ref.digest}`;
  return store.list(Images).find((r) => isUsable(r) && r.spec.repoDigests.some((d) => normalizeDigestRef(d) === wanted));
}

function normalizeDigestRef(d: string): string {
  try {
    const p = parseReference(d);
    return `${repositoryName(p)}@${p.digest ?? ''}`;
  } catch {
    return d;
  }
}

/** A unique prefix of the hex id; ambiguous prefixes find nothing, as in the reference daemon. */
function byPrefix(store: ImageReader, hexPrefix: string): ImageResource | undefined {
  // With target digests an image is known by its Id only (as the reference with its containerd store).
  const matches = store.list(Images).filter((r) => isUsable(r) && imageIdOf(r).slice(7).startsWith(hexPrefix));
  // The records of one multi-platform image share their Id: one image.
  return new Set(matches.map(imageIdOf)).size === 1 ? matches[0] : undefined;
}

/** The reference as the daemon names it in "No such image": familiar, with the default tag added. */
function describe(ref: string): string {
  const hex = ref.startsWith('sha256:') ? ref.slice(7) : ref;
  if (HEX64.test(hex)) return `sha256:${hex}`;
  if (ref.startsWith('sha256:')) return ref;
  try {
    const p = parseReference(ref);
    if (p.tag === undefined && p.digest === undefined) p.tag = 'latest';
    return familiarName(formatReference(p));
  } catch {
    return ref;
  }
}

/** Fully normalised tag references ("docker.io/library/busybox:latest") that point at `imageId`. */
export function referencesOf(store: Pick<ApiStore, 'list'>, imageId: string): string[] {
  return store
    .list(References)
    .filter((r) => r.spec.imageId === imageId)
    .map((r) => r.name)
    .sort();
}
