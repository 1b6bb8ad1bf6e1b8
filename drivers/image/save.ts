// `docker save`: the layout current reference daemons write, which old and new `docker load`
// and OCI tools all read: blobs/sha256/* (configs, uncompressed layers, OCI manifests),
// manifest.json, repositories, index.json and oci-layout.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import tarStream from 'tar-stream';
import { EngineError, internal } from '../../lib/errors.ts';
import { familiarName, familiarRepository, parseReference } from '../../lib/reference.ts';
import type { SaveImage, SavePlatform } from '../../lib/ports/images.ts';
import type { LayerStore } from '../storage/types.ts';
import {
  ANNOTATION_IMAGE_NAME, ANNOTATION_REF_NAME, MEDIA, OCI_LAYOUT, blobPath,
  type Descriptor, type DockerSaveEntry, type OciIndex, type OciManifest,
} from './oci.ts';
import { packEntry } from '../storage/pack-entry.ts';
import { configPlatform } from '../../lib/platform.ts';

export interface SaveDeps {
  layers: LayerStore;
  tmpDir: string;
  log: Logger;
}

// Fixed metadata keeps saving the same images byte-for-byte reproducible.
const MTIME = new Date(0);

export function saveImages(deps: SaveDeps, images: SaveImage[], signal: AbortSignal): Readable {
  const pack = tarStream.pack();
  const onAbort = () => pack.destroy(new EngineError('Canceled', 'context canceled'));
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) onAbort();
  writeArchive(deps, images, pack, signal)
    .then(() => pack.finalize())
    .catch((err: unknown) => {
      deps.log.warn({ err }, 'image save failed');
      pack.destroy(err instanceof Error ? err : new Error(String(err)));
    })
    .finally(() => signal.removeEventListener('abort', onAbort));
  // A Node stream for the API layer, pulling from the tar packer with backpressure.
  return Readable.from(pack as AsyncIterable<unknown> as AsyncIterable<Buffer>, { objectMode: false });
}

async function writeArchive(deps: SaveDeps, images: SaveImage[], pack: tarStream.Pack, signal: AbortSignal): Promise<void> {
  const spoolDir = await mkdtemp(join(deps.tmpDir, 'save-'));
  try {
    await addDir(pack, 'blobs/');
    await addDir(pack, 'blobs/sha256/');
    const written = new Map<string, number>(); // digest -> size of blobs already in the archive
    const manifestJson: DockerSaveEntry[] = [];
    const repositories: Record<string, Record<string, string>> = {};
    const index: OciIndex = { schemaVersion: 2, mediaType: MEDIA.ociIndex, manifests: [] };

    const addManifest = (img: SavePlatform) => writeImage(deps, pack, written, img, spoolDir, signal);
    for (const img of images) {
      let desc = await addManifest(img);
      if (img.platforms?.length) {
        // A multi-platform image saved whole: its tags name one index of every platform here.
        const entries = [{ ...desc, platform: configPlatform(img.rawConfig) }];
        for (const other of img.platforms) entries.push({ ...(await addManifest(other)), platform: configPlatform(other.rawConfig) });
        const indexBytes = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: MEDIA.ociIndex, manifests: entries }));
        const indexDigest = `sha256:${createHash('sha256').update(indexBytes).digest('hex')}`;
        await addBlobOnce(pack, written, indexDigest, indexBytes);
        desc = { mediaType: MEDIA.ociIndex, digest: indexDigest, size: indexBytes.length };
      }

      const tags = img.repoTags.filter((t) => parseReference(t).tag !== undefined);
      manifestJson.push({
        Config: blobPath(img.id),
        RepoTags: tags.length ? tags.map(familiarName) : null,
        Layers: img.diffIds.map(blobPath),
      });
      if (tags.length === 0) index.manifests.push(desc);
      for (const t of tags) {
        const ref = parseReference(t);
        (repositories[familiarRepository(t)] ??= {})[ref.tag!] = img.id.replace(/^sha256:/, '');
        index.manifests.push({ ...desc, annotations: { [ANNOTATION_IMAGE_NAME]: t, [ANNOTATION_REF_NAME]: ref.tag! } });
      }
    }

    await addFile(pack, 'index.json', Buffer.from(JSON.stringify(index)));
    await addFile(pack, 'manifest.json', Buffer.from(JSON.stringify(manifestJson)));
    await addFile(pack, 'oci-layout', Buffer.from(JSON.stringify(OCI_LAYOUT)));
    if (Object.keys(repositories).length > 0) await addFile(pack, 'repositories', Buffer.from(JSON.stringify(repositories)));
  } finally {
    await rm(spoolDir, { recursive: true, force: true });
  }
}

