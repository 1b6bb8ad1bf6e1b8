// The layer store: content-addressed image layers and per-container read-write layers on top of a
// graph driver (overlay2, fuse-overlayfs, vfs or btrfs). Metadata lives in <dataRoot>/image/<driver>/layerdb:
//   sha256/<chain hex>/layer.json   LayerInfo + the driver's cache id
//   sha256/<chain hex>/blob         the blob exactly as given to applyLayer (for push and save)
//   mounts/<container id>/mount.json  a container's RW layer (cache id, parent chain id)
//   tmp/                            staging; a directory is renamed into place only once complete
//                                   (an image layer's also flushed), so whatever is left here after
//                                   a crash is removed on start.
// Layers of one image are unpacked side by side when the driver allows it (overlay2: each layer is
// its own directory) and committed bottom-up; the flushes of concurrent commits are shared.
import { containerOwner, rootPair } from '../../lib/idmap.ts';
import type { OwnerMap } from './diff-walk.ts';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { copyFile, link, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { conflict, EngineError, failedPrecondition, invalidArgument, notFound } from '../../lib/errors.ts';
import { decompress, decompressFile, peek, PIGZ_MIN_BYTES, sniff } from './compression.ts';
import { ChunkWriter } from './chunk-writer.ts';
import { chunksOf } from './chunks.ts';
import { extract, type ExtractResult } from './extract.ts';
import type { GraphDriver } from './graph-driver.ts';
import { SnapshotterDriver } from './snapshotter.ts';
import { GroupSync, syncfsAsync } from './group-sync.ts';
import { LayerHolds } from './leases.ts';
import { Overlay2Driver } from './overlay2.ts';
import type { ApplyOptions, BlobMedia, ChangeEntry, LayerInfo, LayerLease, LayerStore, LayerStoreOptions } from './types.ts';
import { VfsDriver } from './vfs.ts';
import { BtrfsDriver } from './btrfs.ts';
import { FuseOverlayDriver } from './fuse-overlayfs.ts';

interface LayerRecord {
  info: LayerInfo;
  cacheId: string;
}

interface RWRecord {
  id: string;
  cacheId: string;
  parent: string | null;
  /** mountRW calls not yet matched by unmountRW in this process. */
  refs: number;
}

const sha256 = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;
const hexOf = (digest: string) => digest.replace(/^sha256:/, '');
const DIGEST = /^sha256:[a-f0-9]{64}$/;
const RW_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** A fresh cache id: 32 random bytes in hex, as the reference daemon names driver directories. */
const newCacheId = () => randomBytes(32).toString('hex');

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** The caller's verified blob file becomes the layer's blob: a second name, or a copy across file systems. */
async function keepBlob(src: string, dest: string): Promise<void> {
  try {
    await link(src, dest);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw err;
    await copyFile(src, dest);
  }
}

/** Decompression errors are the client's bad data, not our failure. */
function asBlobError(err: unknown): unknown {
  if (err instanceof EngineError) return err;
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' && (code.startsWith('Z_') || code.startsWith('ERR_ZLIB') || code.startsWith('ERR_ZSTD'))) {
    return invalidArgument(`invalid layer blob: ${(err as Error).message}`, err);
  }
  return err;
}

class Store implements LayerStore {
  readonly driverName: string;
  private readonly driver: GraphDriver;
  private readonly opts: LayerStoreOptions;
  private readonly log: Logger;
  private readonly db: string;
  private readonly layers = new Map<string, LayerRecord>();
  private readonly rws = new Map<string, RWRecord>();
  /** Applies in progress, by the chain id they will produce (when known up front). */
  private readonly applying = new Map<string, Promise<LayerInfo>>();
  private readonly locks = new Map<string, Promise<unknown>>();
  /** Leases, and applies on top of a parent: a held layer is not removed. */
  private readonly holds: LayerHolds;
  private flusher: GroupSync | null = null;
  /** --userns-remap: the container ids of a layer's host owners, for its tar. */
  private readonly owner: OwnerMap | undefined;

