// What a finished download leaves in the store: the image record (written once the pull is
// verified; its layers are held until then), the repo digest it came by, and the tag, moved only
// after the image reconciler reports the image ready.
import type { PullResult } from '../../drivers/distribution/types.ts';
import { internal, isCode } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { formatReference, type Reference } from '../../lib/reference.ts';
import { type ImageSpec, Images } from '../../store/kinds/image.ts';
import type { Store } from '../../store/store.ts';

import type { ReconcilerStore } from '../store-like.ts';
import { References } from '../../store/kinds/reference.ts';

export interface PullStore extends ReconcilerStore, Pick<Store, 'create' | 'waitFor'> {}

/** The image a pull produced, as the registry client answers it. */
export type PulledImage = Omit<PullResult, 'release'>;

/** Writes or updates the image and its reference; true when something the user sees changed. */
export async function recordPulledImage(store: PullStore, pulled: PulledImage, ref: Reference, opts: { timeoutMs: number; signal: AbortSignal }): Promise<boolean> {
  const { timeoutMs, signal } = opts;
  let changed = false;
  let img = store.get(Images, pulled.id);
  if (img && img.spec.desired === 'removed') {
    await store.waitFor(Images, pulled.id, (r) => !r, { timeoutMs, signal });
    img = undefined;
  }
  if (!img) {
    const spec: ImageSpec = {
      id: pulled.id, rawConfig: pulled.rawConfig, diffIds: pulled.diffIds, chainId: pulled.chainId, size: pulled.size,
      repoDigests: [pulled.repoDigest], parent: '', loadedAt: rfc3339Nano(), desired: 'present',
      ...(pulled.manifests ? { pulled: pulled.manifests } : {}),
    };
    try {
      store.create(Images, pulled.id, spec, { observedGeneration: 0, phase: 'pending', error: '' });
      changed = true;
    } catch (err) {
      if (!isCode(err, 'AlreadyExists')) throw err;
    }
  }
  const current = store.get(Images, pulled.id);
  // What the last pull came by (an index pulled again may list new manifests).
  if (current && pulled.manifests && JSON.stringify(current.spec.pulled) !== JSON.stringify(pulled.manifests)) {
    store.updateSpec(Images, pulled.id, (s) => ({ ...s, pulled: pulled.manifests }));
  }
  if (current && !current.spec.repoDigests.includes(pulled.repoDigest)) {
    store.updateSpec(Images, pulled.id, (s) => ({ ...s, repoDigests: s.repoDigests.includes(pulled.repoDigest) ? s.repoDigests : [...s.repoDigests, pulled.repoDigest] }));
    if (ref.digest) changed = true;
  }
  const ready = await store.waitFor(Images, pulled.id, (r) => !r || r.status.phase === 'ready' || r.status.phase === 'failed', { timeoutMs, signal });
  if (!ready) throw internal(`image ${pulled.id} disappeared while it was being registered`);
  if (ready.status.phase === 'failed') throw internal(ready.status.error || `image ${pulled.id} could not be registered`);
  if (ref.tag !== undefined) {
    const name = formatReference({ domain: ref.domain, path: ref.path, tag: ref.tag });
    const existing = store.get(References, name);
    if (!existing) {
      try {
        store.create(References, name, { imageId: pulled.id }, {});
      } catch (err) {
        if (!isCode(err, 'AlreadyExists')) throw err;
        store.updateSpec(References, name, () => ({ imageId: pulled.id }));
      }
      changed = true;
    } else if (existing.spec.imageId !== pulled.id) {
      store.updateSpec(References, name, () => ({ imageId: pulled.id }));
      changed = true;
    }
  }
  return changed;
}
