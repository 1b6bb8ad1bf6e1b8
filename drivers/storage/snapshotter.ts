// The supervisor's snapshotter as a graph driver (the feature `supervisor-snapshotter`): every
// layer directory is a snapshot of containerd's overlayfs snapshotter instead of a directory of
// our own. An image layer is prepared (an active snapshot) on its parent, unpacked into the
// snapshot's upper directory with overlay whiteouts (as containerd's own applier does), and
// committed under its name the first time something is made on top of it; a container's layer
// stays an active snapshot. Each snapshot carries the gc.root label: the layer store counts the
// references, so containerd's garbage collector must never take one on its own. The layer store
// keeps the metadata (image/overlayfs/layerdb); `<home>/<id>.json` remembers where each snapshot's
// directories are, so the synchronous parts of the driver interface need no round trip.
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { internal, isCode, notFound } from '../../lib/errors.ts';
import { MNT_DETACH, mountAsync, umount } from '../sys/syscalls.ts';
import { diffTar, dirSize, overlayChanges, walk, type OwnerMap } from './diff-walk.ts';
import type { GraphDriver } from './graph-driver.ts';
import type { ChangeEntry } from './types.ts';
import type { WhiteoutMode } from './unpack.ts';

/** A mount as the snapshotter answers it (containerd.types.Mount). */
export interface SnapshotMount {
  type: string;
  source: string;
  options: string[];
}

/** What the driver needs of the supervisor's snapshots service (drivers/supervisor/storage.ts, wired by cmd). */
export interface SnapshotPort {
  prepare(key: string, parent: string, labels: Record<string, string>): Promise<SnapshotMount[]>;
  commit(name: string, key: string, labels: Record<string, string>): Promise<void>;
  remove(key: string): Promise<void>;
  /** Names and keys of every snapshot. */
  list(): Promise<string[]>;
}

/** The snapshotter's name in containerd and the driver's name in `docker info`. */
export const SNAPSHOTTER = 'overlayfs';
/** What keeps a snapshot or a blob from containerd's collector: the layer store counts their references. */
export const GC_ROOT_LABEL = { 'containerd.io/gc.root': new Date(0).toISOString() };
const activeKey = (id: string) => `engine/active/${id}`;
const layerName = (id: string) => `engine/layer/${id}`;
const ID_OF = /^engine\/(?:active|layer)\/([0-9a-f]{64})$/;
const PAGE = 4096;

interface SnapshotPaths {
  /** The snapshot's own files (its upper directory). */
  dir: string;
  /** The directories below it, nearest first. */
  lowers: string[];
  work: string;
  committed: boolean;
}

/** The upper, lower and work directories of a prepared snapshot's mounts. */
export function pathsOfMounts(mounts: SnapshotMount[]): Omit<SnapshotPaths, 'committed'> {
  const m = mounts[0];
  if (!m) throw internal('the snapshotter answered no mount');
  if (m.type === 'bind') return { dir: m.source, lowers: [], work: '' };
  const opt = (k: string) => m.options.find((o) => o.startsWith(`${k}=`))?.slice(k.length + 1) ?? '';
  const dir = opt('upperdir');
  if (m.type !== 'overlay' || !dir) throw internal(`unexpected snapshot mount ${m.type} ${m.options.join(',')}`);
  return { dir, lowers: opt('lowerdir').split(':').filter(Boolean), work: opt('workdir') };
}

export class SnapshotterDriver implements GraphDriver {
  readonly name: GraphDriver['name'] = SNAPSHOTTER;
  readonly whiteouts: WhiteoutMode = 'overlay';
  readonly home: string;
  private readonly paths = new Map<string, SnapshotPaths>();
  private readonly committing = new Map<string, Promise<void>>();

  private readonly snapshots: SnapshotPort;
  private readonly log: Logger;

  constructor(home: string, snapshots: SnapshotPort, log: Logger) {
    this.home = resolve(home);
    this.snapshots = snapshots;
    this.log = log;
  }

  async init(): Promise<void> {
    await mkdir(this.home, { recursive: true, mode: 0o700 });
    // The snapshotter answers (the supervisor runs it): a start fails here, not at the first pull.
    await this.snapshots.list();
  }

  status(): Array<[string, string]> {
    return [['driver-type', 'io.containerd.snapshotter.v1']];
  }

  private file(id: string): string {
    return join(this.home, `${id}.json`);
  }

  private get(id: string): SnapshotPaths {
    let p = this.paths.get(id);
    if (!p) {
      try {
        p = JSON.parse(readFileSync(this.file(id), 'utf8')) as SnapshotPaths;
      } catch {
        throw notFound(`layer ${id} does not exist`);
      }
      this.paths.set(id, p);
    }
    return p;
  }

