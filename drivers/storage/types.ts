// The layer store contract. Layers are content-addressed by chain id (sha256 over the diff ids
// below them, as the OCI image spec defines); containers get one read-write layer each, keyed by
// the container id. Implementations: overlay2 (default) and vfs graph drivers under one LayerStore.
import type { Readable } from 'node:stream';

export type BlobMedia = 'none' | 'gzip' | 'zstd';

export interface LayerInfo {
  chainId: string;
  diffId: string;
  parent: string | null;
  /** Unpacked size in bytes. */
  size: number;
  /** How the original blob given to applyLayer was compressed, and its digest (for push). */
  blobMedia: BlobMedia;
  blobDigest: string;
  blobSize: number;
}

export interface ApplyOptions {
  /** When given, the uncompressed tar must hash to this diff id or the layer is discarded (InvalidArgument). */
  expectedDiffId?: string;
  /** Digest of the blob as given (compressed bytes), when the caller already knows it (pull). */
  blobDigest?: string;
  signal?: AbortSignal;
}

export interface ChangeEntry {
  Path: string;
  /** 0 modified, 1 added, 2 deleted */
  Kind: 0 | 1 | 2;
}

export interface LayerStore {
  readonly driverName: string;
  /** Driver status pairs for GET /info, e.g. [["Backing Filesystem","extfs"],["Supports d_type","true"]]. */
  driverStatus(): Array<[string, string]>;

  /** Chain id of `diffId` on top of `parentChainId` (pure computation). */
  chainIdOf(parentChainId: string | null, diffId: string): string;
  has(chainId: string): boolean;
  get(chainId: string): LayerInfo | undefined;
  list(): LayerInfo[];
  /**
   * Unpack one layer blob (plain tar, gzip or zstd: detected from magic bytes) on top of
   * `parentChainId`. Whiteouts and opaque directories are honoured. Idempotent: when the
   * resulting chain id already exists the stream is drained and the existing layer returned.
   * Concurrent applies of the same layer unpack it once.
   */
  applyLayer(parentChainId: string | null, blob: Readable, opts?: ApplyOptions): Promise<LayerInfo>;
  /** Remove a layer no image references any more. Refuses (Conflict) while a child layer or RW layer uses it. */
  removeLayer(chainId: string): Promise<void>;
  /** The layer's diff as an uncompressed tar whose sha256 is exactly its diff id. */
  layerTar(chainId: string): Readable;
  /** The original blob bytes as given to applyLayer (for push). */
  layerBlob(chainId: string): Readable;

  /** Create the read-write layer of a container on top of `parentChainId` (null: empty image). Idempotent. */
  createRW(id: string, parentChainId: string | null): Promise<void>;
  /** Mount (refcounted) and return the rootfs path. Idempotent across daemon restarts. */
  mountRW(id: string): Promise<string>;
  unmountRW(id: string): Promise<void>;
  /** Unmount if needed and delete the RW layer. Idempotent (a missing layer is not an error). */
  removeRW(id: string): Promise<void>;
  hasRW(id: string): boolean;
  /** Bytes used by the RW layer's own changes. */
  sizeRW(id: string): Promise<number>;
  /** Changes of the RW layer against its parent (docker diff). */
  changesRW(id: string): Promise<ChangeEntry[]>;
  /**
   * The RW layer's own changes as a tar (deletions as `.wh.` entries, opaque directories as
   * `.wh..wh..opq`), ready to applyLayer on the same parent (docker commit).
   */
  tarRW?(id: string): Readable;
  /** GraphDriver.Data for inspect (LowerDir, UpperDir, MergedDir, WorkDir for overlay2). */
  metadataRW(id: string): Record<string, string>;
  /** Unmount everything this store mounted (daemon shutdown). */
  cleanup(): Promise<void>;
}

export interface LayerStoreOptions {
  /** Daemon data root; the store keeps `<root>/image/<driver>/layerdb` and `<root>/<driver>/`. */
  dataRoot: string;
  driver: 'overlay2' | 'vfs';
  /** Directory for temporary files (ENGINE_TMPDIR or <data-root>/tmp). */
  tmpDir: string;
  /** Use unpigz for gzip when present (false when ENGINE_DISABLE_PIGZ is set). */
  usePigz: boolean;
  log: import('pino').Logger;
}
