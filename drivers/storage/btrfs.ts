// The btrfs graph driver, laid out like the reference daemon's: every layer is a subvolume under
// <home>/subvolumes/<id>, an image layer a snapshot of its parent's with its own changes applied
// (whiteouts are deletions, as vfs's: ./vfs.ts has the walk-based diff both share), a container's
// layer a snapshot of its image's top layer. Needs the data root on btrfs ("prerequisites for
// driver not satisfied (wrong filesystem?)" otherwise, as the reference refuses it) and the
// `btrfs` tool of btrfs-progs, called through execa.
import { execa } from 'execa';
import { statfsSync } from 'node:fs';
import { lstat, mkdir, rm } from 'node:fs/promises';
import { failedPrecondition, internal } from '../../lib/errors.ts';
import { humanSize } from '../../lib/units.ts';
import { storageOptSize, type DriverOptions } from './storage-opt.ts';
import { EXECA_DEFAULTS } from '../sys/exec.ts';
import { VfsDriver } from './vfs.ts';

const BTRFS_MAGIC = 0x9123683e;
/** A subvolume's root directory has inode 256 (BTRFS_FIRST_FREE_OBJECTID). */
const SUBVOLUME_INO = 256;

async function btrfs(args: string[]): Promise<string> {
  try {
    return (await execa('btrfs', args, { ...EXECA_DEFAULTS, stdin: 'ignore' })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; code?: string; shortMessage?: string };
    if (e.code === 'ENOENT') throw failedPrecondition('btrfs: the btrfs tool is not installed (Debian: btrfs-progs)');
    throw internal(`btrfs ${args.slice(0, 2).join(' ')}: ${e.stderr?.trim() || e.shortMessage || String(err)}`, err);
  }
}

export class BtrfsDriver extends VfsDriver {
  override readonly name = 'btrfs';
  private version = '';
  private readonly minSpace: number;
  /** Quotas enabled on the file system (at the first sized container, as the reference does). */
  private quotas = false;

  constructor(home: string, opts: DriverOptions = {}) {
    super(home, 'subvolumes');
    this.minSpace = opts.minSpace ?? 0;
  }

  override async init(): Promise<void> {
    await mkdir(this.home, { recursive: true, mode: 0o710 });
    if (statfsSync(this.home).type !== BTRFS_MAGIC) throw failedPrecondition('error initializing graphdriver: prerequisites for driver not satisfied (wrong filesystem?)');
    const v = /v(\d[\w.-]*)/.exec(await btrfs(['--version']));
    this.version = v ? `Btrfs v${v[1]}` : '';
    await super.init();
  }

  override status(): Array<[string, string]> {
    return this.version ? [['Build Version', this.version], ['Library Version', '102']] : [];
  }

  /**
   * A container's `size` is a qgroup limit on its subvolume (quotas enabled at the first one). As
   * the reference, the options are read only when `size` is among them.
   */
  override async create(id: string, parent: string | null, storageOpt?: Readonly<Record<string, string>>): Promise<void> {
    const size = storageOpt && 'size' in storageOpt ? storageOptSize(storageOpt, (key) => `Unknown option ${key}`) : undefined;
    if (size !== undefined) {
      if (size <= 0) throw internal(`btrfs: invalid storage size: ${humanSize(size)}`);
      if (size < this.minSpace) throw internal(`btrfs: storage size cannot be less than ${humanSize(this.minSpace)}`);
    }
    const dir = this.dir(id);
    if (parent === null) await btrfs(['subvolume', 'create', dir]);
    else await btrfs(['subvolume', 'snapshot', this.dir(parent), dir]);
    if (size === undefined) return;
    if (!this.quotas) {
      await btrfs(['quota', 'enable', this.home]);
      this.quotas = true;
    }
    try {
      await btrfs(['qgroup', 'limit', String(size), dir]);
    } catch (err) {
      // Below what the snapshot already refers to: the reference's words for the ioctl's EDQUOT.
      if (/quota exceeded/i.test(String((err as Error).message))) throw internal('Failed to limit qgroup for &{}: disk quota exceeded', err);
      throw err;
    }
  }

  override async remove(id: string): Promise<void> {
    const dir = this.dir(id);
    const st = await lstat(dir).catch(() => null);
    if (!st) return;
    // A plain directory (a create that failed half-way) is removed as one.
    if (st.ino === SUBVOLUME_INO) await btrfs(['subvolume', 'delete', dir]);
    await rm(dir, { recursive: true, force: true });
  }
}
