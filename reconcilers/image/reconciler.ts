// Image reconciler: confirms a new image's layers are present (pending → ready) and, for an
// image marked removed, deletes the record and then the layers no other image shares.
import type { Logger } from 'pino';
import { isCode } from '../../lib/errors.ts';
import type { ContainerSpec, ImageSpec, ImageStatus } from '../../store/types.ts';
import { KIND } from '../../store/types.ts';
import type { ReconcilerStore } from '../store-like.ts';

export interface ImageLayersPort {
  has(chainId: string): boolean;
  chainIdOf(parentChainId: string | null, diffId: string): string;
  removeLayer(chainId: string): Promise<void>;
}

export class ImageReconciler {
  readonly name = 'image';
  readonly kind = KIND.image;
  private readonly store: ReconcilerStore;
  private readonly layers: ImageLayersPort;

  constructor(store: ReconcilerStore, layers: ImageLayersPort) {
    this.store = store;
    this.layers = layers;
  }

  async reconcile(id: string, ctx: { log: Logger }): Promise<void> {
    const r = this.store.get<ImageSpec, ImageStatus>(KIND.image, id);
    if (!r) return;
    if (r.spec.desired === 'removed') {
      // Layers first, the record last: DELETE answers when the record is gone, so a pull that
      // follows never finds a layer "already there" that is about to be removed.
      const chain = this.chainOf(r.spec.diffIds);
      await this.releaseLayers(chain, ctx.log);
      this.store.delete(KIND.image, id);
      return;
    }
    if (r.status.phase === 'pending' || r.status.observedGeneration < r.generation) {
      const missing = r.spec.chainId && !this.layers.has(r.spec.chainId);
      this.store.updateStatus<ImageSpec, ImageStatus>(KIND.image, id, (s) => ({
        ...s,
        phase: missing ? 'failed' : 'ready',
        error: missing ? `layer ${r.spec.chainId} is missing` : '',
        observedGeneration: r.generation,
      }));
    }
  }

  private chainOf(diffIds: string[]): string[] {
    const out: string[] = [];
    let parent: string | null = null;
    for (const d of diffIds) {
      parent = this.layers.chainIdOf(parent, d);
      out.push(parent);
    }
    return out;
  }

  /** Remove this image's layers, top first, unless another image (or a container's RW layer) still uses them. */
  private async releaseLayers(chain: string[], log: Logger): Promise<void> {
    const used = new Set<string>();
    for (const img of this.store.list<ImageSpec, ImageStatus>(KIND.image)) {
      if (img.spec.desired === 'removed') continue;
      for (const c of this.chainOf(img.spec.diffIds)) used.add(c);
    }
    const containerImages = new Set(this.store.list<ContainerSpec, unknown>(KIND.container).map((c) => c.spec.imageId));
    for (const imgId of containerImages) {
      const img = this.store.get<ImageSpec, ImageStatus>(KIND.image, imgId);
      if (img) for (const c of this.chainOf(img.spec.diffIds)) used.add(c);
    }
    for (const chainId of [...chain].reverse()) {
      if (used.has(chainId) || !this.layers.has(chainId)) continue;
      try {
        await this.layers.removeLayer(chainId);
      } catch (err) {
        if (isCode(err, 'Conflict')) break; // a child or RW layer still needs it and everything below
        log.warn({ err, chainId }, 'removing layer failed');
        throw err;
      }
    }
  }
}