  private async save(id: string, p: SnapshotPaths): Promise<void> {
    this.paths.set(id, p);
    await writeFile(this.file(id), JSON.stringify(p));
  }

  async create(id: string, parent: string | null, storageOpt?: Readonly<Record<string, string>>): Promise<void> {
    if (storageOpt && Object.keys(storageOpt).length) throw internal(`--storage-opt is not supported by the ${SNAPSHOTTER} snapshotter`);
    if (parent !== null) await this.commit(parent);
    const mounts = await this.snapshots.prepare(activeKey(id), parent === null ? '' : layerName(parent), GC_ROOT_LABEL);
    await this.save(id, { ...pathsOfMounts(mounts), committed: false });
  }

  /** Commits a layer's snapshot (once; a parent must be committed before a snapshot is prepared on it). */
  private commit(id: string): Promise<void> {
    if (this.get(id).committed) return Promise.resolve();
    let p = this.committing.get(id);
    if (!p) {
      p = (async () => {
        await this.snapshots.commit(layerName(id), activeKey(id), GC_ROOT_LABEL).catch((err) => {
          // Committed before a crash that came ahead of the file's update.
          if (!isCode(err, 'AlreadyExists') && !isCode(err, 'NotFound')) throw err;
        });
        await this.save(id, { ...this.get(id), committed: true });
      })().finally(() => this.committing.delete(id));
      this.committing.set(id, p);
    }
    return p;
  }

  unpackDir(id: string): string {
    return this.get(id).dir;
  }

  private merged(id: string): string {
    return join(this.home, id);
  }

  async remove(id: string): Promise<void> {
    if (await this.isMounted(id)) await umount(this.merged(id), MNT_DETACH);
    for (const key of [activeKey(id), layerName(id)]) {
      await this.snapshots.remove(key).catch((err) => {
        if (!isCode(err, 'NotFound')) throw err;
      });
    }
    this.paths.delete(id);
    await Promise.all([rm(this.file(id), { force: true }), rm(this.merged(id), { recursive: true, force: true })]);
  }

  async mount(id: string): Promise<string> {
    const p = this.get(id);
    if (p.lowers.length === 0) return p.dir;
    const merged = this.merged(id);
    if (await this.isMounted(id)) return merged;
    await mkdir(merged, { recursive: true, mode: 0o700 });
    const data = `index=off,lowerdir=${p.lowers.join(':')},upperdir=${p.dir},workdir=${p.work}`;
    if (data.length >= PAGE - 1) throw internal(`too many layers to mount ${id} (${p.lowers.length})`);
    await mountAsync('overlay', merged, 'overlay', 0, data);
    this.log.debug({ id, layers: p.lowers.length }, 'mounted snapshot');
    return merged;
  }

  async unmount(id: string): Promise<void> {
    try {
      await umount(this.merged(id));
    } catch {
      await umount(this.merged(id), MNT_DETACH).catch(() => {});
    }
  }

  async isMounted(id: string): Promise<boolean> {
    const merged = this.merged(id);
    if (!existsSync(merged)) return false;
    const [m, parent] = await Promise.all([stat(merged).catch(() => null), stat(this.home).catch(() => null)]);
    return !!m && !!parent && m.dev !== parent.dev;
  }

  async *diff(id: string, _parent?: string | null, owner?: OwnerMap): AsyncIterable<Buffer> {
    const root = this.get(id).dir;
    yield* diffTar({ root, entries: walk(root), owner });
  }

  async changes(id: string): Promise<ChangeEntry[]> {
    const p = this.get(id);
    return overlayChanges(p.dir, p.lowers, false);
  }

  diffSize(id: string): Promise<number> {
    return dirSize(this.get(id).dir);
  }

  metadata(id: string): Record<string, string> {
    const p = this.get(id);
    return {
      ...(p.lowers.length ? { LowerDir: p.lowers.join(':') } : {}),
      MergedDir: p.lowers.length ? this.merged(id) : p.dir,
      UpperDir: p.dir,
      WorkDir: p.work,
    };
  }

  async list(): Promise<string[]> {
    const ids = new Set<string>();
    for (const n of await this.snapshots.list()) {
      const m = ID_OF.exec(n);
      if (m) ids.add(m[1]!);
    }
    // A file whose snapshot is gone (a crash between the two removals) goes too.
    for (const f of await readdir(this.home)) {
      const id = f.endsWith('.json') ? f.slice(0, -5) : '';
      if (id && !ids.has(id)) ids.add(id);
    }
    return [...ids];
  }
}
