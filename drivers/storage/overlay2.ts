// The overlay2 graph driver, laid out like the reference daemon's:
//   <home>/<id>/diff    the layer's own files (overlay upper of RW layers)
//   <home>/<id>/link    the short name of this layer under <home>/l/
//   <home>/<id>/lower   "l/<short>:l/<short>..." of every layer below, nearest first
//   <home>/<id>/work, merged
//   <home>/l/<short> -> ../<id>/diff, so lowerdir options stay short enough for one page.
import { randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync, statfsSync } from 'node:fs';
import { chmod, chown, mkdir, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { failedPrecondition, internal, notFound } from '../../lib/errors.ts';
import { MNT_DETACH, mountAsync, mountWithCwd, umount } from '../sys/syscalls.ts';
import { diffTar, dirSize, overlayChanges, walk, type OwnerMap } from './diff-walk.ts';
import type { GraphDriver } from './graph-driver.ts';
import type { WhiteoutMode } from './unpack.ts';
import { NO_QUOTA, storageOptSize, type DriverOptions } from './storage-opt.ts';
import type { ChangeEntry } from './types.ts';

const LINK_DIR = 'l';
const PAGE = 4096;

/** What a layer's `link` and `lower` files hold. */
interface LayerNames {
  link: string;
  lower: string;
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
/** 26 random base32 characters, as the reference daemon names its short links. */
function shortId(): string {
  const b = randomBytes(26);
  let s = '';
  for (const x of b) s += BASE32[x & 31];
  return s;
}

const FS_NAMES: Record<number, string> = {
  0xef53: 'extfs', 0x58465342: 'xfs', 0x9123683e: 'btrfs', 0x01021994: 'tmpfs', 0x794c7630: 'overlayfs',
  0x2fc12fc1: 'zfs', 0xf2f52010: 'f2fs', 0x6969: 'nfs', 0x65735546: 'fuse',
};

/** Whether the mount `path` is on has project quotas on (xfs's prjquota, pquota). */
function projectQuotasOn(path: string): boolean {
  let best = { point: '', opts: '' };
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const f = line.split(' ');
    const point = f[4] ?? '';
    const sep = f.indexOf('-');
    if (sep < 0 || !(path === point || path.startsWith(point.endsWith('/') ? point : `${point}/`)) || point.length < best.point.length) continue;
    best = { point, opts: f[sep + 3] ?? '' };
  }
  return /(^|,)(prjquota|pquota|pqnoenforce)(,|$)/.test(best.opts);
}

function readParam(name: string): string | null {
  try {
    return readFileSync(`/sys/module/overlay/parameters/${name}`, 'utf8').trim();
  } catch {
    return null;
  }
}

export class Overlay2Driver implements GraphDriver {
  readonly name: GraphDriver['name'] = 'overlay2';
  readonly whiteouts: WhiteoutMode = 'overlay';
  readonly home: string;
  private readonly log: Logger;
  private backingFs = 'unknown';
  private readonly names = new Map<string, LayerNames>();
  /** Mounts say index=off where the kernel's overlay knows the option (read once, not per mount). */
  private readonly indexOff = readParam('index') !== null ? ',index=off' : '';

  private readonly opts: DriverOptions;
  /** The backing file system is xfs mounted with project quotas (what a size needs). */
  private projectQuotas = false;

  /** --userns-remap: the host ids of the containers' root (who owns a layer's root and its mount point). */
  private readonly remapRoot: { uid: number; gid: number } | undefined;

  constructor(home: string, log: Logger, opts: DriverOptions = {}, remapRoot?: { uid: number; gid: number }) {
    this.home = resolve(home);
    this.log = log;
    this.opts = opts;
    this.remapRoot = remapRoot;
  }

  async init(): Promise<void> {
    await mkdir(join(this.home, LINK_DIR), { recursive: true, mode: 0o700 });
    // A remapped container's root reaches its merged dir through here (as the reference: root and its group).
    if (this.remapRoot) await this.groupTraversable(this.home);
    const type = statfsSync(this.home).type;
    this.backingFs = FS_NAMES[type] ?? `<unknown> (0x${type.toString(16)})`;
    await this.supported(this.backingFs);
    // Links whose layer is gone (crash between the two removals) are dropped.
    for (const name of await readdir(join(this.home, LINK_DIR))) {
      const target = await readlink(join(this.home, LINK_DIR, name)).catch(() => null);
      const id = target?.split('/')[1];
      if (!id || !(await readFile(join(this.home, id, 'link'), 'utf8').catch(() => null))) {
        await rm(join(this.home, LINK_DIR, name), { force: true });
      }
    }
  }

  /** What the kernel's overlay needs: the overlay file system, a backing one it can stack on, quotas for a size. */
  protected async supported(backingFs: string): Promise<void> {
    const fsList = await readFile('/proc/filesystems', 'utf8').catch(() => '');
    if (!/\toverlay$/m.test(fsList)) throw failedPrecondition('error initializing graphdriver: driver not supported: overlay2');
    if (backingFs === 'overlayfs') throw failedPrecondition('error initializing graphdriver: overlay2 is not supported over overlayfs');
    this.projectQuotas = backingFs === 'xfs' && projectQuotasOn(this.home);
    if (this.opts.size) {
      if (backingFs !== 'xfs') throw failedPrecondition(`error initializing graphdriver: Storage Option overlay2.size only supported for backingFS XFS. Found ${backingFs}`);
      if (!this.projectQuotas) throw failedPrecondition(`error initializing graphdriver: Storage option overlay2.size not supported. Filesystem does not support Project Quota: ${NO_QUOTA}`);
      throw failedPrecondition('not supported by this daemon yet: --storage-opt overlay2.size on xfs with project quotas');
    }
  }

  status(): Array<[string, string]> {
    return [
      ['Backing Filesystem', this.backingFs],
      ['Supports d_type', 'true'],
      ['Using metacopy', readParam('metacopy') === 'Y' ? 'true' : 'false'],
      ['Native Overlay Diff', 'true'],
      ['userxattr', 'false'],
    ];
  }

  protected dir(id: string): string {
    return join(this.home, id);
  }

  unpackDir(id: string): string {
    return join(this.dir(id), 'diff');
  }

  async create(id: string, parent: string | null, storageOpt?: Readonly<Record<string, string>>): Promise<void> {
    if (storageOpt && Object.keys(storageOpt).length) {
      storageOptSize(storageOpt, (key) => `Unknown option ${key}`);
      // A size is a project quota on xfs mounted with pquota: not on this backing file system.
      throw internal(this.projectQuotas ? `not supported by this daemon yet: --storage-opt size on xfs with project quotas` : "--storage-opt is supported only for overlay over xfs with 'pquota' mount option");
    }
    const dir = this.dir(id);
    await mkdir(dir, { mode: 0o710 });
    if (this.remapRoot) await this.groupTraversable(dir);
    const link = shortId();
    // Independent of each other: made together, each a round trip to the thread pool. A crash
    // in between leaves a link without its layer (dropped by init) or a directory no record
    // names (an orphan the layer store removes on start).
    await Promise.all([
      this.mkdirRoot(join(dir, 'diff'), 0o755),
      symlink(join('..', id, 'diff'), join(this.home, LINK_DIR, link)),
      writeFile(join(dir, 'link'), link),
    ]);
    this.names.set(id, { link, lower: '' });
    if (parent !== null) await this.attach(id, parent);
  }

  async attach(id: string, parent: string): Promise<void> {
    const dir = this.dir(id);
    const above = await this.namesOf(parent);
    const lower = [`${LINK_DIR}/${above.link}`, ...(above.lower ? above.lower.split(':') : [])].join(':');
    await Promise.all([
      writeFile(join(dir, 'lower'), lower),
      this.mkdirRoot(join(dir, 'work'), 0o700),
      this.mkdirRoot(join(dir, 'merged'), 0o700),
    ]);
    const known = this.names.get(id);
    if (known) this.names.set(id, { link: known.link, lower });
  }

  /** A directory the containers' root owns (the host's root without a remap). */
  private async mkdirRoot(path: string, mode: number): Promise<void> {
    await mkdir(path, { mode });
    if (this.remapRoot) await chown(path, this.remapRoot.uid, this.remapRoot.gid);
  }

  /** root:<remapped root's group> 0710: the remapped root may pass, nobody else may list. */
  private async groupTraversable(path: string): Promise<void> {
    await chown(path, 0, this.remapRoot!.gid);
    await chmod(path, 0o710);
  }

  async remove(id: string): Promise<void> {
    const dir = this.dir(id);
    const merged = join(dir, 'merged');
    if (await mountedOverlay(merged)) await umount(merged, MNT_DETACH);
    const link = this.names.get(id)?.link ?? (await readFile(join(dir, 'link'), 'utf8').catch(() => null))?.trim();
    this.names.delete(id);
    await Promise.all([
      link && /^[A-Z2-7]{26}$/.test(link) ? rm(join(this.home, LINK_DIR, link), { force: true }) : undefined,
      rm(dir, { recursive: true, force: true }),
    ]);
  }

  /**
   * A layer's short link name and the links below it, read once: they never change once written
   * (a layer unpacked before its parent gets its lower chain by attach, which updates this).
   */
  private async namesOf(id: string): Promise<LayerNames> {
    const known = this.names.get(id);
    if (known) return known;
    const dir = this.dir(id);
    const [link, lower] = await Promise.all([
      readFile(join(dir, 'link'), 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') throw notFound(`layer ${id} does not exist`);
        throw err;
      }),
      readFile(join(dir, 'lower'), 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return '';
        throw err;
      }),
    ]);
    const names = { link: link.trim(), lower };
    this.names.set(id, names);
    return names;
  }

  protected async lowerLinks(id: string): Promise<string[]> {
    const { lower } = await this.namesOf(id);
    return lower ? lower.split(':') : [];
  }

  /** Absolute diff dirs of the layers below `id`, nearest first. */
  private async lowerDiffs(id: string): Promise<string[]> {
    const out: string[] = [];
    for (const l of await this.lowerLinks(id)) {
      const target = await readlink(join(this.home, l));
      out.push(resolve(this.home, LINK_DIR, target));
    }
    return out;
  }

  async mount(id: string): Promise<string> {
    const dir = this.dir(id);
    const lowers = await this.lowerLinks(id);
    // Nothing below: the diff dir is the root, as the reference daemon does for a parentless layer.
    if (lowers.length === 0) return join(dir, 'diff');
    const merged = join(dir, 'merged');
    if (await mountedOverlay(merged)) return merged;
    const abs = `lowerdir=${lowers.map((l) => join(this.home, l)).join(':')},upperdir=${join(dir, 'diff')},workdir=${join(dir, 'work')}${this.indexOff}`;
    if (abs.length < PAGE - 1) {
      await mountAsync('overlay', merged, 'overlay', 0, abs);
    } else {
      // Relative to <home>: "l/<26 chars>" per layer keeps even very deep images under one page.
      const rel = `lowerdir=${lowers.join(':')},upperdir=${join(id, 'diff')},workdir=${join(id, 'work')}${this.indexOff}`;
      if (rel.length >= PAGE - 1) throw failedPrecondition(`too many layers to mount ${id} (${lowers.length})`);
      await mountWithCwd('overlay', merged, 'overlay', rel, this.home);
    }
    this.log.debug({ id, layers: lowers.length }, 'mounted overlay');
    return merged;
  }

  async unmount(id: string): Promise<void> {
    const merged = join(this.dir(id), 'merged');
    // Not mounted (EINVAL) or no such directory (a parentless layer) is no error of umount's:
    // no stats first to find out.
    try {
      await umount(merged);
    } catch {
      // Busy: detach so the daemon can carry on; the kernel frees it when the last user goes.
      await umount(merged, MNT_DETACH);
    }
  }

  isMounted(id: string): Promise<boolean> {
    return mountedOverlay(join(this.dir(id), 'merged'));
  }

  async *diff(id: string, _parent?: string | null, owner?: OwnerMap): AsyncIterable<Buffer> {
    const root = this.unpackDir(id);
    yield* diffTar({ root, entries: walk(root), owner });
  }

  async changes(id: string): Promise<ChangeEntry[]> {
    return overlayChanges(this.unpackDir(id), await this.lowerDiffs(id), this.whiteouts === 'files');
  }

  diffSize(id: string): Promise<number> {
    return dirSize(this.unpackDir(id));
  }

  metadata(id: string): Record<string, string> {
    const dir = this.dir(id);
    const out: Record<string, string> = {};
    let lower = '';
    try {
      lower = readFileSync(join(dir, 'lower'), 'utf8');
    } catch {
      // parentless layer
    }
    if (lower) {
      const diffs: string[] = [];
      for (const l of lower.split(':')) {
        try {
          diffs.push(resolve(this.home, LINK_DIR, readlinkSync(join(this.home, l))));
        } catch {
          // a broken link is reported by mount, not by inspect
        }
      }
      out.LowerDir = diffs.join(':');
    }
    out.MergedDir = join(dir, 'merged');
    out.UpperDir = join(dir, 'diff');
    out.WorkDir = join(dir, 'work');
    return out;
  }

  async list(): Promise<string[]> {
    return (await readdir(this.home)).filter((n) => n !== LINK_DIR);
  }
}

/**
 * Whether an overlay is mounted on `merged`: a mount there has a device of its own, unlike the
 * directory holding it. Two stats instead of reading and parsing /proc/self/mountinfo (which
 * grows with every mount on the host) on each mount, unmount and removal.
 */
async function mountedOverlay(merged: string): Promise<boolean> {
  const [m, parent] = await Promise.all([stat(merged).catch(() => null), stat(dirname(merged)).catch(() => null)]);
  return !!m && !!parent && m.dev !== parent.dev;
}
