// Room kept for the store on its own file system. The store is where the daemon records what
// happened (an exit, a removal): when something else fills the disk (a container writing into its
// own file system, which lives beside the store), SQLite cannot append to its write-ahead log and
// `docker rm` itself, the way to free the space, would fail. So a file of `bytes` is kept beside
// the database; a write refused for want of space removes it and is tried once more, and the file
// is made again once the file system has room for it (three times its size free, looked at every
// few seconds while it is missing).
import { existsSync, renameSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';

const REFILL_EVERY_MS = 5000;

/** SQLite's and the OS's ways of saying the disk is full. */
export function isStorageFull(err: unknown): boolean {
  return /disk is full|SQLITE_FULL|ENOSPC|no space left/i.test(err instanceof Error ? err.message : String(err));
}

export class StoreReserve {
  private readonly path: string;
  private readonly bytes: number;
  private readonly log: Logger | undefined;
  private timer: NodeJS.Timeout | null = null;

  constructor(path: string, bytes: number, log?: Logger) {
    this.path = path;
    this.bytes = bytes;
    this.log = log;
    if (!this.fill()) this.refillLater();
  }

  /** Frees the reserve for a write that needs it; false when there is none to free. */
  release(): boolean {
    if (!existsSync(this.path)) return false;
    rmSync(this.path, { force: true });
    this.log?.warn({ path: this.path, bytes: this.bytes }, 'disk full: released the store reserve to record a write');
    this.refillLater();
    return true;
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Makes the file when it is missing and there is room; true once it exists. */
  private fill(): boolean {
    if (existsSync(this.path)) return true;
    try {
      const fs = statfsSync(dirname(this.path));
      if (fs.bavail * fs.bsize < 3 * this.bytes) return false;
      const tmp = `${this.path}.tmp`;
      writeFileSync(tmp, Buffer.alloc(this.bytes));
      renameSync(tmp, this.path);
      return true;
    } catch (err) {
      rmSync(`${this.path}.tmp`, { force: true });
      this.log?.debug({ err }, 'store reserve not made yet');
      return false;
    }
  }

  private refillLater(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.fill()) this.close();
    }, REFILL_EVERY_MS);
    this.timer.unref();
  }
}
