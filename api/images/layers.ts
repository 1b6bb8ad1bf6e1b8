// Layer arithmetic the image API needs for sizes (history, shared size, disk usage, reclaimed
// space): chain ids are computed here from the diff ids as the OCI image spec defines them; the
// sizes come from the layer store through the narrow `LayerSizes` port cmd fills.
import { createHash } from 'node:crypto';
import { Containers } from '../../store/kinds/container.ts';

import type { ApiStore } from '../containers/store.ts';
import { isUsable, type ImageResource } from './resolve.ts';
import { Images } from '../../store/kinds/image.ts';

/** Read-only view of the layer store: a layer's unpacked size, undefined when it is not there. */
export interface LayerSizes {
  get?(chainId: string): { size: number } | undefined;
}

export function chainIdOf(parent: string | null, diffId: string): string {
  return parent === null ? diffId : `sha256:${createHash('sha256').update(`${parent} ${diffId}`).digest('hex')}`;
}

/** Chain ids of an image's layers, bottom first. */
export function chainOf(diffIds: readonly string[]): string[] {
  const out: string[] = [];
  let parent: string | null = null;
  for (const d of diffIds) {
    parent = chainIdOf(parent, d);
    out.push(parent);
  }
  return out;
}

/** How many usable images reference each layer (the reference daemon's layer refcount view). */
export function layerRefCounts(images: readonly ImageResource[]): Map<string, number> {
  const refs = new Map<string, number>();
  for (const img of images) for (const c of new Set(chainOf(img.spec.diffIds))) refs.set(c, (refs.get(c) ?? 0) + 1);
  return refs;
}

/** Unpacked size of one layer; 0 when the layer store is not wired or the layer is gone. */
export function layerSize(layers: LayerSizes | undefined, chainId: string): number {
  return layers?.get?.(chainId)?.size ?? 0;
}

/** Bytes of an image's layers that at least one other image shares. */
export function sharedSize(img: ImageResource, refs: Map<string, number>, layers: LayerSizes | undefined): number {
  let n = 0;
  for (const c of new Set(chainOf(img.spec.diffIds))) if ((refs.get(c) ?? 0) > 1) n += layerSize(layers, c);
  return n;
}

/**
 * The layers that go with an image just marked removed, top first: the ones no image still
 * present and no container's image needs (the image reconciler releases exactly these).
 */
export function releasedLayers(store: Pick<ApiStore, 'get' | 'list'>, removed: ImageResource, layers: LayerSizes | undefined): string[] {
  if (!layers?.get) return [];
  const used = new Set<string>();
  for (const img of store.list(Images)) {
    if (img.name === removed.name || img.spec.desired === 'removed') continue;
    for (const c of chainOf(img.spec.diffIds)) used.add(c);
  }
  for (const c of store.list(Containers)) {
    const img = store.get(Images, c.spec.imageId);
    if (img) for (const ch of chainOf(img.spec.diffIds)) used.add(ch);
  }
  const out: string[] = [];
  for (const c of chainOf(removed.spec.diffIds).reverse()) {
    if (used.has(c)) break;
    if (layers.get(c)) out.push(c);
  }
  return out;
}

/** Usable images whose parent is `id`. */
export function childrenOf(store: Pick<ApiStore, 'list'>, id: string): ImageResource[] {
  return store.list(Images).filter((i) => isUsable(i) && i.spec.parent === id);
}
