// What a finished download leaves in the store: the image record (written once the pull is
// verified; its layers are held until then), the repo digest it came by, and the tag, moved only
// after the image reconciler reports the image ready.
import type { PullResult } from '../../drivers/distribution/types.ts';
import { internal, isCode } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { formatReference, type Reference } from '../../lib/reference.ts';
import type { ImageSpec, ImageStatus, ReferenceSpec, ReferenceStatus, Resource } from '../../store/types.ts';
import { KIND } from '../../store/types.ts';
import type { ReconcilerStore } from '../store-like.ts';

export interface PullStore extends ReconcilerStore {
  create<S, T>(kind: string, name: string, spec: S, status: T): Resource<S, T>;
  waitFor<S, T>(kind: string, name: string, predicate: (r: Resource<S, T> | undefined) => boolean, opts: { timeoutMs?: number; signal?: AbortSignal }): Promise<Resource<S, T> | undefined>;
}

/** The image a pull produced, as the registry client answers it. */
export type PulledImage = Omit<PullResult, 'release'>;

/** Writes or updates the image and its reference; true when something the user sees changed. */
export async function recordPulledImage(store: PullStore, pulled: PulledImage, ref: Reference, opts: { timeoutMs: number; signal: AbortSignal }): Promise<boolean> {
  const { timeoutMs, signal } = opts;
  let changed = false;
  let img = store.get<ImageSpec, ImageStatus>(KIND.image, pulled.id);
  if (img && img.spec.desired === 'removed') {
    await store.waitFor<ImageSpec, ImageStatus>(KIND.image, pulled.id, (r) => !r, { timeoutMs, signal });
    img = undefined;
  }
  if (!img) {
    const spec: ImageSpec = {
      id: pulled.id, rawConfig: pulled.rawConfig, diffIds: pulled.diffIds, chainId: pulled.chainId, size: pulled.size,
      repoDigests: [pulled.repoDigest], parent: '', loadedAt: rfc3339Nano(), desired: 'present',
    };
    try {
      store.create<ImageSpec, ImageStatus>(KIND.image, pulled.id, spec, { observedGeneration: 0, phase: 'pending', error: '' });
      changed = true;
    } catch (err) {
      if (!isCode(err, 'AlreadyExists')) throw err;
    }
  }
  const current = store.get<ImageSpec, ImageStatus>(KIND.image, pulled.id);
  if (current && !current.spec.repoDigests.includes(pulled.repoDigest)) {
    store.updateSpec<ImageSpec, ImageStatus>(KIND.image, pulled.id, (s) => ({ ...s, repoDigests: s.repoDigests.includes(pulled.repoDigest) ? s.repoDigests : [...s.repoDigests, pulled.repoDigest] }));
    if (ref.digest) changed = true;
  }
  const ready = await store.waitFor<ImageSpec, ImageStatus>(KIND.image, pulled.id, (r) => !r || r.status.phase === 'ready' || r.status.phase === 'failed', { timeoutMs, signal });
  if (!ready) throw internal(`image ${pulled.id} disappeared while it was being registered`);
  if (ready.status.phase === 'failed') throw internal(ready.status.error || `image ${pulled.id} could not be registered`);
  if (ref.tag !== undefined) {
    const name = formatReference({ domain: ref.domain, path: ref.path, tag: ref.tag });
    const existing = store.get<ReferenceSpec, ReferenceStatus>(KIND.reference, name);
    if (!existing) {
      try {
        store.create<ReferenceSpec, ReferenceStatus>(KIND.reference, name, { imageId: pulled.id }, {});
      } catch (err) {
        if (!isCode(err, 'AlreadyExists')) throw err;
        store.updateSpec<ReferenceSpec, ReferenceStatus>(KIND.reference, name, () => ({ imageId: pulled.id }));
      }
      changed = true;
    } else if (existing.spec.imageId !== pulled.id) {
      store.updateSpec<ReferenceSpec, ReferenceStatus>(KIND.reference, name, () => ({ imageId: pulled.id }));
      changed = true;
    }
  }
  return changed;
}
