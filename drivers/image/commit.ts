// `docker commit`: the container's read-write layer, as a tar of its own changes, becomes a new
// layer on top of the container's image, and the image config is the parent's with the container's
// (or the request's) config, the `--change` instructions applied, and one more history entry —
// shaped like the config the reference daemon writes for a commit.
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { CommitRequest, ImageCommitPort, LoadedImage } from '../../lib/ports/images.ts';
import { notFound } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import type { ImageConfigBlob } from '../../lib/image-config.ts';
import { readTar, type TarHeader } from '../storage/tar-reader.ts';
import { encodeHeader, endOfArchive, padding, type TarWriteHeader } from '../storage/tar-writer.ts';
import type { LayerInfo, LayerStore } from '../storage/types.ts';
import { applyChanges } from './changes.ts';
import { imageIdOf } from './load-plan.ts';
import type { Platform } from '../../lib/platform.ts';
import { MOUNT_POINTS } from '../storage/mount-points.ts';

export interface CommitDeps {
  layers: Pick<LayerStore, 'applyLayer' | 'hasRW' | 'tarRW' | 'get'>;
  log: Logger;
  platform: Platform;
}

type Config = Record<string, unknown>;

export function createImageCommitter(deps: CommitDeps): ImageCommitPort {
  return { commit: (req, signal) => commitContainer(deps, req, signal) };
}

export async function commitContainer(deps: CommitDeps, req: CommitRequest, signal: AbortSignal): Promise<LoadedImage> {
  // Instructions are checked before any layer work, so a typo costs nothing.
  const config = mergeConfig(applyChanges(req.config ?? req.containerConfig, req.changes), req.containerConfig);
  const parent = parseParent(req.parent?.rawConfig);
  const layer = await commitLayer(deps.layers, req.containerId, req.parent?.chainId ?? null, signal);
  const empty = layer === null;
  const diffIds = layer ? [...(req.parent?.diffIds ?? []), layer.diffId] : [...(req.parent?.diffIds ?? [])];
  const chainId = layer ? layer.chainId : (req.parent?.chainId ?? null);
  const size = (req.parent?.size ?? 0) + (layer?.size ?? 0);

  const created = rfc3339Nano();
  const cmd = Array.isArray(req.containerConfig.Cmd) ? (req.containerConfig.Cmd as string[]) : [];
  const history = {
    created,
    ...(req.author ? { author: req.author } : {}),
    ...(cmd.length ? { created_by: cmd.join(' ') } : {}),
    ...(req.comment ? { comment: req.comment } : {}),
    ...(empty ? { empty_layer: true } : {}),
  };
  const image: Record<string, unknown> = {
    architecture: parent.architecture || deps.platform.architecture,
    ...(req.author ? { author: req.author } : {}),
    ...(req.comment ? { comment: req.comment } : {}),
    config,
    container: req.containerId,
    container_config: req.containerConfig,
    created,
    history: [...(parent.history ?? []), history],
    os: deps.platform.os,
    ...(parent['os.features'] ? { 'os.features': parent['os.features'] } : {}),
    ...(parent['os.version'] ? { 'os.version': parent['os.version'] } : {}),
    rootfs: { type: 'layers', diff_ids: diffIds },
    ...(parent.variant ? { variant: parent.variant } : {}),
  };
  const rawConfig = JSON.stringify(image);
  const id = imageIdOf(rawConfig);
  deps.log.debug({ container: req.containerId, image: id, emptyLayer: empty }, 'container committed');
  return { id, rawConfig, diffIds, chainId, size, repoTags: [] };
}

/**
 * A container's own changes as a layer on top of `parentChain` (mount-point placeholders left
 * out); null when it changed nothing, so no layer is added.
 */
export async function commitLayer(
  layers: CommitDeps['layers'], containerId: string, parentChain: string | null, signal: AbortSignal,
): Promise<LayerInfo | null> {
  if (!layers.tarRW || !layers.hasRW(containerId)) throw notFound(`RW layer for ${containerId} does not exist`);
  const tar = Readable.from(withoutMountPoints(layers.tarRW(containerId)), { objectMode: false });
  const { empty, stream } = await emptyTar(tar);
  if (empty) return null;
  return layers.applyLayer(parentChain, stream, { signal });
}

function parseParent(raw: string | undefined): ImageConfigBlob {
  if (!raw) return { rootfs: { type: 'layers', diff_ids: [] } };
  try {
    return JSON.parse(raw) as ImageConfigBlob;
  } catch {
    return { rootfs: { type: 'layers', diff_ids: [] } };
  }
}

/**
 * The reference daemon's merge of a commit config with the container's: whatever the new config
 * leaves unset comes from the container (env and labels are merged key by key).
 */