/** Writes an image's layers, config and OCI manifest (each blob once); its manifest's descriptor. */
async function writeImage(
  deps: SaveDeps, pack: tarStream.Pack, written: Map<string, number>, img: SavePlatform, spoolDir: string, signal: AbortSignal,
): Promise<Descriptor> {
  const layerDescs: Descriptor[] = [];
  let parent: string | null = null;
  for (const diffId of img.diffIds) {
    signal.throwIfAborted();
    const chainId = deps.layers.chainIdOf(parent, diffId);
    parent = chainId;
    if (!written.has(diffId)) written.set(diffId, await addLayer(deps, pack, chainId, diffId, spoolDir, signal));
    layerDescs.push({ mediaType: MEDIA.ociLayer, digest: diffId, size: written.get(diffId)! });
  }
  const config = Buffer.from(img.rawConfig, 'utf8');
  await addBlobOnce(pack, written, img.id, config);
  const manifest: OciManifest & { schemaVersion: number; mediaType: string } = {
    schemaVersion: 2,
    mediaType: MEDIA.ociManifest,
    config: { mediaType: MEDIA.ociConfig, digest: img.id, size: config.length },
    layers: layerDescs,
  };
  const manifestBytes = Buffer.from(JSON.stringify(manifest));
  const manifestDigest = `sha256:${createHash('sha256').update(manifestBytes).digest('hex')}`;
  await addBlobOnce(pack, written, manifestDigest, manifestBytes);
  return { mediaType: MEDIA.ociManifest, digest: manifestDigest, size: manifestBytes.length };
}

/**
 * A tar header needs the entry size up front and the layer store only streams, so each layer
 * goes through a temp file first; its digest is checked against the diff id on the way.
 */
async function addLayer(
  deps: SaveDeps, pack: tarStream.Pack, chainId: string, diffId: string, spoolDir: string, signal: AbortSignal,
): Promise<number> {
  const file = join(spoolDir, diffId.replace(/^sha256:/, ''));
  const hash = createHash('sha256');
  let size = 0;
  const fh = await open(file, 'w', 0o600);
  try {
    for await (const c of deps.layers.layerTar(chainId)) {
      signal.throwIfAborted();
      const chunk = c as Buffer;
      hash.update(chunk);
      size += chunk.length;
      await fh.write(chunk);
    }
  } finally {
    await fh.close();
  }
  const got = `sha256:${hash.digest('hex')}`;
  if (got !== diffId) throw internal(`layer ${chainId} exported as ${got}, expected ${diffId}`);
  try {
    await packEntry(pack, { name: blobPath(diffId), size, mode: 0o644, mtime: MTIME }, createReadStream(file), signal);
  } finally {
    await rm(file, { force: true });
  }
  return size;
}



async function addBlobOnce(pack: tarStream.Pack, written: Map<string, number>, digest: string, bytes: Buffer): Promise<void> {
  if (written.has(digest)) return;
  written.set(digest, bytes.length);
  await addFile(pack, blobPath(digest), bytes);
}

function addFile(pack: tarStream.Pack, name: string, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry({ name, size: bytes.length, mode: 0o644, mtime: MTIME }, bytes, (err) => (err ? reject(err) : resolve()));
  });
}

function addDir(pack: tarStream.Pack, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry({ name, type: 'directory', mode: 0o755, mtime: MTIME }, (err) => (err ? reject(err) : resolve()));
  });
}
