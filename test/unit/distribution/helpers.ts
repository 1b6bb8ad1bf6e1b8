// Test helpers: an in-memory LayerStore that keeps the original blobs (push needs them), a small
// image builder (tar-stream + gzip), and quiet loggers.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { gunzipSync, gzipSync } from 'node:zlib';
import pino from 'pino';
import tarStream from 'tar-stream';
import { conflict, invalidArgument, notFound, notImplemented } from '../../../lib/errors.ts';
import { LayerHolds } from '../../../drivers/storage/leases.ts';
import type { ApplyOptions, LayerInfo, LayerLease, LayerStore } from '../../../drivers/storage/types.ts';

export const sha256 = (b: Buffer | string) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
export const quietLog = pino({ level: 'silent' });

export class MemLayerStore implements LayerStore {
  readonly driverName = 'mem';
  readonly concurrentApply = true;
  readonly holds = new LayerHolds((c) => this.layers.has(c));
  readonly layers = new Map<string, { info: LayerInfo; tar: Buffer; raw: Buffer }>();
  readonly applied: string[] = [];

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
    if (opts.expectedDiffId && opts.expectedDiffId !== diffId) throw invalidArgument(`layer diff id mismatch: expected ${opts.expectedDiffId}, got ${diffId}`);
    if (opts.blobDigest && opts.blobDigest !== sha256(raw)) throw invalidArgument('blob digest mismatch');
    if (parent !== null) await opts.parentReady;
    if (parent !== null && !this.layers.has(parent)) throw notFound(`parent layer ${parent}`);
    const chainId = this.chainIdOf(parent, diffId);
    const existing = this.layers.get(chainId);
    if (existing) {
      opts.lease?.add(chainId);
      return existing.info;
    }
    const info: LayerInfo = { chainId, diffId, parent, size: tar.length, blobMedia: gz ? 'gzip' : 'none', blobDigest: sha256(raw), blobSize: raw.length };
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
    const l = this.layers.get(chainId);
    if (!l) throw notFound(`layer ${chainId}`);
    return Readable.from([l.raw]);
  }
  createRW(): Promise<void> { throw notImplemented('mem'); }
  mountRW(): Promise<string> { throw notImplemented('mem'); }
  unmountRW(): Promise<void> { throw notImplemented('mem'); }
  removeRW(): Promise<void> { throw notImplemented('mem'); }
  hasRW(): boolean { return false; }
  sizeRW(): Promise<number> { throw notImplemented('mem'); }
  changesRW(): Promise<never> { throw notImplemented('mem'); }
  metadataRW(): Record<string, string> { return {}; }
  async cleanup(): Promise<void> {}
}

export async function makeTar(files: Record<string, string | Buffer>): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const [name, data] of Object.entries(files)) pack.entry({ name, mtime: new Date(0) }, typeof data === 'string' ? Buffer.from(data) : data);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export interface TestImage {
  rawConfig: string;
  id: string;
  diffIds: string[];
  chainId: string | null;
  blobs: Buffer[];
}

/**
 * Build an image of `layers` (each a file map) into `store`: gzip blobs applied bottom-up, and a
 * config naming their diff ids. `compress: false` applies plain tars (push must gzip them).
 */
export async function buildImage(store: LayerStore, layers: Array<Record<string, string | Buffer>>, opts: { compress?: boolean; arch?: string; label?: string } = {}): Promise<TestImage> {
  const diffIds: string[] = [];
  const blobs: Buffer[] = [];
  let parent: string | null = null;
  for (const files of layers) {
    const tar = await makeTar(files);
    const blob = opts.compress === false ? tar : gzipSync(tar);
    const info = await store.applyLayer(parent, Readable.from([blob]));
    diffIds.push(info.diffId);
    blobs.push(blob);
    parent = info.chainId;
  }
  const config = {
    architecture: opts.arch ?? 'amd64',
    os: 'linux',
    config: { Cmd: ['/bin/sh'], Labels: opts.label ? { test: opts.label } : {} },
    rootfs: { type: 'layers', diff_ids: diffIds },
    history: diffIds.map(() => ({ created_by: 'test' })),
  };
  const rawConfig = JSON.stringify(config);
  return { rawConfig, id: sha256(rawConfig), diffIds, chainId: parent, blobs };
}

/** A payload of `n` pseudo-random (incompressible) bytes. */
export function noise(n: number, seed = 1): Buffer {
  const b = Buffer.alloc(n);
  let x = seed * 2654435761;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}
