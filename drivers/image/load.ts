// `docker load`: spool the archive, plan and check every image, then unpack layers bottom-up.
// Nothing is recorded here (the caller writes images and tags to the store), so a failure leaves
// at most some fully applied layers behind, which are harmless and garbage-collectable.
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { shortId } from '../../lib/ids.ts';
import type { LoadedImage } from '../../lib/ports/images.ts';
import type { LayerStore } from '../storage/types.ts';
import { decompressed } from './decompress.ts';
import { planImages, type PlannedImage } from './load-plan.ts';
import type { Platform } from '../../lib/platform.ts';
import { Spool } from './spool.ts';

export interface LoadDeps {
  layers: LayerStore;
  tmpDir: string;
  log: Logger;
  platform: Platform;
}

export async function loadArchive(
  deps: LoadDeps, body: Readable, signal: AbortSignal, onProgress?: (msg: string) => void, platform?: Platform,
): Promise<LoadedImage[]> {
  const spool = await Spool.fromTar(await decompressed(body), deps.tmpDir, signal);
  try {
    const plans = await planImages(spool, platform ?? deps.platform, !!platform);
    const out: LoadedImage[] = [];
    for (const plan of plans) {
      signal.throwIfAborted();
      out.push(await applyImage(deps, plan, signal, onProgress));
    }
    deps.log.debug({ images: out.map((i) => i.id) }, 'archive loaded');
    return out;
  } finally {
    await spool.remove();
  }
}

async function applyImage(
  deps: LoadDeps, plan: PlannedImage, signal: AbortSignal, onProgress?: (msg: string) => void,
): Promise<LoadedImage> {
  const diffIds = plan.config.rootfs.diff_ids;
  let parent: string | null = null;
  let size = 0;
  for (const [i, file] of plan.layers.entries()) {
    const diffId = diffIds[i]!;
    const chainId = deps.layers.chainIdOf(parent, diffId);
    let info = deps.layers.get(chainId);
    if (!info) {
      onProgress?.(`Loading layer ${shortId(diffId)}`);
      info = await deps.layers.applyLayer(parent, createReadStream(file.path), { expectedDiffId: diffId, signal });
    }
    parent = info.chainId;
    size += info.size;
  }
  return {
    id: plan.id,
    rawConfig: plan.rawConfig.toString('utf8'),
    diffIds: [...diffIds],
    chainId: parent,
    size,
    repoTags: plan.repoTags,
  };
}
