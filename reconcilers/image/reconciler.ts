// Image reconciler: confirms a new image's layers are present (pending → ready) and, for an
// image marked removed, deletes the record and then the layers no other image shares. It also
// collects the layers a lease let go of that no image took up (a failed or cancelled pull's).
// Whether a layer is in use is decided at the moment of its removal (under the layer's lock), and
// layers leased by a pull in flight are never removed: the pull holds its image's layers until its
// image record exists.
//
// The per-image lifecycle is the machine in machine.ts, driven with the pure `transition`
// function through controllers/machine-driver.ts: each reconcile restores the machine from the
// status' phase, sends OBSERVED (the facts, the clock) and the event the record calls for (VERIFY
// for a generation the status has not seen, REMOVE for an image marked removed), lets it run the
// effects provided here (verifyLayers, release), and writes status from where it ended. No image
// state waits on time, so the machine host (controllers/machine-host.ts) holds nothing between
// reconciles. The collection of released layers
// is not an image's lifecycle (it follows lease releases, not records) and stays beside it.
import type { Logger } from 'pino';
import { fromPromise, type SnapshotFrom } from 'xstate';
import { topState } from '../../controllers/machine-driver.ts';
import { MachineHost } from '../../controllers/machine-host.ts';
import { EngineError, isCode } from '../../lib/errors.ts';
import { imageTarget, type ImageTarget, type TargetLayer } from '../../lib/image-target.ts';
import { type ImageSpec, Images, type ImageResource } from '../../store/kinds/image.ts';

import type { ReconcilerStore } from '../store-like.ts';
import { imageLifecycle, restoredContext, settledStateOf, type EffectInput, type ImageEvent, type ImageFacts, type VerifyOutput } from './machine.ts';
import { Containers } from '../../store/kinds/container.ts';

type Machine = ReturnType<typeof imageLifecycle.provide>;
type Snapshot = SnapshotFrom<Machine>;

export interface ImageLayersPort {
  has(chainId: string): boolean;
  get(chainId: string): { parent: string | null; blobMedia: TargetLayer['media']; blobDigest: string; blobSize: number } | undefined;
  chainIdOf(parentChainId: string | null, diffId: string): string;
  /** Conflict while a child, an RW layer or a lease uses it; `keep` is asked last, under the layer's lock. */
  removeLayer(chainId: string, opts?: { keep?: (chainId: string) => boolean }): Promise<void>;
  /** Layers a lease release left unheld. */
  onRelease?(fn: (chainIds: string[]) => void): () => void;
  /** Every layer present. */
  list?(): Array<{ chainId: string }>;
}

export interface ImageReconcilerOptions {
  log?: Logger;
  /** Images are known by their target digest (the feature supervisor-snapshotter): status.target is written. */
  targets?: boolean;
}

export class ImageReconciler {
  readonly name = 'image';
  readonly kind = Images.name;
  private readonly store: ReconcilerStore;
  private readonly layers: ImageLayersPort;
  private readonly log: Logger | undefined;
  private readonly targets: boolean;
  /** Released layers waiting for collection, and the collection running. */
  private readonly released = new Set<string>();
  private collecting: Promise<void> | null = null;
  /** Chain ids by image id (ids are config digests, so an image's diff ids never change). */
  private chains = new Map<string, string[]>();

  private readonly machines: MachineHost<Machine>;

  constructor(store: ReconcilerStore, layers: ImageLayersPort, opts: ImageReconcilerOptions = {}) {
    this.store = store;
    this.layers = layers;
    this.log = opts.log;
    this.targets = !!opts.targets;
    const machine = imageLifecycle.provide({
      actors: {
        verifyLayers: fromPromise<VerifyOutput, EffectInput>(async ({ input }) => this.verifyEffect(input.id)),
        release: fromPromise<void, EffectInput>(({ input }) => this.releaseEffect(input.id)),
      },
    });
    this.machines = new MachineHost(machine, { name: 'image' });
    layers.onRelease?.((chainIds) => this.collect(chainIds));
  }

  /** Daemon shutdown: the effects under way are aborted. */
  stop(): void {
    this.machines.stop();
  }

  async reconcile(id: string, ctx: { log: Logger; signal?: AbortSignal }): Promise<void> {
    const r = this.store.get(Images, id);
    if (!r) return;
    const facts: ImageFacts = { id, now: Date.now(), chainId: r.spec.chainId };
    const snapshot = this.machines.machine.resolveState({ value: settledStateOf(r.status.phase), context: restoredContext(facts) }) as Snapshot;
    const verify = r.status.phase === 'pending' || r.status.observedGeneration < r.generation;
    const events: ImageEvent[] = [{ type: 'OBSERVED', facts }];
    if (r.spec.desired === 'removed') events.push({ type: 'REMOVE' });
    else if (verify) events.push({ type: 'VERIFY' });
    // An image's machine is rebuilt from its status every time: nothing is held (settled).
    const pass = await this.machines.run(id, { snapshot, timers: [] }, events, { signal: ctx.signal ?? new AbortController().signal, now: () => facts.now });
    this.machines.keep(id, pass, true);
    const end = pass.snapshot;
    const state = topState(end);
    if (end.context.cause != null) throw end.context.cause;
    if (state === 'removed' || !verify || (state !== 'ready' && state !== 'failed')) return;
    const failed = state === 'failed';
    const target = !failed && this.targets ? this.targetOf(r) : undefined;
    this.store.updateStatus(Images, id, (s) => ({
      ...s,
      phase: failed ? 'failed' : 'ready',
      error: failed ? end.context.error : '',
      observedGeneration: r.generation,
      ...(target ? { target: target.digest } : {}),
      ...(target?.descriptor ? { descriptor: target.descriptor, contentSize: target.contentSize } : {}),
    }));
  }

