// The vfs graph driver: every layer is a full copy of its parent (reflinked where the file system
// can) with its own changes applied; whiteouts are plain deletions. Slow and big, but works on any
// file system and needs no mounts. The btrfs driver (./btrfs.ts) is the same layout with
// subvolumes and snapshots instead of copies.
import { execa } from 'execa';
import { lstat, mkdir, readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { internal } from '../../lib/errors.ts';
import { EXECA_DEFAULTS } from '../sys/exec.ts';
import { diffTar, naiveChanges, walk } from './diff-walk.ts';
import type { OwnerMap, WalkEntry } from './diff-walk.ts';
import type { GraphDriver } from './graph-driver.ts';
import { NO_QUOTA, storageOptSize } from './storage-opt.ts';
import type { ChangeEntry } from './types.ts';

export class VfsDriver implements GraphDriver {
  readonly name: GraphDriver['name'] = 'vfs';
  readonly whiteouts = 'delete';
  readonly home: string;
  /** The directory under home that holds one directory per layer. */
  protected readonly layers: string;

  constructor(home: string, layers = 'dir') {
    this.home = resolve(home);
    this.layers = layers;
  }

  async init(): Promise<void> {
    await mkdir(join(this.home, this.layers), { recursive: true, mode: 0o700 });
  }

  status(): Array<[string, string]> {
    return [];
  }

  protected dir(id: string): string {
    return join(this.home, this.layers, id);
  }

  unpackDir(id: string): string {
    return this.dir(id);
  }

  async create(id: string, parent: string | null, storageOpt?: Readonly<Record<string, string>>): Promise<void> {
    // A size needs quotas on the backing file system (xfs's project quotas): not here.
    if (storageOpt && storageOptSize(storageOpt, (key) => `Storage opt ${key} not supported`) !== undefined) throw internal(NO_QUOTA);
    const dir = this.dir(id);
    await mkdir(dir, { mode: 0o755 });
    if (parent === null) return;
    try {
      // No deadline: the copy takes as long as the parent layer is large, and GraphDriver.create
      // has no AbortSignal to give. stdin stays a pipe and no newline is stripped, as execFile did.
      await execa('cp', ['-a', '--reflink=auto', `${this.dir(parent)}/.`, `${dir}/`], { ...EXECA_DEFAULTS, stripFinalNewline: false, maxBuffer: 1024 * 1024 });
    } catch (err) {
      throw internal(`vfs: copying layer ${parent}: ${(err as { stderr?: string }).stderr?.trim() || String(err)}`, err);
    }
  }

  async remove(id: string): Promise<void> {
    await rm(this.dir(id), { recursive: true, force: true });
  }

  async mount(id: string): Promise<string> {
    return this.dir(id);
  }

  async unmount(): Promise<void> {}

  async isMounted(): Promise<boolean> {
    return false;
  }

  async *diff(id: string, parent: string | null, owner?: OwnerMap): AsyncIterable<Buffer> {
    const root = this.dir(id);
    const changes = await naiveChanges(root, parent === null ? null : this.dir(parent));
    const changed = new Set(changes.filter((c) => c.Kind !== 2).map((c) => c.Path.slice(1)));
    const deleted = changes.filter((c) => c.Kind === 2).map((c) => c.Path.slice(1));
    async function* entries(): AsyncGenerator<WalkEntry> {
      for await (const e of walk(root)) if (changed.has(e.rel)) yield e;
    }
    yield* diffTar({ root, entries: entries(), deleted, owner });
  }

  changes(id: string, parent: string | null): Promise<ChangeEntry[]> {
    return naiveChanges(this.dir(id), parent === null ? null : this.dir(parent));
  }

  async diffSize(id: string, parent: string | null): Promise<number> {
    let size = 0;
    for (const c of await this.changes(id, parent)) {
      if (c.Kind === 2) continue;
      const st = await lstat(join(this.dir(id), c.Path));
      if (st.isFile()) size += st.size;
    }
    return size;
  }

  metadata(): Record<string, string> {
    return {};
  }

  async list(): Promise<string[]> {
    return readdir(join(this.home, this.layers));
  }
}
