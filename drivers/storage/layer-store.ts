// The layer store: content-addressed image layers and per-container read-write layers on top of a
// graph driver (overlay2 or vfs). Metadata lives in <dataRoot>/image/<driver>/layerdb:
//   sha256/<chain hex>/layer.json   LayerInfo + the driver's cache id
//   sha256/<chain hex>/blob         the blob exactly as given to applyLayer (for push and save)
//   mounts/<container id>/mount.json  a container's RW layer (cache id, parent chain id)
//   tmp/                            staging; a directory is renamed into place only once complete,
//                                   so whatever is left here after a crash is removed on start.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { conflict, EngineError, invalidArgument, notFound } from '../../lib/errors.ts';
import { syncfs } from '../sys/fs-syscalls.ts';
import { decompress, peek, sniff } from './compression.ts';
import type { GraphDriver } from './graph-driver.ts';
import { Overlay2Driver } from './overlay2.ts';
import { readTar } from './tar-reader.ts';
import type { ApplyOptions, BlobMedia, ChangeEntry, LayerInfo, LayerStore, LayerStoreOptions } from './types.ts';
import { unpack } from './unpack.ts';
import { VfsDriver } from './vfs.ts';

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

/** Write a file and flush it to disk. */
async function writeDurable(path: string, data: string): Promise<void> {
  const fh = await open(path, 'wx', 0o600);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
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

  constructor(opts: LayerStoreOptions, driver: GraphDriver) {
    this.opts = opts;
    this.driver = driver;
    this.driverName = driver.name;
    this.log = opts.log;
    this.db = join(opts.dataRoot, 'image', driver.name, 'layerdb');
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

  async applyLayer(parentChainId: string | null, blob: Readable, opts: ApplyOptions = {}): Promise<LayerInfo> {
    if (parentChainId !== null && !this.layers.has(parentChainId)) {
      blob.destroy();
      throw notFound(`parent layer ${parentChainId} does not exist`);
    }
    if (opts.expectedDiffId !== undefined && !DIGEST.test(opts.expectedDiffId)) {
      blob.destroy();
      throw invalidArgument(`invalid diff id ${JSON.stringify(opts.expectedDiffId)}`);
    }
    const known = opts.expectedDiffId ? this.chainIdOf(parentChainId, opts.expectedDiffId) : null;
    if (known === null) return this.unpackNew(parentChainId, blob, opts);
    // Concurrent applies of one layer: the first unpacks, the others verify their bytes and share it.
    const running = this.applying.get(known);
    if (running) await running.catch(() => {});
    if (this.layers.has(known)) {
      await this.consume(blob, null, null, opts);
      return this.get(known)!;
    }
    const p = this.unpackNew(parentChainId, blob, opts);
    this.applying.set(known, p);
    try {
      return await p;
    } finally {
      if (this.applying.get(known) === p) this.applying.delete(known);
    }
  }

  private async unpackNew(parentChainId: string | null, blob: Readable, opts: ApplyOptions): Promise<LayerInfo> {
    const cacheId = newCacheId();
    const stage = this.stage('layer');
    let committed = false;
    try {
      await mkdir(stage, { mode: 0o700 });
      await this.driver.create(cacheId, this.cacheIdOf(parentChainId));
      const r = await this.consume(blob, join(stage, 'blob'), this.driver.unpackDir(cacheId), opts);
      const chainId = this.chainIdOf(parentChainId, r.diffId);
      const existing = this.layers.get(chainId);
      if (existing) return { ...existing.info };
      const info: LayerInfo = {
        chainId, diffId: r.diffId, parent: parentChainId, size: r.size,
        blobMedia: r.media, blobDigest: r.blobDigest, blobSize: r.blobSize,
      };
      const rec: LayerRecord = { info, cacheId };
      await writeDurable(join(stage, 'layer.json'), `${JSON.stringify(rec)}\n`);
      // One syncfs covers the unpacked files, the driver's link files and the blob.
      const fh = await open(this.driver.unpackDir(cacheId), 'r');
      try {
        syncfs(fh.fd);
      } finally {
        await fh.close();
      }
      await fsyncPath(stage);
      // A concurrent apply of the same content may have committed while we were syncing.
      if (this.layers.has(chainId)) return this.get(chainId)!;
      await rename(stage, this.layerDir(chainId));
      await fsyncPath(join(this.db, 'sha256'));
      this.layers.set(chainId, rec);
      committed = true;
      this.log.debug({ chainId, diffId: r.diffId, size: r.size, media: r.media }, 'layer applied');
      return { ...info };
    } finally {
      if (!committed) {
        await this.driver.remove(cacheId).catch((err) => this.log.warn({ err, cacheId }, 'removing failed layer'));
        await rm(stage, { recursive: true, force: true });
      }
    }
  }

  /**
   * Read the whole blob once: hash it and keep it (blobFile), decompress, hash the tar and unpack
   * it (dest). Verifies expectedDiffId and blobDigest.
   */
  private async consume(
    blob: Readable, blobFile: string | null, dest: string | null, opts: ApplyOptions,
  ): Promise<{ diffId: string; media: BlobMedia; blobDigest: string; blobSize: number; size: number }> {
    const blobHash = createHash('sha256');
    const diffHash = createHash('sha256');
    let blobSize = 0;
    let size = 0;
    let media: BlobMedia = 'none';
    let tarBytes: AsyncIterable<Buffer> | null = null;
    const fh = blobFile ? await open(blobFile, 'wx', 0o600) : null;
    const signal = opts.signal;
    async function* tap(): AsyncGenerator<Buffer> {
      for await (const c of blob) {
        signal?.throwIfAborted();
        const chunk = c as Buffer;
        blobHash.update(chunk);
        blobSize += chunk.length;
        if (fh) await fh.write(chunk);
        yield chunk;
      }
    }
    async function* hashed(src: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
      for await (const c of src) {
        diffHash.update(c);
        yield c;
      }
    }
    try {
      signal?.throwIfAborted();
      const { head, all } = await peek(tap(), 4);
      media = sniff(head);
      tarBytes = decompress(all, media, this.opts.usePigz);
      if (dest) {
        size = (await unpack(readTar(hashed(tarBytes)), { root: dest, whiteouts: this.driver.whiteouts, signal })).size;
      } else {
        for await (const _ of hashed(tarBytes)) {
          // hashing only
        }
      }
      if (fh) await fh.sync();
    } catch (err) {
      if (tarBytes && 'destroy' in tarBytes) (tarBytes as Duplex).destroy();
      blob.destroy();
      throw asBlobError(err);
    } finally {
      await fh?.close();
    }
    const diffId = `sha256:${diffHash.digest('hex')}`;
    const blobDigest = `sha256:${blobHash.digest('hex')}`;
    if (opts.expectedDiffId && opts.expectedDiffId !== diffId) {
      throw invalidArgument(`layer diff id mismatch: expected ${opts.expectedDiffId}, got ${diffId}`);
    }
    if (opts.blobDigest && opts.blobDigest !== blobDigest) {
      throw invalidArgument(`layer blob digest mismatch: expected ${opts.blobDigest}, got ${blobDigest}`);
    }
    return { diffId, media, blobDigest, blobSize, size };
  }

  async removeLayer(chainId: string): Promise<void> {
    await this.withLock(`layer:${chainId}`, async () => {
      const rec = this.layers.get(chainId);
      if (!rec) return;
      for (const l of this.layers.values()) {
        if (l.info.parent === chainId) throw conflict(`layer ${chainId} is in use by layer ${l.info.chainId}`);
      }
      for (const rw of this.rws.values()) {
        if (rw.parent === chainId) throw conflict(`layer ${chainId} is in use by container ${rw.id}`);
      }
      this.layers.delete(chainId);
      // Moved out of sha256/ first: after a crash the rest is a leftover in tmp/ and an orphan dir.
      const trash = this.stage('removed');
      await rename(this.layerDir(chainId), trash);
      await this.driver.remove(rec.cacheId);
      await rm(trash, { recursive: true, force: true });
    });
  }

  layerTar(chainId: string): Readable {
    const rec = this.layers.get(chainId);
    if (!rec) throw notFound(`layer ${chainId} does not exist`);
    const blobFile = join(this.layerDir(chainId), 'blob');
    // The kept blob reproduces the original tar byte for byte, so its digest is the diff id.
    if (existsSync(blobFile)) {
      return Readable.from(decompress(createReadStream(blobFile), rec.info.blobMedia, this.opts.usePigz), { objectMode: false });
    }
    return Readable.from(this.driver.diff(rec.cacheId, this.cacheIdOf(rec.info.parent)), { objectMode: false });
  }

  layerBlob(chainId: string): Readable {
    if (!this.layers.has(chainId)) throw notFound(`layer ${chainId} does not exist`);
    return createReadStream(join(this.layerDir(chainId), 'blob'));
  }

  private rw(id: string): RWRecord {
    const rw = this.rws.get(id);
    if (!rw) throw notFound(`RW layer for ${id} does not exist`);
    return rw;
  }

  async createRW(id: string, parentChainId: string | null): Promise<void> {
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
        await mkdir(stage, { mode: 0o700 });
        await this.driver.create(cacheId, parentCache);
        const rec = { id, cacheId, parent: parentChainId };
        await writeDurable(join(stage, 'mount.json'), `${JSON.stringify(rec)}\n`);
        await fsyncPath(stage);
        await rename(stage, this.rwDir(id));
        await fsyncPath(join(this.db, 'mounts'));
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
      await this.driver.remove(rw.cacheId);
      await rm(trash, { recursive: true, force: true });
    });
  }

  hasRW(id: string): boolean {
    return this.rws.has(id);
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
    return Readable.from(this.driver.diff(rw.cacheId, this.cacheIdOf(rw.parent)), { objectMode: false });
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
  const driver: GraphDriver = opts.driver === 'vfs'
    ? new VfsDriver(join(opts.dataRoot, 'vfs'))
    : new Overlay2Driver(join(opts.dataRoot, 'overlay2'), opts.log);
  const store = new Store(opts, driver);
  await store.open();
  opts.log.info({ driver: driver.name, layers: store.list().length }, 'layer store ready');
  return store;
}
