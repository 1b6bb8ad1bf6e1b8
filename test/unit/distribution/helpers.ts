// Test helpers: an in-memory LayerStore that keeps the original blobs (push needs them), a small
// image builder (tar-stream + gzip), and quiet loggers.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import tarStream from 'tar-stream';
import { FakeLayerStore } from '../image/fake-layer-store.ts';
import type { LayerStore } from '../../../drivers/storage/types.ts';

export const sha256 = (b: Buffer | string) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
export const quietLog = pino({ level: 'silent' });

/** The shared in-memory layer store, giving back each blob as it was applied (push re-sends it). */
export class MemLayerStore extends FakeLayerStore {
  constructor() {
    super({ blobs: 'raw' });
  }
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
