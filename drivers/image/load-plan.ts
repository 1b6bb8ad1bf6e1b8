// Reads a spooled archive (docker save or OCI image layout) into a list of images to create,
// checking everything that can be checked before a single layer is unpacked: JSON shapes,
// blob digests and sizes, layer counts, tags. Nothing here touches the layer store.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { invalidArgument, notFound } from '../../lib/errors.ts';
import { isDigest, normalizeName as normalizeReference, parseReference } from '../../lib/reference.ts';
import type { ImageConfigBlob } from '../../lib/image-config.ts';
import {
  ANNOTATION_IMAGE_NAME, ANNOTATION_REF_NAME, ANNOTATION_REFERENCE_TYPE, blobPath, isIndexMedia,
  type Descriptor, type DockerSaveEntry, type OciIndex, type OciManifest,
} from './oci.ts';
import { formatPlatform, platformMatches, type Platform } from '../../lib/platform.ts';
import type { Spool, SpooledFile } from './spool.ts';

export interface PlannedImage {
  /** `sha256:` + sha256 of rawConfig. */
  id: string;
  rawConfig: Buffer;
  config: ImageConfigBlob;
  /** Layer blobs bottom first, one per config.rootfs.diff_ids entry. */
  layers: SpooledFile[];
  /** Fully normalised, tagged references. */
  repoTags: string[];
}

const MAX_INDEX_DEPTH = 4;

/**
 * Plan the images of an archive; `platform` picks the manifest inside multi-platform indexes.
 * One asked for (`picked`: load's API 1.48 query) reads the OCI layout first, where a saved
 * multi-platform image has all its platforms (manifest.json has one), and keeps only its images.
 */
export async function planImages(spool: Spool, platform: Platform, picked = false): Promise<PlannedImage[]> {
  let plans: PlannedImage[];
  if (picked && spool.lookup('index.json')) plans = await planOciLayout(spool, platform);
  else if (spool.lookup('manifest.json')) plans = await planDockerSave(spool);
  else if (spool.lookup('index.json')) plans = await planOciLayout(spool, platform);
  else if (spool.lookup('repositories')) {
    throw invalidArgument('invalid archive: legacy v1 image archives (no manifest.json) are not supported');
  } else {
    throw invalidArgument('invalid archive: no manifest.json or index.json found (not a docker save or OCI layout tarball)');
  }
  if (picked) {
    plans = plans.filter((p) => platformMatches({ os: p.config.os, architecture: p.config.architecture, variant: p.config.variant }, platform));
    if (plans.length === 0) throw notFound(`no image in the archive provides the specified platform (${formatPlatform(platform)})`);
  }
  for (const p of plans) {
    if (p.config.os && p.config.os !== platform.os) {
      throw invalidArgument(`cannot load ${p.config.os} image on ${platform.os}`);
    }
  }
  return mergePlans(plans);
}

// ---- docker save (manifest.json) ----------------------------------------------------------------

async function planDockerSave(spool: Spool): Promise<PlannedImage[]> {
  const entries = await readJson<unknown>(spool, 'manifest.json');
  if (!Array.isArray(entries)) throw invalidArgument('invalid archive: manifest.json is not a list');
  const plans: PlannedImage[] = [];
  for (const [i, e] of entries.entries()) {
    const entry = e as Partial<DockerSaveEntry>;
    if (!entry || typeof entry.Config !== 'string' || !isStringArray(entry.Layers ?? [])) {
      throw invalidArgument(`invalid archive: manifest.json entry ${i} is malformed`);
    }
    const configFile = requireFile(spool, entry.Config, digestNamedBy(entry.Config));
    const rawConfig = await readRaw(configFile);
    const config = parseConfig(rawConfig, entry.Config);
    const layerNames = entry.Layers ?? [];
    if (layerNames.length !== config.rootfs.diff_ids.length) {
      throw invalidArgument(`invalid manifest, layers length mismatch: expected ${config.rootfs.diff_ids.length}, got ${layerNames.length}`);
    }
    const layers = layerNames.map((name) => requireFile(spool, name, digestNamedBy(name)));
    const tags = entry.RepoTags ?? [];
    if (!isStringArray(tags)) throw invalidArgument(`invalid archive: RepoTags of manifest.json entry ${i} is malformed`);
    plans.push({ id: imageIdOf(rawConfig), rawConfig, config, layers, repoTags: tags.map(normalizeTag) });
  }
  return plans;
}

