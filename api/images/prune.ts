// POST /images/prune: the reference daemon's selection (dangling only by default; all unused with
// dangling=false; label, label!, until), each image removed through the ordinary delete rules
// with conflicts skipped quietly, and the space of the removed layers reported.
import { conflict, EngineError } from '../../lib/errors.ts';
import { invalidFilter, matchKVList, parseFilters, untilFilter } from '../filters.ts';
import { deleteImage, type DeleteRecord, type DeleteResult } from './delete.ts';
import { childrenOf, layerSize, type LayerSizes } from './layers.ts';
import { isUsable, type ImageResource } from './resolve.ts';
import type { ImageStore } from './store.ts';
import { createdMs, imageConfig } from './views.ts';
import { References } from '../../store/kinds/reference.ts';
import { Images } from '../../store/kinds/image.ts';

const ACCEPTED = new Set(['dangling', 'label', 'label!', 'until']);

export interface PruneSelection {
  danglingOnly: boolean;
  untilMs?: number;
  labels: string[];
  notLabels: string[];
}

export interface PruneResult {
  records: DeleteRecord[];
  reclaimed: number;
  /** One entry per delete that did something, for the untag events. */
  deletes: DeleteResult[];
  removed: string[];
}

export function parseImagePruneFilters(raw: string, now = Date.now()): PruneSelection {
  const f = parseFilters(raw, ACCEPTED);
  let danglingOnly = true;
  const d = f.get('dangling');
  if (d !== undefined) {
    const isTrue = d.includes('1') || d.includes('true');
    const isFalse = d.includes('0') || d.includes('false');
    if (isTrue === isFalse) throw invalidFilter(d.length ? `dangling=${d.join(',')}` : 'dangling');
    danglingOnly = isTrue;
  }
  return {
    danglingOnly,
    untilMs: untilFilter(f, now),
    labels: f.get('label') ?? [],
    notLabels: f.get('label!') ?? [],
  };
}

function selected(img: ImageResource, sel: PruneSelection): boolean {
  const cfg = imageConfig(img);
  if (sel.untilMs !== undefined) {
    const created = createdMs(cfg);
    if (!cfg.created || created > sel.untilMs) return false;
  }
  if (cfg.config) {
    const labels = cfg.config.Labels ?? {};
    // As the reference's image prune: `label!` excludes only when all of its values hold.
    if (!matchKVList(sel.labels, labels)) return false;
    if (sel.notLabels.length && matchKVList(sel.notLabels, labels)) return false;
  }
  return true;
}

export function pruneImages(store: ImageStore, sel: PruneSelection, layers?: LayerSizes): PruneResult {
  const images = store.list(Images).filter(isUsable);
  const refsOf = (id: string) => store.list(References).filter((r) => r.spec.imageId === id).map((r) => r.name);
  const candidates = images.filter((img) => {
    const hasChildren = childrenOf(store, img.name).length > 0;
    if (sel.danglingOnly && hasChildren) return false;
    const referenced = refsOf(img.name).length > 0 || img.spec.repoDigests.length > 0;
    if (!referenced && hasChildren) return false;
    return selected(img, sel);
  });

  const out: PruneResult = { records: [], reclaimed: 0, deletes: [], removed: [] };
  const attempt = (ref: string) => {
    try {
      const r = deleteImage(store, ref, { force: false, prune: true, layers });
      out.records.push(...r.records);
      out.deletes.push(r);
      out.removed.push(...r.removed);
    } catch (err) {
      // Conflicts (in use, child images) and images a previous step already removed are skipped.
      if (!(err instanceof EngineError)) throw err;
    }
  };
  for (const img of candidates) {
    const tags = refsOf(img.name);
    const refs = [...tags, ...img.spec.repoDigests];
    if (refs.length === 0) {
      attempt(img.name.slice('sha256:'.length));
      continue;
    }
    // Dangling-only prunes keep anything tagged; digest-only references do not protect an image.
    if (sel.danglingOnly && tags.length > 0) continue;
    for (const ref of refs) attempt(ref);
  }
  for (const rec of out.records) {
    if ('Deleted' in rec) out.reclaimed += layerSize(layers, rec.Deleted);
  }
  return out;
}

/** One prune at a time, as the reference daemon allows. */
export function pruneGuard(): <T>(fn: () => Promise<T>) => Promise<T> {
  let running = false;
  return async (fn) => {
    if (running) throw conflict('a prune operation is already running');
    running = true;
    try {
      return await fn();
    } finally {
      running = false;
    }
  };
}
