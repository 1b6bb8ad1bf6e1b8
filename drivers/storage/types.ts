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
  /** The compressed size when known (a registry descriptor): large gzip blobs go through unpigz. */
  blobSize?: number;
  /**
   * The caller has verified the blob against `blobDigest` itself (a pull hashes it as it downloads,
   * and ends the stream only after that check) and this file holds exactly its bytes once the
   * stream has ended: the store keeps a hard link to it (a copy across file systems) instead of
   * hashing the blob again and writing a second copy.
   */
  blobFile?: string;
  /**
   * The parent is still being applied by the caller: settles once it is committed (rejects if it
   * failed). Stores whose driver unpacks a layer without its parent's content start at once and
   * commit only after this; the others wait for it first.
   */
  parentReady?: Promise<unknown>;
  /** Protect the resulting layer from removal until the lease is released. */
  lease?: LayerLease;
  /** Told how many blob bytes have been read so far, as they are read (progress bars). */
  onProgress?(blobBytes: number): void;
  signal?: AbortSignal;
}

/**
 * Held by an operation that is about to reference layers from a new image (a pull, until its image
 * record is written): leased layers, present or still to come, are never removed. Releasing tells
 * the store's release listeners which layers nothing holds any more, so the ones no image took up
 * (a failed pull's) can be collected.
 */
export interface LayerLease {
  add(chainId: string): void;
  /** Idempotent. */
  release(): void;
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
   * Concurrent applies of the same layer unpack it once. A committed layer is durable, and a crash
   * before the commit leaves nothing visible.
   */
  applyLayer(parentChainId: string | null, blob: Readable, opts?: ApplyOptions): Promise<LayerInfo>;
  /**
   * Remove a layer no image references any more. Refuses (Conflict) while a child layer or RW layer
   * uses it or a lease holds it. `keep` is asked last, under the layer's lock and with no await
   * between it and the removal: true leaves the layer (no error).
   */
  removeLayer(chainId: string, opts?: { keep?: (chainId: string) => boolean }): Promise<void>;
  /** A new lease holding nothing yet. */
  lease(): LayerLease;
  isLeased(chainId: string): boolean;
  /**
   * Called with the layers (present ones) a lease release left unheld, for garbage collection.
   * Returns the unsubscribe function.
   */
  onRelease(fn: (chainIds: string[]) => void): () => void;
  /**
   * True when layers can be unpacked before their parent is committed (see ApplyOptions.parentReady),
   * so a caller gains by handing over blobs as they arrive.
   */
  readonly concurrentApply: boolean;
  /** The layer's diff as an uncompressed tar whose sha256 is exactly its diff id. */
  layerTar(chainId: string): Readable;
  /** The original blob bytes as given to applyLayer (for push). */
  layerBlob(chainId: string): Readable;

  /** Create the read-write layer of a container on top of `parentChainId` (null: empty image). Idempotent. */
  createRW(id: string, parentChainId: string | null, storageOpt?: Readonly<Record<string, string>>): Promise<void>;
  /** Mount (refcounted) and return the rootfs path. Idempotent across daemon restarts. */
  mountRW(id: string): Promise<string>;
  unmountRW(id: string): Promise<void>;
  /** Unmount if needed and delete the RW layer. Idempotent (a missing layer is not an error). */
  removeRW(id: string): Promise<void>;
  hasRW(id: string): boolean;
  /** Ids of every read-write layer. */
  listRW(): string[];
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

/** The graph drivers this daemon has (overlayfs: the supervisor's snapshotter, ./snapshotter.ts). */
export type DriverName = 'overlay2' | 'vfs' | 'btrfs' | 'fuse-overlayfs' | 'overlayfs';

/** A store of layer blobs by digest outside the layer store's own directories (the supervisor's content store, wired by cmd). */
export interface BlobPort {
  /** Keeps the blob `file` holds (verified: its bytes hash to `digest`). */
  put(digest: string, file: string, size: number): Promise<void>;
  read(digest: string): Readable;
  /** NotFound is no error. */
  remove(digest: string): Promise<void>;
  /** Digests of every blob this store kept. */
  list(): Promise<string[]>;
  /** Drops what writes cut short left behind (at open, when none is running). */
  sweep(): Promise<void>;
}

export interface LayerStoreOptions {
  /** Daemon data root; the store keeps `<root>/image/<driver>/layerdb` and `<root>/<driver>/`. */
  dataRoot: string;
  driver: DriverName;
  /** The supervisor's snapshots, for the overlayfs driver (the feature supervisor-snapshotter). */
  snapshots?: import('./snapshotter.ts').SnapshotPort;
  /** Where layer blobs are kept instead of the layer's directory (the supervisor's content store with the feature). */
  blobs?: BlobPort;
  /** The daemon's --storage-opt values the driver acts on (./storage-opt.ts). */
  options?: import('./storage-opt.ts').DriverOptions;
  /** Directory for temporary files (ENGINE_TMPDIR or <data-root>/tmp). */
  tmpDir: string;
  /**
   * Allow unpigz for gzip blobs the store reads back from its files (false when ENGINE_DISABLE_PIGZ
   * is set). Blobs handed to applyLayer are always decompressed in-process.
   */
  usePigz: boolean;
  log: import('pino').Logger;
  /**
   * --userns-remap: layers are unpacked owned by the host ids of their container ids, and their
   * tars (save, push, commit) carry the container ids back.
   */
  idMap?: import('../../lib/idmap.ts').IdMap;
}
