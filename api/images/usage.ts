// The image part of GET /system/df: every image with its container count and shared size, and
// the bytes of all distinct layers the images use.

import type { ApiStore } from '../containers/store.ts';
import { layerRefCounts, layerSize, sharedSize, type LayerSizes } from './layers.ts';
import { isUsable, shownImageId } from './resolve.ts';
import { createdMs, imageConfig, repoDigestsOf, repoTagsOf, summaryView } from './views.ts';
import { Images } from '../../store/kinds/image.ts';
import { Containers } from '../../store/kinds/container.ts';

export interface ImageUsage {
  LayersSize: number;
  Images: Record<string, unknown>[];
}

export function imageDiskUsage(store: Pick<ApiStore, 'get' | 'list'>, o: { apiVersion: number; layers?: LayerSizes }): ImageUsage {
  const images = store.list(Images).filter(isUsable);
  const containers = store.list(Containers);
  const refs = layerRefCounts(images);
  // Without the layer store's sizes, fall back to the images' own totals.
  const layersSize = o.layers?.get
    ? [...refs.keys()].reduce((n, c) => n + layerSize(o.layers, c), 0)
    : images.reduce((n, i) => n + i.spec.size, 0);
  const views = images
    .map((img) => ({
      created: createdMs(imageConfig(img)),
      view: summaryView(img, {
        apiVersion: o.apiVersion,
        repoTags: repoTagsOf(store, img.name),
        repoDigests: repoDigestsOf(img),
        containers: containers.filter((c) => c.spec.imageId === img.name).length,
        sharedSize: sharedSize(img, refs, o.layers),
        parentId: shownImageId(store, img.spec.parent),
      }),
    }))
    .sort((a, b) => b.created - a.created)
    .map((e) => e.view);
  return { LayersSize: layersSize, Images: views };
}
