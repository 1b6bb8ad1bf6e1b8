// Group commit for the layer store: syncfs(2) run off the main thread, shared by every caller that
// asks while one is already queued. Layers applied side by side then pay for one flush, and the
// event loop keeps unpacking the others while the disk catches up.
import { open } from 'node:fs/promises';
import koffi from 'koffi';
import { SyscallError } from '../sys/syscalls.ts';

const libc = koffi.load('libc.so.6');
const syncfsFn = libc.func('int syncfs(int fd)');

/** syncfs(2) on a worker thread of koffi's pool. */
export async function syncfsAsync(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await new Promise<void>((resolve, reject) => {
      syncfsFn.async(fh.fd, (err: unknown, ret: number) => {
        // errno is thread-local: koffi hands the worker's over to koffi.errno() for this callback only.
        if (err) reject(err);
        else if (ret !== 0) reject(new SyscallError('syncfs', koffi.errno(), path));
        else resolve();
      });
    });
  } finally {
    await fh.close();
  }
}

export class GroupSync {
  private readonly paths: string[];
  private readonly flush: (path: string) => Promise<void>;
  private running: Promise<void> | null = null;
  private next: Promise<void> | null = null;

  /** `paths`: a directory on each file system to flush. */
  constructor(paths: string[], flush: (path: string) => Promise<void> = syncfsAsync) {
    this.paths = paths;
    this.flush = flush;
  }

  /**
   * Resolves once everything written before the call is on disk. A flush already running may have
   * started before the caller's writes, so callers arriving during one share the next.
   */
  sync(): Promise<void> {
    if (!this.running) return this.start();
    this.next ??= this.running.catch(() => {}).then(() => {
      this.next = null;
      return this.start();
    });
    return this.next;
  }

  private start(): Promise<void> {
    const p = Promise.all(this.paths.map((path) => this.flush(path))).then(() => {}).finally(() => {
      if (this.running === p) this.running = null;
    });
    this.running = p;
    return p;
  }
}
