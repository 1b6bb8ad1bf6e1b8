// DELETE /images/{name}: the reference daemon's untag-then-delete rules, planned from the store and
// applied in one transaction (references removed, image marked removed). The image reconciler
// then releases the layers and deletes the record.
import { conflict } from '../../lib/errors.ts';
import { shortId } from '../../lib/ids.ts';
import { familiarName, normalizeName, parseReference, repositoryName } from '../../lib/reference.ts';
import { Containers, type ContainerResource as CR } from '../../store/kinds/container.ts';

import { childrenOf, releasedLayers, type LayerSizes } from './layers.ts';
import { imageIdOf, isUsable, referencesOf, resolveImage, type ImageResource } from './resolve.ts';
import type { ImageStore } from './store.ts';
import { siblingsOf } from './platforms.ts';
import { References } from '../../store/kinds/reference.ts';
import { Images } from '../../store/kinds/image.ts';

export type DeleteRecord = { Untagged: string } | { Deleted: string };

export interface DeletePlan {
  records: DeleteRecord[];
  image: ImageResource;
  /** Full tag reference names to delete. */
  untag: string[];
  /** Digest references (as stored in spec.repoDigests) to drop. */
  dropDigests: string[];
  /** Whether the image itself goes. */
  remove: boolean;
}


const isRunning = (c: CR) => ['running', 'paused', 'restarting'].includes(c.status?.phase);

function repoOf(ref: string): string {
  try {
    return repositoryName(parseReference(ref));
  } catch {
    return ref;
  }
}

/** At most one tag and every reference (tags and digests) in one repository. */
function isSingleReference(tags: string[], digests: string[]): boolean {
  if (tags.length > 1) return false;
  const repos = new Set([...tags, ...digests].map(repoOf));
  return repos.size <= 1;
}

/** Every reference (tags and digests) in one repository: deleting by id then takes them all. */
function isSingleRepository(tags: string[], digests: string[]): boolean {
  return new Set([...tags, ...digests].map(repoOf)).size <= 1;
}

function isIdPrefix(id: string, ref: string): boolean {
  return id.startsWith(ref) || id.slice(7).startsWith(ref);
}

function conflictError(imageId: string, hard: boolean, message: string): Error {
  return conflict(`conflict: unable to delete ${shortId(imageId)} (${hard ? 'cannot be forced' : 'must be forced'}) - ${message}`);
}

export function planImageDelete(store: ImageStore, ref: string, force: boolean): DeletePlan {
  const image = resolveImage(store, ref);
  const id = image.name;
  /** The Id clients know it by (the target digest with the supervisor's snapshotter). */
  const shown = imageIdOf(image);
  const containers = store.list(Containers).filter((c) => c.spec.imageId === id);
  const children = store.list(Images).filter((i) => isUsable(i) && i.spec.parent === id);
  let tags = referencesOf(store, id);
  let digests = [...image.spec.repoDigests];
  const plan: DeletePlan = { records: [], image, untag: [], dropDigests: [], remove: false };

  /** Conflicts in the reference's order: children and running containers are hard, the rest soft. */
  const check = (opts: { soft: boolean; references: boolean }): { err: Error; used: boolean } | undefined => {
    if (children.length) return { err: conflictError(shown, true, 'image has dependent child images'), used: false };
    const running = containers.find(isRunning);
    if (running) return { err: conflictError(shown, true, `image is being used by running container ${shortId(running.name)}`), used: true };
    if (!opts.soft) return undefined;
    if (opts.references && tags.length + digests.length > 0) {
      return { err: conflictError(shown, false, 'image is referenced in one or more repositories'), used: false };
    }
    const stopped = containers.find((c) => !isRunning(c));
    if (stopped) return { err: conflictError(shown, false, `image is being used by stopped container ${shortId(stopped.name)}`), used: true };
    return undefined;
  };

  let quiet = false;
  if (!isIdPrefix(shown, ref) && !isIdPrefix(id, ref)) {
    // A reference was named: untag it first; the image goes only with its last reference.
    const parsed = parseReference(ref);
    const name = parsed.digest ? `${repositoryName(parsed)}@${parsed.digest}` : normalizeName(ref);
    if (!force && isSingleReference(tags, digests) && containers.length > 0) {
      throw conflict(
        `conflict: unable to remove repository reference "${ref}" (must force) - container ${shortId(containers[0].name)} is using its referenced image ${shortId(shown)}`,
      );
    }
    if (parsed.digest) {
      const stored = digests.find((d) => sameDigestRef(d, name));
      if (stored) {
        plan.dropDigests.push(stored);
        digests = digests.filter((d) => d !== stored);
      }
    } else {
      plan.untag.push(name);
      tags = tags.filter((t) => t !== name);
    }
    plan.records.push({ Untagged: familiarName(name) });
    // Removing the last tag of a repository also drops that repository's digest references.
    if (!parsed.digest) {
      const repo = repoOf(name);
      if (!tags.some((t) => repoOf(t) === repo)) {
        for (const d of digests.filter((x) => repoOf(x) === repo)) {
          plan.dropDigests.push(d);
          plan.records.push({ Untagged: familiarName(d) });
        }
        digests = digests.filter((x) => repoOf(x) !== repo);
      }
    }
    if (tags.length + digests.length > 0) return plan;
    quiet = true;
  } else if (isSingleRepository(tags, digests)) {
    const c = check({ soft: !force, references: false });
    if (c) throw c.err;
    for (const t of tags) plan.records.push({ Untagged: familiarName(t) });
    for (const d of digests) plan.records.push({ Untagged: familiarName(d) });
    plan.untag.push(...tags);
    plan.dropDigests.push(...digests);
    tags = [];
    digests = [];
  } else if (!force) {
    throw conflictError(shown, false, 'image is referenced in multiple repositories');
  }

  const c = check({ soft: !force, references: true });
  if (c) {
    // After untagging by name, an image still in use (or with children) stays: untag only.
    if (quiet) return plan;
    throw c.err;
  }
  for (const t of tags) plan.records.push({ Untagged: familiarName(t) });
  for (const d of digests) plan.records.push({ Untagged: familiarName(d) });
  plan.untag.push(...tags);
  plan.dropDigests.push(...digests);
  plan.remove = true;
  plan.records.push({ Deleted: shown });
  return plan;
}