/** `blobs/<alg>/<hex>` and `<64hex>.json` name the digest of their content. */
function digestNamedBy(name: string): string | undefined {
  const blob = /^(?:\.\/)?blobs\/([a-z0-9]+)\/([a-f0-9]+)$/.exec(name);
  if (blob) return `${blob[1]}:${blob[2]}`;
  const cfg = /^(?:\.\/)?([a-f0-9]{64})\.json$/.exec(name);
  return cfg ? `sha256:${cfg[1]}` : undefined;
}

function normalizeTag(t: string): string {
  let ref;
  try {
    ref = parseReference(t);
  } catch (err) {
    throw invalidArgument(`invalid tag "${t}"`, err);
  }
  if (ref.tag === undefined || ref.digest !== undefined) throw invalidArgument(`invalid tag "${t}"`);
  return `${ref.domain}/${ref.path}:${ref.tag}`;
}

// ---- OCI image layout (index.json) ----------------------------------------------------------------

async function planOciLayout(spool: Spool, platform: Platform): Promise<PlannedImage[]> {
  const index = await readJson<OciIndex>(spool, 'index.json');
  if (!index || !Array.isArray(index.manifests)) throw invalidArgument('invalid archive: index.json has no manifests');
  const plans: PlannedImage[] = [];
  for (const desc of index.manifests) {
    if (isAttestation(desc)) continue;
    const manifest = await resolveManifest(spool, desc, platform, 0);
    const configFile = requireBlob(spool, manifest.config);
    const rawConfig = await readRaw(configFile);
    const config = parseConfig(rawConfig, manifest.config.digest);
    if (manifest.layers.length !== config.rootfs.diff_ids.length) {
      throw invalidArgument(`invalid manifest, layers length mismatch: expected ${config.rootfs.diff_ids.length}, got ${manifest.layers.length}`);
    }
    const layers = manifest.layers.map((l) => requireBlob(spool, l));
    plans.push({ id: imageIdOf(rawConfig), rawConfig, config, layers, repoTags: namesFromAnnotations(desc.annotations) });
  }
  return plans;
}

async function resolveManifest(spool: Spool, desc: Descriptor, platform: Platform, depth: number): Promise<OciManifest> {
  if (depth > MAX_INDEX_DEPTH) throw invalidArgument('invalid archive: image indexes nested too deeply');
  const doc = parseJson<Partial<OciIndex & OciManifest>>(await readRaw(requireBlob(spool, desc)), desc.digest);
  if (isIndexMedia(desc.mediaType) || isIndexMedia(doc.mediaType) || (Array.isArray(doc.manifests) && !doc.config)) {
    const child = pickManifest(spool, doc.manifests ?? [], platform);
    return resolveManifest(spool, child, platform, depth + 1);
  }
  if (!doc.config || typeof doc.config.digest !== 'string' || !Array.isArray(doc.layers)) {
    throw invalidArgument(`invalid archive: manifest ${desc.digest} is malformed`);
  }
  return { config: doc.config, layers: doc.layers };
}

/** The entry for our platform whose blob the archive holds; a lone available entry otherwise. */
function pickManifest(spool: Spool, manifests: Descriptor[], platform: Platform): Descriptor {
  const present = manifests.filter((d) => !isAttestation(d) && typeof d.digest === 'string' && isDigest(d.digest) && spool.lookup(blobPath(d.digest)));
  const match = present.find((d) => platformMatches(d.platform, platform)) ?? present.find((d) => !d.platform);
  if (match) return match;
  if (present.length === 1) return present[0]!;
  throw invalidArgument(`invalid archive: no manifest for ${formatPlatform(platform)} in the image index`);
}

