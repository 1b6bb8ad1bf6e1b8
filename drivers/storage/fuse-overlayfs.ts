// The fuse-overlayfs graph driver: overlay2's layout (./overlay2.ts) mounted by the fuse-overlayfs
// program instead of the kernel's overlay, so it works where the kernel's cannot stack (a data
// root that is itself on overlayfs) or is not there. A layer's merged directory is a FUSE mount
// (allow_other: a container's non-root users see it too), unmounted like overlay2's. Whiteouts are
// the tar's `.wh.` files, in image layers and in what fuse-overlayfs writes on such a root. It takes no
// storage options, as the reference's: a container's are refused in its words.
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { failedPrecondition, internal } from '../../lib/errors.ts';
import { EXECA_DEFAULTS } from '../sys/exec.ts';
import { Overlay2Driver } from './overlay2.ts';

const BINARY = 'fuse-overlayfs';

export class FuseOverlayDriver extends Overlay2Driver {
  override readonly name = 'fuse-overlayfs';
  /** The tar's own `.wh.` files: fuse-overlayfs reads them, and they survive an overlay backing file system. */
  override readonly whiteouts = 'files';

  protected override async supported(): Promise<void> {
    if (!existsSync('/dev/fuse')) throw failedPrecondition('error initializing graphdriver: driver not supported: fuse-overlayfs (no /dev/fuse)');
    try {
      await execa(BINARY, ['--version'], { ...EXECA_DEFAULTS, stdin: 'ignore' });
    } catch {
      throw failedPrecondition(`error initializing graphdriver: driver not supported: fuse-overlayfs (${BINARY} is not installed: Debian's fuse-overlayfs)`);
    }
  }

  override status(): Array<[string, string]> {
    return [];
  }

  override async create(id: string, parent: string | null, storageOpt?: Readonly<Record<string, string>>): Promise<void> {
    if (storageOpt && Object.keys(storageOpt).length) throw internal('--storage-opt is not supported');
    await super.create(id, parent);
  }

  override async mount(id: string): Promise<string> {
    const dir = this.dir(id);
    const lowers = await this.lowerLinks(id);
    if (lowers.length === 0) return join(dir, 'diff');
    const merged = join(dir, 'merged');
    if (await this.isMounted(id)) return merged;
    const opts = `lowerdir=${lowers.map((l) => join(this.home, l)).join(':')},upperdir=${join(dir, 'diff')},workdir=${join(dir, 'work')},allow_other`;
    try {
      await execa(BINARY, ['-o', opts, merged], { ...EXECA_DEFAULTS, stdin: 'ignore' });
    } catch (err) {
      throw internal(`fuse-overlayfs: mounting ${id}: ${(err as { stderr?: string }).stderr?.trim() || String(err)}`, err);
    }
    return merged;
  }
}