  /** The image's target digest and descriptor (lib/image-target.ts), from its layers' blobs. */
  private targetOf(r: ImageResource): ImageTarget {
    const layers: TargetLayer[] = [];
    let chain: string | null = null;
    for (const diffId of r.spec.diffIds) {
      chain = this.layers.chainIdOf(chain, diffId);
      const l = this.layers.get(chain);
      if (l) layers.push({ media: l.blobMedia, digest: l.blobDigest, size: l.blobSize });
    }
    return imageTarget(r.spec, layers);
  }

  // ---- effects (the machine's named actors) -------------------------------------------------

  private current(id: string): ImageResource {
    const r = this.store.get(Images, id);
    if (!r) throw new EngineError('NotFound', `image ${id} not found`);
    return r;
  }

  private verifyEffect(id: string): VerifyOutput {
    const r = this.current(id);
    return { missing: !!r.spec.chainId && !this.layers.has(r.spec.chainId) };
  }

  private async releaseEffect(id: string): Promise<void> {
    const r = this.store.get(Images, id);
    if (!r) return;
    const log = this.log;
    // Layers first, the record last: DELETE answers when the record is gone, so a pull that
    // follows finds no layer "already there" that is about to be removed.
    const chain = this.chainOf(r.spec.diffIds);
    await this.releaseLayers(chain, log);
    this.store.delete(Images, id);
  }

  /** Settles once the released layers queued so far have been looked at (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.collecting) await this.collecting;
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

  /** Chain ids of every image not being removed, and of every image a container was created from. */
  private usedLayers(): Set<string> {
    const used = new Set<string>();
    const chains = new Map<string, string[]>();
    const chainOfImage = (img: { name: string; spec: ImageSpec }): string[] => {
      const chain = chains.get(img.name) ?? this.chains.get(img.name) ?? this.chainOf(img.spec.diffIds);
      chains.set(img.name, chain);
      return chain;
    };
    const containerImages = new Set(this.store.list(Containers).map((c) => c.spec.imageId));
    for (const img of this.store.list(Images)) {
      if (img.spec.desired === 'removed' && !containerImages.has(img.name)) continue;
      for (const c of chainOfImage(img)) used.add(c);
    }
    this.chains = chains;
    return used;
  }

  /** Asked under the layer's lock right before its removal, so an image recorded meanwhile counts. */
  private readonly inUse = (chainId: string): boolean => this.usedLayers().has(chainId);

  /** Remove this image's layers, top first, unless another image (or a container's RW layer, or a pull) still uses them. */
  private async releaseLayers(chain: string[], log: Logger | undefined): Promise<void> {
    for (const chainId of [...chain].reverse()) {
      if (!this.layers.has(chainId)) continue;
      if (this.inUse(chainId)) break; // an image's layer: everything below belongs to it too
      try {
        await this.layers.removeLayer(chainId, { keep: this.inUse });
      } catch (err) {
        if (isCode(err, 'Conflict')) break; // a child, RW layer or pull still needs it and everything below
        log?.warn({ err, chainId }, 'removing layer failed');
        throw err;
      }
      if (this.layers.has(chainId)) break; // kept: an image took it up meanwhile
    }
  }

  /**
   * Layers no image uses, left by a pull or a build step that a crash cut off after the layer
   * and before the image record: collected like released ones (leased and busy ones are skipped).
   * Run at start-up, before pulls resume and before the API serves.
   */
  collectUnreferenced(): Promise<void> {
    const used = this.usedLayers();
    const stray = (this.layers.list?.() ?? []).map((l) => l.chainId).filter((c) => !used.has(c));
    if (stray.length) this.log?.info({ layers: stray.length }, 'collecting layers no image uses');
    this.collect(stray);
    return this.collecting ?? Promise.resolve();
  }

  private collect(chainIds: string[]): void {
    for (const c of chainIds) this.released.add(c);
    this.collecting ??= this.collectReleased()
      .catch((err: unknown) => this.log?.warn({ err }, 'collecting released layers failed'))
      .finally(() => {
        this.collecting = null;
        // Released after the last look but before this line.
        if (this.released.size > 0) this.collect([]);
      });
  }

  /** Remove released layers no image uses, children before parents; leased or busy ones are skipped. */
  private async collectReleased(): Promise<void> {
    while (this.released.size > 0) {
      const batch = [...this.released];
      this.released.clear();
      const depth = (c: string): number => {
        let n = 0;
        for (let p = this.layers.get(c)?.parent; p; p = this.layers.get(p)?.parent) n++;
        return n;
      };
      const ordered = batch.filter((c) => this.layers.has(c)).map((c) => ({ c, d: depth(c) })).sort((a, b) => b.d - a.d);
      for (const { c } of ordered) {
        try {
          await this.layers.removeLayer(c, { keep: this.inUse });
        } catch (err) {
          // Held again by another pull, or a child or RW layer on it: whoever holds it now decides.
          if (isCode(err, 'Conflict')) continue;
          this.log?.warn({ err, chainId: c }, 'collecting a released layer failed');
        }
      }
    }
  }
}