function isAttestation(d: Descriptor): boolean {
  return d.annotations?.[ANNOTATION_REFERENCE_TYPE] !== undefined || d.platform?.os === 'unknown';
}

/**
 * Tags from index annotations. `io.containerd.image.name` is a full name; the OCI ref name is
 * meant to be a bare tag (useless without a repository) but some tools store a full name there.
 */
function namesFromAnnotations(a: Record<string, string> | undefined): string[] {
  const full = a?.[ANNOTATION_IMAGE_NAME];
  const refName = a?.[ANNOTATION_REF_NAME];
  for (const candidate of [full, refName !== undefined && /[/:]/.test(refName) ? refName : undefined]) {
    if (!candidate) continue;
    try {
      const ref = parseReference(candidate);
      if (ref.digest === undefined) return [normalizeReference(candidate)];
    } catch {
      // an unusable name leaves the image untagged, as the reference daemon does
    }
  }
  return [];
}

// ---- shared helpers ---------------------------------------------------------------------------------

function requireBlob(spool: Spool, desc: Descriptor): SpooledFile {
  if (!desc || typeof desc.digest !== 'string' || !isDigest(desc.digest)) {
    throw invalidArgument(`invalid archive: bad digest ${JSON.stringify(desc?.digest)}`);
  }
  const f = requireFile(spool, blobPath(desc.digest), desc.digest);
  if (typeof desc.size === 'number' && desc.size !== f.size) {
    throw invalidArgument(`invalid archive: size mismatch for blob ${desc.digest}: expected ${desc.size}, got ${f.size}`);
  }
  return f;
}

function requireFile(spool: Spool, name: string, expectedDigest: string | undefined): SpooledFile {
  const f = spool.lookup(name);
  if (!f) throw invalidArgument(`invalid archive: ${name} not found`);
  if (expectedDigest !== undefined && f.digest !== expectedDigest) {
    throw invalidArgument(`invalid archive: digest mismatch for ${name}: expected ${expectedDigest}, got ${f.digest}`);
  }
  return f;
}

function parseConfig(raw: Buffer, name: string): ImageConfigBlob {
  // The store keeps the config as text and derives the id from it, so it must round-trip.
  if (!Buffer.from(raw.toString('utf8'), 'utf8').equals(raw)) {
    throw invalidArgument(`invalid archive: image config ${name} is not valid UTF-8`);
  }
  const c = parseJson<Partial<ImageConfigBlob>>(raw, name);
  const diffIds = c?.rootfs?.diff_ids;
  if (!c || typeof c !== 'object' || !Array.isArray(diffIds) || !diffIds.every((d) => typeof d === 'string' && isDigest(d))) {
    throw invalidArgument(`invalid archive: image config ${name} has no valid rootfs.diff_ids`);
  }
  return c as ImageConfigBlob;
}

async function readJson<T>(spool: Spool, name: string): Promise<T> {
  return parseJson<T>((await spool.readBytes(name))!, name);
}

function readRaw(f: SpooledFile): Promise<Buffer> {
  return readFile(f.path);
}

function parseJson<T>(raw: Buffer, name: string): T {
  try {
    return JSON.parse(raw.toString('utf8')) as T;
  } catch (err) {
    throw invalidArgument(`invalid archive: ${name} is not valid JSON`, err);
  }
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string');
}

export function imageIdOf(rawConfig: Buffer | string): string {
  return `sha256:${createHash('sha256').update(rawConfig).digest('hex')}`;
}

/** Same image twice (several tags) becomes one; a tag claimed twice goes to the later image. */
function mergePlans(plans: PlannedImage[]): PlannedImage[] {
  const byId = new Map<string, PlannedImage>();
  for (const p of plans) {
    for (const other of byId.values()) other.repoTags = other.repoTags.filter((t) => !p.repoTags.includes(t));
    const prev = byId.get(p.id);
    if (prev) prev.repoTags = [...new Set([...prev.repoTags, ...p.repoTags])];
    else byId.set(p.id, { ...p, repoTags: [...new Set(p.repoTags)] });
  }
  return [...byId.values()];
}
