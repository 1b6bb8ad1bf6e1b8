// An in-memory LayerStore for the image and distribution tests: keeps each applied layer's
// uncompressed tar (and the blob as it came), computes diff ids and chain ids the way the real
// store does.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { conflict, invalidArgument, notFound, notImplemented } from '../../../lib/errors.ts';
import { LayerHolds } from '../../../drivers/storage/leases.ts';
import type { ApplyOptions, LayerInfo, LayerLease, LayerStore } from '../../../drivers/storage/types.ts';

const sha256 = (b: Buffer | string) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

export class FakeLayerStore implements LayerStore {
  readonly driverName = 'fake';
  readonly concurrentApply = true;
  readonly holds = new LayerHolds((c) => this.layers.has(c));
  readonly layers = new Map<string, { info: LayerInfo; tar: Buffer; raw: Buffer }>();
  /** Diff ids in the order applyLayer unpacked them (not counting idempotent repeats). */
  readonly applied: string[] = [];
  /** What layerBlob gives: the blob as applied (push needs it), or the uncompressed tar. */
  private readonly blobs: 'raw' | 'tar';

  constructor(opts: { blobs?: 'raw' | 'tar' } = {}) {
    this.blobs = opts.blobs ?? 'tar';
  }

  driverStatus(): Array<[string, string]> {
    return [];
  }
  chainIdOf(parent: string | null, diffId: string): string {
    return parent === null ? diffId : sha256(`${parent} ${diffId}`);
  }
  has(chainId: string): boolean {
    return this.layers.has(chainId);
  }
  get(chainId: string): LayerInfo | undefined {
    return this.layers.get(chainId)?.info;
  }
  list(): LayerInfo[] {
    return [...this.layers.values()].map((l) => l.info);
  }
  async applyLayer(parent: string | null, blob: Readable, opts: ApplyOptions = {}): Promise<LayerInfo> {
    const chunks: Buffer[] = [];
    for await (const c of blob) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    opts.onProgress?.(raw.length);
    const gz = raw[0] === 0x1f && raw[1] === 0x8b;
    const tar = gz ? gunzipSync(raw) : raw;
    const diffId = sha256(tar);
    if (opts.expectedDiffId && opts.expectedDiffId !== diffId) {
      throw invalidArgument(`layer diff id mismatch: expected ${opts.expectedDiffId}, got ${diffId}`);
    }
    if (opts.blobDigest && opts.blobDigest !== sha256(raw)) throw invalidArgument('blob digest mismatch');
    if (parent !== null) await opts.parentReady;
    if (parent !== null && !this.layers.has(parent)) throw notFound(`parent layer ${parent}`);
    const chainId = this.chainIdOf(parent, diffId);
    const existing = this.layers.get(chainId);
    if (existing) {
      opts.lease?.add(chainId);
      return existing.info;
    }
    const info: LayerInfo = {
      chainId, diffId, parent, size: tar.length, blobMedia: gz ? 'gzip' : 'none', blobDigest: sha256(raw), blobSize: raw.length,
    };
    this.layers.set(chainId, { info, tar, raw });
    opts.lease?.add(chainId);
    this.applied.push(diffId);
    return info;
  }
  async removeLayer(chainId: string, opts: { keep?: (chainId: string) => boolean } = {}): Promise<void> {
    if (!this.layers.has(chainId)) return;
    for (const l of this.layers.values()) if (l.info.parent === chainId) throw conflict(`layer ${chainId} is in use by layer ${l.info.chainId}`);
    if (this.holds.isHeld(chainId)) throw conflict(`layer ${chainId} is in use by an image pull or load in progress`);
    if (opts.keep?.(chainId)) return;
    this.layers.delete(chainId);
  }
  lease(): LayerLease {
    return this.holds.lease();
  }
  isLeased(chainId: string): boolean {
    return this.holds.isHeld(chainId);
  }
  onRelease(fn: (chainIds: string[]) => void): () => void {
    return this.holds.onRelease(fn);
  }
  layerTar(chainId: string): Readable {
    const l = this.layers.get(chainId);
    if (!l) throw notFound(`layer ${chainId}`);
    return Readable.from([l.tar]);
  }
  layerBlob(chainId: string): Readable {
    if (this.blobs === 'tar') return this.layerTar(chainId);
    const l = this.layers.get(chainId);
    if (!l) throw notFound(`layer ${chainId}`);
    return Readable.from([l.raw]);
  }
  createRW(): Promise<void> { throw notImplemented('fake'); }
  mountRW(): Promise<string> { throw notImplemented('fake'); }
  unmountRW(): Promise<void> { throw notImplemented('fake'); }
  removeRW(): Promise<void> { throw notImplemented('fake'); }
  hasRW(): boolean { return false; }
  listRW(): string[] { return []; }
  sizeRW(): Promise<number> { throw notImplemented('fake'); }
  changesRW(): Promise<never> { throw notImplemented('fake'); }
  metadataRW(): Record<string, string> { return {}; }
  async cleanup(): Promise<void> {}
}