export function mergeConfig(user: Config, base: Config): Config {
  const out: Config = structuredClone(user);
  if (!out.User) out.User = base.User ?? '';
  const ports = out.ExposedPorts as Record<string, object> | null | undefined;
  const basePorts = base.ExposedPorts as Record<string, object> | null | undefined;
  if (!ports || Object.keys(ports).length === 0) out.ExposedPorts = basePorts ?? undefined;
  else if (basePorts) for (const p of Object.keys(basePorts)) ports[p] ??= {};
  if (out.ExposedPorts === undefined) delete out.ExposedPorts;

  const env = Array.isArray(out.Env) ? [...(out.Env as string[])] : [];
  const baseEnv = Array.isArray(base.Env) ? (base.Env as string[]) : [];
  if (env.length === 0) out.Env = base.Env ?? null;
  else {
    const keys = new Set(env.map((e) => e.split('=')[0]));
    for (const e of baseEnv) if (!keys.has(e.split('=')[0])) env.push(e);
    out.Env = env;
  }

  const labels = { ...((out.Labels as Record<string, string> | null | undefined) ?? {}) };
  for (const [k, v] of Object.entries((base.Labels as Record<string, string> | null | undefined) ?? {})) if (!(k in labels)) labels[k] = v;
  out.Labels = labels;

  const entrypoint = out.Entrypoint as string[] | null | undefined;
  if (!entrypoint || entrypoint.length === 0) {
    const cmd = out.Cmd as string[] | null | undefined;
    if (!cmd || cmd.length === 0) out.Cmd = base.Cmd ?? null;
    if (entrypoint === null || entrypoint === undefined) out.Entrypoint = base.Entrypoint ?? null;
  }
  if (base.Healthcheck && !out.Healthcheck) out.Healthcheck = base.Healthcheck;
  if (!out.WorkingDir) out.WorkingDir = base.WorkingDir ?? '';
  const vols = out.Volumes as Record<string, object> | null | undefined;
  if (!vols || Object.keys(vols).length === 0) out.Volumes = base.Volumes ?? null;
  else Object.assign(vols, (base.Volumes as Record<string, object> | null | undefined) ?? {});
  if (!out.StopSignal && base.StopSignal) out.StopSignal = base.StopSignal;
  return out;
}


function writeHeader(h: TarHeader): TarWriteHeader | null {
  if (h.type === 'other') return null;
  return {
    name: h.name, type: h.type, mode: h.mode, uid: h.uid, gid: h.gid, size: h.size, mtime: h.mtime,
    linkname: h.linkname, devmajor: h.devmajor, devminor: h.devminor, xattrs: h.xattrs,
  };
}

/**
 * The diff tar without the mount-point placeholders, and without `etc/` itself when it was copied
 * up only to hold them.
 */
export async function* withoutMountPoints(tar: AsyncIterable<Buffer> & { destroy?(): void }): AsyncGenerator<Buffer> {
  let finished = false;
  try {
    yield* keptEntries(tar);
    finished = true;
  } finally {
    // Left before the end (its consumer failed: a disk full): the reader (tar-reader.ts) does not
    // close its source, so the layer's walk is stopped here and lets go of the file it holds open.
    if (!finished) tar.destroy?.();
  }
}

async function* keptEntries(tar: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let heldEtc: Buffer | null = null;
  for await (const e of readTar(tar)) {
    const name = e.header.name.replace(/^(\.\/|\/)+/, '').replace(/\/+$/, '');
    // An empty file at a mount point is always the placeholder (drivers/storage/mount-points.ts).
    if (MOUNT_POINTS.has(name) && e.header.type === 'file' && e.header.size === 0) continue;
    const h = writeHeader(e.header);
    if (!h) continue;
    if (name === 'etc' && h.type === 'dir') {
      heldEtc = encodeHeader(h);
      continue;
    }
    if (heldEtc) {
      if (name.startsWith('etc/')) yield heldEtc;
      heldEtc = null;
    }
    yield encodeHeader(h);
    if (h.size > 0) {
      for await (const c of e.body) yield c;
      yield padding(h.size);
    }
  }
  yield endOfArchive();
}

/**
 * Whether a tar holds no entries at all (only the end-of-archive blocks). The bytes read to find
 * out are put back in front of the returned stream.
 */
export async function emptyTar(tar: Readable): Promise<{ empty: boolean; stream: Readable }> {
  const head: Buffer[] = [];
  let length = 0;
  const it = tar[Symbol.asyncIterator]();
  let done = false;
  // A tar entry header is 512 bytes; anything that is not all zeros in the first block is an entry.
  while (length < 512) {
    const r = await it.next();
    if (r.done) {
      done = true;
      break;
    }
    const chunk = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value as Uint8Array);
    head.push(chunk);
    length += chunk.length;
  }
  const first = Buffer.concat(head);
  const empty = first.subarray(0, 512).every((b) => b === 0);
  if (empty) {
    // Drain the rest (the second zero block) so the producer finishes and releases what it holds.
    if (!done) for (let r = await it.next(); !r.done; r = await it.next()) { /* discard */ }
    return { empty: true, stream: Readable.from([]) };
  }
  async function* rest(): AsyncGenerator<Buffer> {
    try {
      yield first;
      if (done) return;
      for (let r = await it.next(); !r.done; r = await it.next()) yield Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value as Uint8Array);
      done = true;
    } finally {
      // Left before the end (its consumer failed: a disk full): the producer lets go of the files it holds open.
      if (!done) tar.destroy();
    }
  }
  return { empty: false, stream: Readable.from(rest(), { objectMode: false }) };
}