  constructor(opts: LayerStoreOptions, driver: GraphDriver) {
    const map = opts.idMap;
    this.owner = map ? (uid, gid) => containerOwner(map, uid, gid) : undefined;
    this.opts = opts;
    this.driver = driver;
    this.driverName = driver.name;
    this.log = opts.log;
    this.db = join(opts.dataRoot, 'image', driver.name, 'layerdb');
    this.holds = new LayerHolds((chainId) => this.layers.has(chainId), opts.log);
  }

  get concurrentApply(): boolean {
    return this.driver.attach !== undefined;
  }

  private layerDir(chainId: string): string {
    return join(this.db, 'sha256', hexOf(chainId));
  }
  private rwDir(id: string): string {
    return join(this.db, 'mounts', id);
  }
  private stage(name: string): string {
    return join(this.db, 'tmp', `${name}-${randomBytes(4).toString('hex')}`);
  }

  /** Run `fn` after every earlier call with the same key has settled. */
  private async withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.catch(() => {}).then(fn);
    this.locks.set(key, run);
    try {
      return await run;
    } finally {
      if (this.locks.get(key) === run) this.locks.delete(key);
    }
  }

  async open(): Promise<void> {
    for (const d of ['sha256', 'mounts', 'tmp']) await mkdir(join(this.db, d), { recursive: true, mode: 0o700 });
    const leftovers = await readdir(join(this.db, 'tmp'));
    for (const name of leftovers) await rm(join(this.db, 'tmp', name), { recursive: true, force: true });
    if (leftovers.length) this.log.info({ count: leftovers.length }, 'removed incomplete layer store entries');
    await this.driver.init();
    // Metadata and layer directories usually share a file system, and then one syncfs covers both.
    const paths = (await stat(this.db)).dev === (await stat(this.driver.home)).dev ? [this.db] : [this.db, this.driver.home];
    this.flusher = new GroupSync(paths, syncfsAsync);
    const onDisk = new Set(await this.driver.list());

    for (const hex of await readdir(join(this.db, 'sha256'))) {
      const dir = join(this.db, 'sha256', hex);
      try {
        const rec = JSON.parse(await readFile(join(dir, 'layer.json'), 'utf8')) as LayerRecord;
        if (rec.info.chainId !== `sha256:${hex}` || !onDisk.has(rec.cacheId)) throw new Error('inconsistent layer metadata');
        this.layers.set(rec.info.chainId, rec);
      } catch (err) {
        this.log.warn({ err, layer: hex }, 'dropping unreadable layer');
        await rm(dir, { recursive: true, force: true });
      }
    }
    for (const id of await readdir(join(this.db, 'mounts'))) {
      const dir = this.rwDir(id);
      try {
        const rec = JSON.parse(await readFile(join(dir, 'mount.json'), 'utf8')) as Omit<RWRecord, 'refs'>;
        if (rec.id !== id || !onDisk.has(rec.cacheId)) throw new Error('inconsistent RW layer metadata');
        this.rws.set(id, { ...rec, refs: 0 });
      } catch (err) {
        this.log.warn({ err, id }, 'dropping unreadable RW layer');
        await rm(dir, { recursive: true, force: true });
      }
    }
    const used = new Set([...this.layers.values()].map((l) => l.cacheId).concat([...this.rws.values()].map((r) => r.cacheId)));
    for (const cacheId of onDisk) {
      if (used.has(cacheId)) continue;
      this.log.info({ cacheId }, 'removing orphaned layer directory');
      await this.driver.remove(cacheId);
    }
    if (this.opts.blobs) {
      // Writes a crash cut short, and blobs kept for layers a crash never committed.
      await this.opts.blobs.sweep();
      const blobs = new Set([...this.layers.values()].map((l) => l.info.blobDigest));
      for (const digest of await this.opts.blobs.list()) {
        if (blobs.has(digest)) continue;
        this.log.info({ digest }, 'removing orphaned layer blob');
        await this.opts.blobs.remove(digest);
      }
    }
  }

  driverStatus(): Array<[string, string]> {
    return this.driver.status();
  }

  chainIdOf(parentChainId: string | null, diffId: string): string {
    return parentChainId === null ? diffId : sha256(`${parentChainId} ${diffId}`);
  }

  has(chainId: string): boolean {
    return this.layers.has(chainId);
  }

  get(chainId: string): LayerInfo | undefined {
    const l = this.layers.get(chainId);
    return l ? { ...l.info } : undefined;
  }

  list(): LayerInfo[] {
    return [...this.layers.values()].map((l) => ({ ...l.info }));
  }

  private cacheIdOf(chainId: string | null): string | null {
    if (chainId === null) return null;
    const l = this.layers.get(chainId);
    if (!l) throw notFound(`layer ${chainId} does not exist`);
    return l.cacheId;
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

  async applyLayer(parentChainId: string | null, blob: Readable, opts: ApplyOptions = {}): Promise<LayerInfo> {
    if (opts.expectedDiffId !== undefined && !DIGEST.test(opts.expectedDiffId)) {
      blob.destroy();
      throw invalidArgument(`invalid diff id ${JSON.stringify(opts.expectedDiffId)}`);
    }
    if (opts.blobFile !== undefined && (opts.blobDigest === undefined || !DIGEST.test(opts.blobDigest))) {
      blob.destroy();
      throw invalidArgument('a verified blob file needs its blob digest');
    }
    // The parent may not be removed while a layer is being put on top of it.
    if (parentChainId !== null) this.holds.hold(parentChainId);
    try {
      return await this.applyOn(parentChainId, blob, opts);
    } finally {
      if (parentChainId !== null) this.holds.unhold(parentChainId);
    }
  }

  private async applyOn(parentChainId: string | null, blob: Readable, opts: ApplyOptions): Promise<LayerInfo> {
    const detached = parentChainId !== null && opts.parentReady !== undefined && this.concurrentApply;
    if (parentChainId !== null && opts.parentReady !== undefined && !detached) {
      try {
        await opts.parentReady;
      } catch (err) {
        blob.destroy();
        throw err;
      }
    }
    if (parentChainId !== null && !detached && !this.layers.has(parentChainId)) {
      blob.destroy();
      throw notFound(`parent layer ${parentChainId} does not exist`);
    }
    const known = opts.expectedDiffId ? this.chainIdOf(parentChainId, opts.expectedDiffId) : null;
    if (known === null) return this.unpackNew(parentChainId, blob, opts, detached);
    // Concurrent applies of one layer: the first unpacks, the others verify their bytes and share it.
    const running = this.applying.get(known);
    if (running) await running.catch(() => {});
    if (this.layers.has(known)) {
      opts.lease?.add(known);
      // Held while the bytes are checked, so what is returned is still there.
      this.holds.hold(known);
      try {
        await this.consume(blob, null, null, opts);
      } finally {
        this.holds.unhold(known);
      }
      return this.get(known)!;
    }
    const p = this.unpackNew(parentChainId, blob, opts, detached);
    this.applying.set(known, p);
    try {
      return await p;
    } finally {
      if (this.applying.get(known) === p) this.applying.delete(known);
    }
  }

  /** Everything written before the call is on disk. */
  private flush(): Promise<void> {
    if (!this.flusher) throw failedPrecondition('layer store is not open');
    return this.flusher.sync();
  }

  /**
   * Unpack into a new driver directory and commit it as a layer. `detached`: the parent is not
   * committed yet, so the directory is created on no parent, unpacked, flushed, and only then, once
   * the parent is committed, given its parent and committed in turn.
   */
  private async unpackNew(parentChainId: string | null, blob: Readable, opts: ApplyOptions, detached: boolean): Promise<LayerInfo> {
    const cacheId = newCacheId();
    const stage = this.stage('layer');
    let committed = false;
    try {
      await mkdir(stage, { mode: 0o700 });
      await this.driver.create(cacheId, detached ? null : this.cacheIdOf(parentChainId));
      // A parent that fails stops this unpacking at once, with its error.
      if (detached) opts.parentReady!.then(undefined, (err: unknown) => blob.destroy(err instanceof Error ? err : new Error(String(err))));
      const r = await this.consume(blob, opts.blobFile ? null : join(stage, 'blob'), this.driver.unpackDir(cacheId), opts);
      if (this.opts.blobs) {
        // Kept elsewhere (the supervisor's content store): put there before the layer is committed.
        await this.opts.blobs.put(r.blobDigest, opts.blobFile ?? join(stage, 'blob'), r.blobSize);
        await rm(join(stage, 'blob'), { force: true });
      } else if (opts.blobFile) await keepBlob(opts.blobFile, join(stage, 'blob'));
      if (detached) {
        // The bulk of the data goes to disk while the layers below are still being unpacked;
        // the flush after the parent's commit then has little left to write.
        await this.flush();
        await opts.parentReady;
        opts.signal?.throwIfAborted();
        await this.driver.attach!(cacheId, this.cacheIdOf(parentChainId)!);
      }
      const chainId = this.chainIdOf(parentChainId, r.diffId);
      const info: LayerInfo = {
        chainId, diffId: r.diffId, parent: parentChainId, size: r.size,
        blobMedia: r.media, blobDigest: r.blobDigest, blobSize: r.blobSize,
      };
      const rec: LayerRecord = { info, cacheId };
      await writeFile(join(stage, 'layer.json'), `${JSON.stringify(rec)}\n`, { flag: 'wx', mode: 0o600 });
      // One flush covers the unpacked files, the driver's link files, the blob and layer.json.
      await this.flush();
      opts.signal?.throwIfAborted();
      // Under the layer's lock: a removal of the same chain id still moving its directory away finishes first.
      return await this.withLock(`layer:${chainId}`, async () => {
        // A concurrent apply of the same content may have committed while we were flushing.
        const existing = this.layers.get(chainId);
        if (existing) {
          opts.lease?.add(chainId);
          return { ...existing.info };
        }
        if (parentChainId !== null && !this.layers.has(parentChainId)) throw notFound(`parent layer ${parentChainId} does not exist`);
        await rename(stage, this.layerDir(chainId));
        await fsyncPath(join(this.db, 'sha256'));
        this.layers.set(chainId, rec);
        opts.lease?.add(chainId);
        committed = true;
        this.log.debug({ chainId, diffId: r.diffId, size: r.size, media: r.media }, 'layer applied');
        return { ...info };
      });
    } finally {
      if (!committed) {
        await this.driver.remove(cacheId).catch((err) => this.log.warn({ err, cacheId }, 'removing failed layer'));
        await rm(stage, { recursive: true, force: true });
      }
    }
  }

  /**
   * Read the whole blob once: hash it and keep it (blobFile) unless the caller verified and kept it
   * (opts.blobFile), decompress, hash the tar and unpack it (dest). Verifies expectedDiffId and
   * blobDigest.
   */
  private async consume(
    blob: Readable, blobFile: string | null, dest: string | null, opts: ApplyOptions,
  ): Promise<{ diffId: string; media: BlobMedia; blobDigest: string; blobSize: number; size: number }> {
    const verified = opts.blobFile !== undefined;
    const blobHash = verified ? null : createHash('sha256');
    let blobSize = 0;
    let media: BlobMedia = 'none';
    let result: ExtractResult;
    const signal = opts.signal;
    // A stalled source must not hold an aborted apply: the read fails at once.
    const onAbort = () => blob.destroy(signal?.reason instanceof Error ? signal.reason : new EngineError('Canceled', 'layer apply canceled'));
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    let fh: Awaited<ReturnType<typeof open>> | null = null;
    let out: ChunkWriter | null = null;
    const progress = opts.onProgress;
    async function* tap(): AsyncGenerator<Buffer> {
      for await (const c of chunksOf(blob)) {
        signal?.throwIfAborted();
        const chunk = c as Buffer;
        blobHash?.update(chunk);
        blobSize += chunk.length;
        const wait = out?.write(chunk);
        if (wait) await wait;
        progress?.(blobSize);
        yield chunk;
      }
      await out?.flush();
    }
    try {
      signal?.throwIfAborted();
      if (blobFile) {
        fh = await open(blobFile, 'wx', 0o600);
        out = new ChunkWriter(fh, null);
      }
      const { head, all } = await peek(tap(), 4);
      media = sniff(head);
      result = await extract(all, { media, root: dest, whiteouts: this.driver.whiteouts, signal, usePigz: this.opts.usePigz && (opts.blobSize ?? 0) >= PIGZ_MIN_BYTES, idMap: this.opts.idMap });
    } catch (err) {
      blob.destroy();
      throw asBlobError(err);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      await out?.settle();
      await fh?.close();
    }
    const { diffId, size } = result;
    const blobDigest = blobHash ? `sha256:${blobHash.digest('hex')}` : opts.blobDigest!;
    if (opts.expectedDiffId && opts.expectedDiffId !== diffId) {
      throw invalidArgument(`layer diff id mismatch: expected ${opts.expectedDiffId}, got ${diffId}`);
    }
    if (opts.blobDigest && opts.blobDigest !== blobDigest) {
      throw invalidArgument(`layer blob digest mismatch: expected ${opts.blobDigest}, got ${blobDigest}`);
    }
    return { diffId, media, blobDigest, blobSize, size };
  }

  async removeLayer(chainId: string, opts: { keep?: (chainId: string) => boolean } = {}): Promise<void> {
    await this.withLock(`layer:${chainId}`, async () => {
      const rec = this.layers.get(chainId);
      if (!rec) return;
      for (const l of this.layers.values()) {
        if (l.info.parent === chainId) throw conflict(`layer ${chainId} is in use by layer ${l.info.chainId}`);
      }
      for (const rw of this.rws.values()) {
        if (rw.parent === chainId) throw conflict(`layer ${chainId} is in use by container ${rw.id}`);
      }
      if (this.holds.isHeld(chainId)) throw conflict(`layer ${chainId} is in use by an image pull or load in progress`);
      // Nothing awaits between the caller's last word and the removal from the map.
      if (opts.keep?.(chainId)) return;
      this.layers.delete(chainId);
      // Moved out of sha256/ first: after a crash the rest is a leftover in tmp/ and an orphan dir.
      const trash = this.stage('removed');
      await rename(this.layerDir(chainId), trash);
      await this.driver.remove(rec.cacheId);
      await rm(trash, { recursive: true, force: true });
      const blob = rec.info.blobDigest;
      if (this.opts.blobs && blob && ![...this.layers.values()].some((l) => l.info.blobDigest === blob)) await this.opts.blobs.remove(blob);
    });
  }

  layerTar(chainId: string): Readable {
    const rec = this.layers.get(chainId);
    if (!rec) throw notFound(`layer ${chainId} does not exist`);
    const blobFile = join(this.layerDir(chainId), 'blob');
    // The kept blob reproduces the original tar byte for byte, so its digest is the diff id.
    if (this.opts.blobs && rec.info.blobDigest) {
      return Readable.from(decompress(this.opts.blobs.read(rec.info.blobDigest), rec.info.blobMedia), { objectMode: false });
    }
    if (existsSync(blobFile)) {
      return Readable.from(decompressFile(blobFile, rec.info.blobMedia, this.opts.usePigz), { objectMode: false });
    }
    return Readable.from(this.driver.diff(rec.cacheId, this.cacheIdOf(rec.info.parent), this.owner), { objectMode: false });
  }

  layerBlob(chainId: string): Readable {
    const rec = this.layers.get(chainId);
    if (!rec) throw notFound(`layer ${chainId} does not exist`);
    if (this.opts.blobs) return this.opts.blobs.read(rec.info.blobDigest);
    return createReadStream(join(this.layerDir(chainId), 'blob'));
  }

  private rw(id: string): RWRecord {
    const rw = this.rws.get(id);
    if (!rw) throw notFound(`RW layer for ${id} does not exist`);
    return rw;
  }

  async createRW(id: string, parentChainId: string | null, storageOpt?: Readonly<Record<string, string>>): Promise<void> {
    if (!RW_ID.test(id)) throw invalidArgument(`invalid RW layer id ${JSON.stringify(id)}`);
    await this.withLock(`rw:${id}`, async () => {
      const existing = this.rws.get(id);
      if (existing) {
        if (existing.parent !== parentChainId) throw conflict(`RW layer ${id} already exists on another parent`);
        return;
      }
      const parentCache = this.cacheIdOf(parentChainId);
      const cacheId = newCacheId();
      const stage = this.stage('rw');
      try {
        // Side by side (both settled before any cleanup below).
        const made = await Promise.allSettled([mkdir(stage, { mode: 0o700 }), this.driver.create(cacheId, parentCache, storageOpt)]);
        for (const m of made) if (m.status === 'rejected') throw m.reason;
        const rec = { id, cacheId, parent: parentChainId };
        // Made whole in staging and renamed into place: a crash leaves a staged directory (removed
        // on start) or the whole record. Not flushed, unlike an image layer: as the store's commits
        // (WAL, synchronous=NORMAL), it survives the process being killed, not a power loss, and
        // so do the layer's own files (a container's writes are never flushed). Three fsyncs
        // were ~2 ms of every create, and tens of ms when the disk is busy (after a crash, while
        // the previous life's containers are stopped).
        await writeFile(join(stage, 'mount.json'), `${JSON.stringify(rec)}\n`, { mode: 0o600, flag: 'wx' });
        await rename(stage, this.rwDir(id));
        this.rws.set(id, { ...rec, refs: 0 });
      } catch (err) {
        await this.driver.remove(cacheId).catch(() => {});
        await rm(stage, { recursive: true, force: true });
        throw err;
      }
    });
  }

  async mountRW(id: string): Promise<string> {
    return this.withLock(`rw:${id}`, async () => {
      const rw = this.rw(id);
      const path = await this.driver.mount(rw.cacheId);
      rw.refs++;
      return path;
    });
  }

  async unmountRW(id: string): Promise<void> {
    await this.withLock(`rw:${id}`, async () => {
      const rw = this.rws.get(id);
      if (!rw) return;
      if (rw.refs > 1) {
        rw.refs--;
        return;
      }
      await this.driver.unmount(rw.cacheId);
      rw.refs = 0;
    });
  }

  async removeRW(id: string): Promise<void> {
    await this.withLock(`rw:${id}`, async () => {
      const rw = this.rws.get(id);
      if (!rw) return;
      await this.driver.unmount(rw.cacheId);
      this.rws.delete(id);
      const trash = this.stage('removed');
      await rename(this.rwDir(id), trash);
      await Promise.all([this.driver.remove(rw.cacheId), rm(trash, { recursive: true, force: true })]);
    });
  }

  hasRW(id: string): boolean {
    return this.rws.has(id);
  }

  listRW(): string[] {
    return [...this.rws.keys()];
  }

  async sizeRW(id: string): Promise<number> {
    const rw = this.rw(id);
    return this.driver.diffSize(rw.cacheId, this.cacheIdOf(rw.parent));
  }

  async changesRW(id: string): Promise<ChangeEntry[]> {
    const rw = this.rw(id);
    return this.driver.changes(rw.cacheId, this.cacheIdOf(rw.parent));
  }

  tarRW(id: string): Readable {
    const rw = this.rw(id);
    return Readable.from(this.driver.diff(rw.cacheId, this.cacheIdOf(rw.parent), this.owner), { objectMode: false });
  }

  metadataRW(id: string): Record<string, string> {
    const rw = this.rws.get(id);
    return rw ? this.driver.metadata(rw.cacheId) : {};
  }

  async cleanup(): Promise<void> {
    for (const rw of this.rws.values()) {
      if (rw.refs === 0) continue;
      try {
        await this.driver.unmount(rw.cacheId);
        rw.refs = 0;
      } catch (err) {
        this.log.warn({ err, id: rw.id }, 'unmounting RW layer at shutdown');
      }
    }
  }
}

export async function createLayerStore(opts: LayerStoreOptions): Promise<LayerStore> {
  if (opts.driver === 'overlayfs' && !opts.snapshots) throw new Error('the overlayfs snapshotter needs the supervisor');
  const driver: GraphDriver = opts.driver === 'overlayfs'
    ? new SnapshotterDriver(join(opts.dataRoot, 'overlayfs'), opts.snapshots!, opts.log)
    : opts.driver === 'vfs'
    ? new VfsDriver(join(opts.dataRoot, 'vfs'))
    : opts.driver === 'btrfs'
      ? new BtrfsDriver(join(opts.dataRoot, 'btrfs'), opts.options)
      : opts.driver === 'fuse-overlayfs'
        ? new FuseOverlayDriver(join(opts.dataRoot, 'fuse-overlayfs'), opts.log)
        : new Overlay2Driver(join(opts.dataRoot, 'overlay2'), opts.log, opts.options, opts.idMap && rootPair(opts.idMap));
  const store = new Store(opts, driver);
  await store.open();
  opts.log.info({ driver: driver.name, layers: store.list().length }, 'layer store ready');
  return store;
}