function sameDigestRef(stored: string, wanted: string): boolean {
  try {
    const p = parseReference(stored);
    return `${repositoryName(p)}@${p.digest ?? ''}` === wanted;
  } catch {
    return stored === wanted;
  }
}

export interface DeleteOptions {
  force: boolean;
  /** Also delete the image's untagged, unused parents (the API's `noprune=0`, the default). */
  prune: boolean;
  /** When given, removed layers are reported as `Deleted` records too. */
  layers?: LayerSizes;
}

export interface DeleteResult {
  records: DeleteRecord[];
  /** The Id of the image named, as clients see it (every `Untagged` record is one of its references). */
  imageId: string;
  /** Images marked removed (the caller waits for the reconciler to drop them). */
  removed: string[];
}

/**
 * `DELETE /images/{name}` as a whole: plan and apply the delete, report the layers that go with
 * the image, then quietly delete parents nothing else holds, as the reference daemon does.
 */
export function deleteImage(store: ImageStore, ref: string, o: DeleteOptions): DeleteResult {
  const plan = planImageDelete(store, ref, o.force);
  applyImageDelete(store, plan);
  const out: DeleteResult = { records: [...plan.records], imageId: imageIdOf(plan.image), removed: [] };
  if (!plan.remove) return out;
  let removed: ImageResource | undefined = plan.image;
  while (removed) {
    out.removed.push(removed.name);
    if (removed !== plan.image) out.records.push({ Deleted: imageIdOf(removed) });
    for (const chainId of releasedLayers(store, removed, o.layers)) out.records.push({ Deleted: chainId });
    removed = o.prune ? pruneParent(store, removed.spec.parent) : undefined;
  }
  // A multi-platform image (./platforms.ts) goes whole: its other platforms' records too, unless a
  // tag of their own, a container or a child image holds them.
  const containers = store.list(Containers);
  for (const other of siblingsOf(store, plan.image).slice(1)) {
    if (referencesOf(store, other.name).length > 0 || containers.some((c) => c.spec.imageId === other.name) || childrenOf(store, other.name).length > 0) continue;
    applyImageDelete(store, { records: [], image: other, untag: [], dropDigests: [...other.spec.repoDigests], remove: true });
    out.removed.push(other.name);
    for (const chainId of releasedLayers(store, other, o.layers)) out.records.push({ Deleted: chainId });
  }
  return out;
}

/** Delete `parentId` when it is dangling and unused; undefined when it stays. */
function pruneParent(store: ImageStore, parentId: string): ImageResource | undefined {
  if (!parentId) return undefined;
  const parent = store.get(Images, parentId);
  if (!isUsable(parent)) return undefined;
  if (referencesOf(store, parentId).length > 0 || parent.spec.repoDigests.length > 0) return undefined;
  if (childrenOf(store, parentId).length > 0) return undefined;
  if (store.list(Containers).some((c) => c.spec.imageId === parentId)) return undefined;
  applyImageDelete(store, { records: [], image: parent, untag: [], dropDigests: [], remove: true });
  return parent;
}

/** Apply a plan atomically. */
export function applyImageDelete(store: ImageStore, plan: DeletePlan): void {
  store.transaction((tx) => {
    for (const name of plan.untag) tx.delete(References, name);
    const drop = new Set(plan.dropDigests);
    if (drop.size > 0 || plan.remove) {
      tx.updateSpec(Images, plan.image.name, (s) => ({
        ...s,
        repoDigests: s.repoDigests.filter((d) => !drop.has(d)),
        desired: plan.remove ? 'removed' : s.desired,
      }));
    }
  });
}
