// Image records as the image routes and the builder write them: an image added (and waited for
// until the reconciler has it ready), a tag pointed at an image.
import { internal, isCode, unavailable } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import type { LoadedImage } from '../../lib/ports/images.ts';
import { type ImageSpec, type ImageStatus, Images } from '../../store/kinds/image.ts';

import type { ImageResource } from './resolve.ts';
import type { ImageStore } from './store.ts';
import { References } from '../../store/kinds/reference.ts';
import { settle, waitRemoved } from '../write-and-wait.ts';

/** Create the image record if needed and wait until the reconciler has it ready. */
export async function ensureImageRecord(
  store: ImageStore, li: LoadedImage, opts: { signal: AbortSignal; parent?: string; timeoutMs: number },
): Promise<ImageResource> {
  const { signal, timeoutMs } = opts;
  const parent = opts.parent ?? '';
  let cur = store.get(Images, li.id);
  if (cur && cur.spec.desired === 'removed') {
    // The same content is being deleted right now: let that finish, then add it anew.
    await waitRemoved(store, Images, li.id, { timeoutMs, signal });
    cur = store.get(Images, li.id);
    if (cur) throw unavailable(`image ${li.id} is being removed`);
  }
  let gen: number;
  if (!cur) {
    const spec: ImageSpec = {
      id: li.id, rawConfig: li.rawConfig, diffIds: li.diffIds, chainId: li.chainId, size: li.size,
      repoDigests: [], parent, loadedAt: rfc3339Nano(), desired: 'present',
    };
    const status: ImageStatus = { observedGeneration: 0, phase: 'pending', error: '' };
    try {
      gen = store.create(Images, li.id, spec, status).generation;
    } catch (err) {
      if (!isCode(err, 'AlreadyExists')) throw err;
      gen = store.get(Images, li.id)?.generation ?? 0;
    }
  } else if (cur.status.phase === 'failed') {
    // Layers may be back now: ask the reconciler to verify it again (an unchanged spec would be no
    // write at all, and no new generation to verify).
    gen = store.updateSpec(Images, li.id, (s) => ({ ...s, retryGeneration: (s.retryGeneration ?? 0) + 1 })).generation;
  } else {
    gen = cur.generation;
  }
  const settled = (r: ImageResource | undefined) =>
    !r || r.spec.desired === 'removed' || r.status.phase === 'ready' || (r.status.phase === 'failed' && r.status.observedGeneration >= gen);
  await settle(store, Images, li.id, settled, { timeoutMs, signal });
  const r = store.get(Images, li.id);
  if (!r || r.spec.desired === 'removed') throw internal(`image ${li.id} was removed while it was being added`);
  if (r.status.phase === 'failed') throw internal(r.status.error || `image ${li.id} could not be added`);
  if (r.status.phase !== 'ready') throw unavailable(`timed out waiting for image ${li.id}`);
  return r;
}

/** Point a tag at an image; returns the image it pointed at before when that was another one. */
export function setImageTag(store: ImageStore, fullName: string, imageId: string): string | undefined {
  return store.transaction((tx) => {
    const prev = tx.get(References, fullName);
    if (prev) {
      if (prev.spec.imageId === imageId) return undefined;
      tx.updateSpec(References, fullName, () => ({ imageId }));
      return prev.spec.imageId;
    }
    tx.create(References, fullName, { imageId }, {});
    return undefined;
  });
}
