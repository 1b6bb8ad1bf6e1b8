// The classic builder's cache. Locally: a step is skipped when an image exists whose parent is
// the current image and whose container config matches the step's (the reference's compare()).
// With `cachefrom` images (pulled or loaded, so without parent links): a step matches the next
// history entry of a source whose history and layers start with the current image's, and the
// image for that step is restored from the source's config and layers; a local match then
// counts only when it is an ancestor of a source, as the reference does.
import type { BuildBackend, BuildImage } from '../../lib/ports/build.ts';
import { containerConfigOf, createdOf, parseConfig } from './image.ts';
import type { Config } from './state.ts';

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const keys = (v: unknown): string[] => (v && typeof v === 'object' ? Object.keys(v).sort() : []);

function sameList(a: unknown, b: unknown): boolean {
  const x = list(a);
  const y = list(b);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** Whether two container configs describe the same step. */
export function sameStep(a: Config, b: Config): boolean {
  if (a.OpenStdin || b.OpenStdin) return false;
  if ((a.User ?? '') !== (b.User ?? '') || !!a.Tty !== !!b.Tty) return false;
  if (!!a.AttachStdout !== !!b.AttachStdout || !!a.AttachStderr !== !!b.AttachStderr) return false;
  if (!sameList(a.Cmd, b.Cmd) || !sameList(a.Env, b.Env) || !sameList(a.Entrypoint, b.Entrypoint)) return false;
  const la = (a.Labels ?? {}) as Record<string, string>;
  const lb = (b.Labels ?? {}) as Record<string, string>;
  if (!sameList(keys(la), keys(lb)) || keys(la).some((k) => la[k] !== lb[k])) return false;
  return sameList(keys(a.ExposedPorts), keys(b.ExposedPorts)) && sameList(keys(a.Volumes), keys(b.Volumes));
}

type History = NonNullable<ReturnType<typeof parseConfig>['history']>;

/** A cache-from source's history and layers start with the parent's. */
function extends_(target: BuildImage, parent: BuildImage | null): boolean {
  const th = parseConfig(target.rawConfig).history ?? [];
  if (th.length === 0) return false;
  if (!parent) return true;
  const ph = parseConfig(parent.rawConfig).history ?? [];
  if (ph.length === 0 && parent.diffIds.length === 0) return true;
  if (ph.length >= th.length || parent.diffIds.length > target.diffIds.length) return false;
  return ph.every((h, i) => JSON.stringify(h) === JSON.stringify(th[i])) && parent.diffIds.every((d, i) => d === target.diffIds[i]);
}

/** The layer the history entry at `index` added, if it added one. */
function layerAt(history: History, diffIds: string[], index: number): string | undefined {
  if (history[index]?.empty_layer) return undefined;
  const n = history.slice(0, index).filter((h) => !h.empty_layer).length;
  return diffIds[n];
}

/** A restored image before it has an id and a size. */
export interface LoadedImageLike {
  rawConfig: string;
  diffIds: string[];
  chainId: string | null;
}

export interface CacheDeps {
  backend: Pick<BuildBackend, 'children' | 'findImage'>;
  /** The chain id of `diffId` on `parentChain` (the layer store's rule). */
  chainIdOf(parentChain: string | null, diffId: string): string;
  /** Record a restored image; answers it as the builder keeps it. */
  addImage(img: LoadedImageLike, parent: BuildImage | null): Promise<BuildImage>;
}

/** Looks steps up until the first miss of a stage (everything after a miss is built anew). */
export class StepCache {
  private busted: boolean;
  private sources: BuildImage[];
  private readonly deps: CacheDeps;
  private readonly disabled: boolean;
  /** `cachefrom` was given: only its images (those found) are sources, the local cache alone is not. */
  private readonly restricted: boolean;
  constructor(deps: CacheDeps, disabled: boolean, sources: BuildImage[] = [], restricted = sources.length > 0) {
    this.deps = deps;
    this.disabled = disabled;
    this.busted = disabled;
    this.sources = sources;
    this.restricted = restricted;
  }

  /** A new stage looks again. */
  reset(): void {
    this.busted = this.disabled;
  }

  /** The image of this step from the cache, or undefined (and no more lookups this stage). */
  async probe(parent: BuildImage | null, containerConfig: Config, runConfig: Config): Promise<BuildImage | undefined> {
    if (this.busted) return undefined;
    const hit = this.local(parent?.id ?? '', containerConfig) ?? (await this.fromSources(parent, containerConfig, runConfig));
    if (!hit) this.busted = true;
    return hit;
  }

  private local(parentId: string, cc: Config): BuildImage | undefined {
    let best: BuildImage | undefined;
    let bestCreated = '';
    for (const img of this.deps.backend.children(parentId)) {
      const c = containerConfigOf(img);
      if (!c || !sameStep(c, cc)) continue;
      const created = createdOf(img);
      if (!best || created > bestCreated) {
        best = img;
        bestCreated = created;
      }
    }
    // As the reference (MakeImageCache): with cachefrom, a local match counts only as an ancestor of
    // one of its images, and a cachefrom that names nothing found leaves no cache at all.
    if (!best || !this.restricted) return best;
    return this.sources.some((s) => this.isAncestor(best.id, s)) ? best : undefined;
  }

  private isAncestor(id: string, of: BuildImage): boolean {
    let cur: BuildImage | undefined = of;
    for (let hops = 0; cur && hops < 1000; hops++) {
      if (cur.id === id) return true;
      cur = cur.parent ? this.deps.backend.findImage(cur.parent) : undefined;
    }
    return false;
  }

  private async fromSources(parent: BuildImage | null, cc: Config, runConfig: Config): Promise<BuildImage | undefined> {
    const createdBy = list(cc.Cmd).join(' ');
    const base = parent ? (parseConfig(parent.rawConfig).history ?? []) : [];
    for (const target of this.sources) {
      const th = parseConfig(target.rawConfig).history ?? [];
      if (!extends_(target, parent) || th[base.length]?.created_by !== createdBy) continue;
      if (th.length - 1 === base.length) return target;
      // Further steps follow this source only, as the reference does.
      this.sources = [target];
      return this.restore(parent, target, th, base.length, runConfig);
    }
    return undefined;
  }

  /** The image of one step of `target`, rebuilt from its history entry and layer. */
  private async restore(parent: BuildImage | null, target: BuildImage, th: History, index: number, runConfig: Config): Promise<BuildImage> {
    const tc = parseConfig(target.rawConfig);
    const layer = layerAt(th, target.diffIds, index);
    const diffIds = [...(parent?.diffIds ?? []), ...(layer ? [layer] : [])];
    const chainId = layer ? this.deps.chainIdOf(parent?.chainId ?? null, layer) : (parent?.chainId ?? null);
    const history = [...th.slice(0, index + 1)];
    const image = {
      architecture: tc.architecture, ...(tc.author ? { author: tc.author } : {}),
      config: { ...runConfig, Image: parent?.id ?? '' }, created: history.at(-1)?.created, history, os: tc.os,
      ...(parent ? { parent: parent.id } : {}), rootfs: { type: 'layers', diff_ids: diffIds },
    };
    return this.deps.addImage({ rawConfig: JSON.stringify(image), diffIds, chainId }, parent);
  }
}
