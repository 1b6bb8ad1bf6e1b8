// Which storage driver a daemon runs when none is asked for (-s, the file's storage-driver,
// ENGINE_DRIVER), as the reference chooses: the one whose directory under the data root already
// holds something ("using prior storage driver"; vfs never counts, as the reference's scan skips
// it; two or more is a refusal in its words), else overlay2 where the kernel's overlay can stack on
// the data root, else fuse-overlayfs where it is installed, else vfs — each fallback said in the log.
import { existsSync, readdirSync, readFileSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { failedPrecondition } from '../../lib/errors.ts';

export type DriverName = 'overlay2' | 'vfs' | 'btrfs' | 'fuse-overlayfs';

/** The drivers a data root may have been run with, in the reference's priority order (vfs never counts). */
const PRIOR: readonly DriverName[] = ['btrfs', 'overlay2', 'fuse-overlayfs'];
const OVERLAYFS_MAGIC = 0x794c7630;

const nonEmpty = (dir: string) => {
  try {
    return readdirSync(dir).length > 0;
  } catch {
    return false;
  }
};

/** The drivers whose directory under `dataRoot` holds something. */
export function priorDrivers(dataRoot: string): DriverName[] {
  return PRIOR.filter((d) => nonEmpty(join(dataRoot, d)));
}

export interface HostFacts {
  /** The kernel has the overlay file system. */
  overlay: boolean;
  /** The data root is itself on overlayfs (the kernel's overlay cannot stack on it). */
  onOverlay: boolean;
  /** fuse-overlayfs and /dev/fuse are there. */
  fuse: boolean;
}

export function hostFacts(dataRoot: string): HostFacts {
  let onOverlay = false;
  try {
    onOverlay = statfsSync(dataRoot).type === OVERLAYFS_MAGIC;
  } catch {
    // not made yet: it is made on the file system of its parent, which the next start reads
  }
  const fs = (() => {
    try {
      return readFileSync('/proc/filesystems', 'utf8');
    } catch {
      return '';
    }
  })();
  const fuseBinary = (process.env.PATH ?? '/usr/bin:/bin').split(':').some((d) => d && existsSync(join(d, 'fuse-overlayfs')));
  return { overlay: /\toverlay$/m.test(fs), onOverlay, fuse: fuseBinary && existsSync('/dev/fuse') };
}

/** The driver to run: `asked` when given, else as the reference chooses (above). */
export function chooseDriver(asked: string, dataRoot: string, log: Pick<Logger, 'info' | 'warn'>, facts: HostFacts = hostFacts(dataRoot)): string {
  if (asked) return asked;
  const prior = priorDrivers(dataRoot);
  if (prior.length > 1) {
    throw failedPrecondition(`error initializing graphdriver: ${dataRoot} contains several valid graphdrivers: ${prior.join(', ')}; Please cleanup or explicitly choose storage driver (-s <DRIVER>)`);
  }
  if (prior.length === 1) {
    log.info(`[graphdriver] using prior storage driver: ${prior[0]}`);
    return prior[0]!;
  }
  if (facts.overlay && !facts.onOverlay) return 'overlay2';
  const fallback = facts.fuse ? 'fuse-overlayfs' : 'vfs';
  log.warn({ driver: fallback }, `[graphdriver] the kernel's overlay cannot be used on ${dataRoot}${facts.onOverlay ? ' (it is itself on overlayfs)' : ''}: using ${fallback}`);
  return fallback;
}
