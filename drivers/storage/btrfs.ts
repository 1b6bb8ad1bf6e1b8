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

  constructor(home: string) {
    super(home, 'subvolumes');
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

  override async create(id: string, parent: string | null): Promise<void> {
    const dir = this.dir(id);
    if (parent === null) await btrfs(['subvolume', 'create', dir]);
    else await btrfs(['subvolume', 'snapshot', this.dir(parent), dir]);
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
