// GET /images/{name}/history: the config's history entries newest first, each non-empty one
// sized by its layer; the top entries are named after the image and its parents (committed and
// built images) as far as those are still in the store, the rest are "<missing>".
import { internal } from '../../lib/errors.ts';
import { familiarName } from '../../lib/reference.ts';
import type { ApiStore } from '../containers/store.ts';
import { chainIdOf, layerSize, type LayerSizes } from './layers.ts';
import { findImage, imageIdOf, referencesOf, type ImageResource } from './resolve.ts';
import { imageConfig } from './views.ts';

export interface HistoryItem {
  Id: string;
  Created: number;
  CreatedBy: string;
  Tags: string[] | null;
  Size: number;
  Comment: string;
}

/** Go's zero time in Unix seconds: what the reference daemon reports for an entry without `created`. */
const ZERO_TIME_UNIX = -62135596800;

export function imageHistory(store: Pick<ApiStore, 'get' | 'list'>, img: ImageResource, layers?: LayerSizes): HistoryItem[] {
  const cfg = imageConfig(img);
  const diffIds = img.spec.diffIds;
  const out: HistoryItem[] = [];
  let chain: string | null = null;
  let layer = 0;
  for (const h of cfg.history ?? []) {
    let size = 0;
    if (!h.empty_layer) {
      if (layer >= diffIds.length) throw internal('too many non-empty layers in History section');
      chain = chainIdOf(chain, diffIds[layer]);
      size = layerSize(layers, chain);
      layer++;
    }
    const t = h.created ? Date.parse(h.created) : NaN;
    out.unshift({
      Id: '<missing>',
      Created: Number.isFinite(t) ? Math.floor(t / 1000) : ZERO_TIME_UNIX,
      CreatedBy: h.created_by ?? '',
      Tags: null,
      Size: size,
      Comment: h.comment ?? '',
    });
  }
  let cur: ImageResource | undefined = img;
  for (const item of out) {
    if (!cur) break;
    item.Id = imageIdOf(cur);
    const tags = referencesOf(store, cur.name).map(familiarName);
    item.Tags = tags.length ? tags : null;
    cur = cur.spec.parent ? findImage(store, cur.spec.parent) : undefined;
  }
  return out;
}
