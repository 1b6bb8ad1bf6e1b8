// GET /images/json: newest first, from the store's memory.
import { familiarName, familiarRepository, parseReference, repositoryName } from '../../lib/reference.ts';
import { parseTimestampMs } from '../../lib/timestamp.ts';

import type { ApiStore } from '../containers/store.ts';
import { invalidFilter, matchAnyKV, matchKVList, parseFilters } from '../filters.ts';
import { layerRefCounts, sharedSize, type LayerSizes } from './layers.ts';
import { isUsable, resolveImage, shownImageId, type ImageResource } from './resolve.ts';
import { groupImages, manifestSummaries } from './platforms.ts';
import { createdMs, imageConfig, repoDigestsOf, summaryView } from './views.ts';
import { References } from '../../store/kinds/reference.ts';
import { Images } from '../../store/kinds/image.ts';
import { Containers } from '../../store/kinds/container.ts';

const KEYS = new Set(['dangling', 'label', 'label!', 'before', 'since', 'reference', 'until']);

export interface ImageListOptions {
  all: boolean;
  filters: string;
  digests: boolean;
  sharedSize: boolean;
  /** manifests=1: each image's Manifests (API 1.47; only where images are their targets). */
  manifests?: boolean;
  apiVersion: number;
  now?: () => number;
  /** Layer sizes for SharedSize. */
  layers?: LayerSizes;
}

export function listImages(store: Pick<ApiStore, 'get' | 'list'>, o: ImageListOptions): Record<string, unknown>[] {
  const f = parseFilters(o.filters, KEYS);

  let dangling: boolean | undefined;
  for (const v of f.get('dangling') ?? []) {
    const b = v.toLowerCase();
    if (b === 'true' || b === '1') dangling = true;
    else if (b === 'false' || b === '0') dangling = dangling ?? false;
    else throw invalidFilter(`dangling=${v}`);
  }
  const beforeMs = minCreated(store, f.get('before'));
  const sinceMs = maxCreated(store, f.get('since'));
  const untilMs = f.get('until')?.length ? Math.min(...f.get('until')!.map((u) => parseTimestampMs(u, o.now?.() ?? Date.now()))) : undefined;
  const labels = f.get('label') ?? [];
  const notLabels = f.get('label!') ?? [];
  const patterns = (f.get('reference') ?? []).map(globToRegExp);

  const images = store.list(Images).filter(isUsable);
  const refs = store.list(References);
  const tagsById = new Map<string, string[]>();
  for (const r of refs) {
    const list = tagsById.get(r.spec.imageId) ?? [];
    list.push(r.name);
    tagsById.set(r.spec.imageId, list);
  }
  const parents = new Set(images.map((i) => i.spec.parent).filter(Boolean));
  const containers = o.sharedSize ? store.list(Containers) : [];
  const layerRefs = o.sharedSize ? layerRefCounts(images) : new Map<string, number>();

  const out: Array<{ created: number; view: Record<string, unknown> }> = [];
  // With the supervisor's snapshotter, the records of one multi-platform image are one row (./platforms.ts).
  for (const { primary: img, members } of groupImages(images, (i) => tagsById.has(i.name))) {
    const cfg = imageConfig(img);
    const created = createdMs(cfg);
    const tags = members.flatMap((m) => tagsById.get(m.name) ?? []).sort();
    const repoDigests = members.length === 1 ? img.spec.repoDigests : [...new Set(members.flatMap((m) => m.spec.repoDigests))];
    const hasRefs = tags.length > 0 || repoDigests.length > 0;
    if (dangling === true && hasRefs) continue;
    if (dangling === false && !hasRefs) continue;
    // Intermediate images (parents of others, untagged) only with all=1, as the reference does.
    if (!o.all && dangling === undefined && !hasRefs && parents.has(img.name)) continue;
    if (beforeMs !== undefined && created >= beforeMs) continue;
    if (sinceMs !== undefined && created <= sinceMs) continue;
    if (untilMs !== undefined && created >= untilMs) continue;
    const imgLabels = cfg.config?.Labels ?? {};
    if (!matchKVList(labels, imgLabels) || matchAnyKV(notLabels, imgLabels)) continue;

    let shownTags = tags;
    let shownDigests = repoDigests;
    if (patterns.length) {
      shownTags = tags.filter((t) => patterns.some((p) => referenceMatches(p, t)));
      shownDigests = shownDigests.filter((d) => patterns.some((p) => referenceMatches(p, d)));
      if (shownTags.length === 0 && shownDigests.length === 0) continue;
    }
    const view = summaryView(img, {
      apiVersion: o.apiVersion,
      repoTags: shownTags.map(familiarName),
      repoDigests: shownDigests === img.spec.repoDigests ? repoDigestsOf(img) : shownDigests.map(familiarName),
      containers: o.sharedSize ? containers.filter((c) => members.some((m) => m.name === c.spec.imageId)).length : -1,
      sharedSize: o.sharedSize ? sharedSize(img, layerRefs, o.layers) : -1,
      parentId: shownImageId(store, img.spec.parent),
    });
    if (members.length > 1) view.Size = members.reduce((n, m) => n + m.spec.size, 0);
    // API 1.47: the manifests of each image, where images are their targets (the feature).
    if (o.manifests && o.apiVersion >= 1.47 && img.status.target) view.Manifests = manifestSummaries(store, members);
    out.push({ created, view });
  }
  out.sort((a, b) => b.created - a.created);
  return out.map((e) => e.view);
}

function createdOf(store: Pick<ApiStore, 'get' | 'list'>, ref: string): number {
  return createdMs(imageConfig(resolveImage(store, ref)));
}

function minCreated(store: Pick<ApiStore, 'get' | 'list'>, refs: string[] | undefined): number | undefined {
  if (!refs?.length) return undefined;
  return Math.min(...refs.map((r) => createdOf(store, r)));
}

function maxCreated(store: Pick<ApiStore, 'get' | 'list'>, refs: string[] | undefined): number | undefined {
  if (!refs?.length) return undefined;
  return Math.max(...refs.map((r) => createdOf(store, r)));
}

/** Go's path.Match syntax (`*`, `?`, `[...]`, `\`) as an anchored RegExp. */
export function globToRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '\\' && i + 1 < pattern.length) re += escapeRe(pattern[++i]);
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) throw invalidFilter(`reference=${pattern}`);
      let cls = pattern.slice(i + 1, end);
      if (cls.startsWith('^')) cls = `^${cls.slice(1)}`;
      re += `[${cls.replace(/\\/g, '\\\\')}]`;
      i = end;
    } else re += escapeRe(c);
  }
  return new RegExp(`^${re}$`);
}

function escapeRe(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** A reference filter matches the familiar or full form, with or without the tag. */
function referenceMatches(pattern: RegExp, fullRef: string): boolean {
  let forms: string[];
  try {
    const p = parseReference(fullRef);
    forms = [familiarName(fullRef), familiarRepository(fullRef), fullRef, repositoryName(p)];
  } catch {
    forms = [fullRef];
  }
  return forms.some((s) => pattern.test(s));
}

export type { ImageResource };
