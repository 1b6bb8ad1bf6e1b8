// The built-in `local` volume driver's host side: a volume is `<root>/<name>/_data` (root is
// `<data-root>/volumes`), optionally with a filesystem mounted on it (DriverOpts type/o/device).
// Every method is idempotent and safe to run again after a crash at any line; calls on one volume
// are serialized so two callers never mount the same volume twice.
import { execa } from 'execa';
import { chmod, chown, lstat, mkdir, readdir, realpath, rm, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EngineError, internal, invalidArgument } from '../../lib/errors.ts';
import { mountArgs, redactMountError } from '../../lib/volume-options.ts';
import { EXECA_DEFAULTS } from '../sys/exec.ts';
import { MNT_DETACH, isMountPoint, umount } from '../sys/syscalls.ts';

const DATA = '_data';
/** Present while a copy-up runs: a copy cut short by a crash is finished on the next call. */
const COPY_MARK = 'copyup.pending';

export class LocalVolumeDriver {
  readonly root: string;
  readonly #queues = new Map<string, Promise<unknown>>();

  /** --userns-remap: the containers' root on the host, who owns a fresh volume's data. */
  private readonly owner: { uid: number; gid: number } | undefined;

  constructor(opts: { root: string; owner?: { uid: number; gid: number } }) {
    this.root = opts.root;
    this.owner = opts.owner;
  }

  /** Host path containers mount for `name`. */
  mountpoint(name: string): string {
    return join(this.#dir(name), DATA);
  }

  /** Create the volume's directories (root and volume dir 0701, `_data` 0755) if missing. */
  async ensure(name: string): Promise<{ mountpoint: string; created: boolean }> {
    const dir = this.#dir(name);
    const data = join(dir, DATA);
    const dirSt = await lstatOrNull(dir);
    if (dirSt && !dirSt.isDirectory()) throw internal(`error while creating volume root path '${dir}': not a directory`);
    const st = dirSt && (await lstatOrNull(data));
    if (st) {
      if (!st.isDirectory()) throw internal(`error while creating volume data path '${data}': not a directory`);
      return { mountpoint: data, created: false };
    }
    await mkdir(this.root, { recursive: true, mode: 0o701 });
    await chmod(this.root, 0o701);
    await mkdirOnce(dir, 0o701);
    await chmod(dir, 0o701);
    // Only a fresh `_data` gets its mode: a copy-up may since have given it the image's.
    if (await mkdirOnce(data, 0o755)) {
      await chmod(data, 0o755);
      if (this.owner) await chown(data, this.owner.uid, this.owner.gid);
    }
    return { mountpoint: data, created: true };
  }

  /** Ensure the directory and, when `opts` name something to mount, mount it (once). Answers the mountpoint. */
  mount(name: string, opts: Record<string, string>): Promise<string> {
    return this.#serial(name, async () => {
      const { mountpoint } = await this.ensure(name);
      let args;
      try {
        args = mountArgs(opts);
      } catch (err) {
        throw rewrap(err, `error while mounting volume '${mountpoint}': `);
      }
      if (!args || (await this.#mounted(name))) return mountpoint;
      const argv = [...(args.type ? ['-t', args.type] : []), ...(args.options ? ['-o', args.options] : []), '--', args.device, mountpoint];
      try {
        await exec('mount', argv, MOUNT_TIMEOUT_MS);
      } catch (err) {
        // mount(8) ends with a hint line about dmesg: keep the one line that says what went wrong.
        const detail = (err as Error).message.split('\n').filter((l) => !l.includes('dmesg(1)')).map((l) => l.trim()).join(' ');
        const msg = redactMountError(detail, args.options);
        throw internal(`error while mounting volume '${mountpoint}': failed to mount local volume: ${msg}`);
      }
      return mountpoint;
    });
  }

  /** Lazily unmount whatever is mounted on `_data` (stacked mounts too); nothing when nothing is. */
  unmount(name: string): Promise<void> {
    return this.#serial(name, () => this.#unmount(name));
  }

  /** Unmount, then delete `<root>/<name>` and everything in it. A symlink there is removed, never followed. */
  remove(name: string): Promise<void> {
    return this.#serial(name, async () => {
      const dir = this.#dir(name);
      const st = await lstatOrNull(dir);
      if (!st) return;
      if (!st.isDirectory()) {
        await unlink(dir).catch(ignoreEnoent);
        return;
      }
      await this.#unmount(name);
      if (await this.#mounted(name)) throw internal(`error removing volume path '${dir}': data directory is still mounted`);
      try {
        await rm(dir, { recursive: true, force: true });
      } catch (err) {
        throw internal(`error removing volume path '${dir}': ${(err as Error).message}`, err);
      }
    });
  }

  /** `_data` has no entries (a missing `_data` counts as empty). */
  async isEmpty(name: string): Promise<boolean> {
    try {
      return (await readdir(this.mountpoint(name))).length === 0;
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return true;
      throw err;
    }
  }

  /**
   * Fill an empty volume from `src`, a directory in a container's mounted rootfs (symlinks in it
   * already resolved within that rootfs by the caller): contents with `cp -a`, then src's own
   * owner, mode and times onto `_data`. The owner and mode are copied even when src is empty, as
   * the reference does. Answers whether any entries were copied; a missing src answers false.
   */
  copyUp(src: string, name: string): Promise<boolean> {
    return this.#serial(name, async () => {
      const srcSt = await lstatOrNull(src);
      if (!srcSt || !srcSt.isDirectory()) return false;
      const { mountpoint: data } = await this.ensure(name);
      const mark = join(this.#dir(name), COPY_MARK);
      const resuming = (await lstatOrNull(mark)) !== null;
      if (!resuming && !(await this.isEmpty(name))) return false;
      const entries = await readdir(src);
      if (entries.length > 0) {
        await writeFile(mark, '');
        // Rerunning cp -a over a partial copy overwrites what is there: finishing is idempotent.
        await exec('cp', ['-a', '--', `${src}/.`, `${data}/`]).catch((err: Error) => {
          throw internal(`copying ${src} into volume ${name}: ${err.message}`, err);
        });
      }
      await chown(data, srcSt.uid, srcSt.gid);
      await chmod(data, srcSt.mode & 0o7777);
      await utimes(data, srcSt.atime, srcSt.mtime);
      await unlink(mark).catch(ignoreEnoent);
      return entries.length > 0;
    });
  }

  /** Bytes used under `_data`: sizes of everything but directories, hard links counted once; symlinks not followed. */
  async size(name: string): Promise<number> {
    let total = 0;
    const seen = new Set<string>();
    const stack = [this.mountpoint(name)];
    while (stack.length > 0) {
      const dir = stack.pop()!;
      let names: string[];
      try {
        names = await readdir(dir);
      } catch (err) {
        if (isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR')) continue;
        throw err;
      }
      for (const n of names) {
        const p = join(dir, n);
        const st = await lstatOrNull(p);
        if (!st) continue;
        if (st.isDirectory()) {
          stack.push(p);
          continue;
        }
        if (st.nlink > 1) {
          const key = `${st.dev}:${st.ino}`;
          if (seen.has(key)) continue;
          seen.add(key);
        }
        total += st.size;
      }
    }
    return total;
  }

  /** Names of the directories under root (volumes, and leftovers for orphan collection). */
  async list(): Promise<string[]> {
    try {
      const ents = await readdir(this.root, { withFileTypes: true });
      return ents.filter((e) => e.isDirectory()).map((e) => e.name).sort();
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return [];
      throw err;
    }
  }

  async #unmount(name: string): Promise<void> {
    // Bounded: each lazy unmount uncovers the mount beneath, if one was stacked.
    for (let i = 0; i < 16 && (await this.#mounted(name)); i++) {
      await umount(this.mountpoint(name), MNT_DETACH);
    }
  }

  /** Whether `_data` is a mount point; a symlink in place of the volume or `_data` is never followed. */
  async #mounted(name: string): Promise<boolean> {
    const dir = await lstatOrNull(this.#dir(name));
    const data = dir?.isDirectory() ? await lstatOrNull(this.mountpoint(name)) : null;
    if (!data?.isDirectory()) return false;
    return isMountPoint(join(await realpath(this.root), name, DATA));
  }

  #dir(name: string): string {
    if (name === '' || name === '.' || name.includes('/') || name.includes('..') || name.includes('\0')) {
      throw invalidArgument(`invalid volume name: ${JSON.stringify(name)}`);
    }
    return join(this.root, name);
  }

  #serial<T>(name: string, fn: () => Promise<T>): Promise<T> {
    try {
      this.#dir(name);
    } catch (err) {
      return Promise.reject(err);
    }
    const prev = this.#queues.get(name) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.#queues.set(name, tail);
    void tail.then(() => {
      if (this.#queues.get(name) === tail) this.#queues.delete(name);
    });
    return next;
  }
}

async function mkdirOnce(path: string, mode: number): Promise<boolean> {
  try {
    await mkdir(path, { mode });
    return true;
  } catch (err) {
    if (isErrno(err, 'EEXIST') && (await lstat(path)).isDirectory()) return false;
    throw err;
  }
}

async function lstatOrNull(path: string) {
  try {
    return await lstat(path);
  } catch (err) {
    if (isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR')) return null;
    throw err;
  }
}

function isErrno(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === code;
}

function ignoreEnoent(err: unknown): void {
  if (!isErrno(err, 'ENOENT')) throw err;
}

function rewrap(err: unknown, prefix: string): EngineError {
  if (err instanceof EngineError) return new EngineError(err.code, prefix + err.message, { cause: err });
  return internal(prefix + String((err as Error)?.message ?? err), err);
}

/** Deadline for mount(8) of a volume: above the 2 minutes an NFS mount retries in the foreground. */
const MOUNT_TIMEOUT_MS = 5 * 60_000;

/**
 * Run a command without a shell; reject with its stderr (or exit status). `timeoutMs` undefined:
 * no deadline (cp -a of a volume's initial content takes as long as the data is large, and the
 * driver's callers have no AbortSignal to give).
 */
async function exec(cmd: string, args: string[], timeoutMs?: number): Promise<void> {
  const r = await execa(cmd, args, { ...EXECA_DEFAULTS, stdin: 'ignore', stdout: 'ignore', timeout: timeoutMs, reject: false });
  if (r.exitCode === 0) return;
  // As before: a failed start rejects with the spawn error itself.
  if (r.exitCode === undefined && r.signal === undefined && !r.timedOut && r.cause instanceof Error) throw r.cause;
  const status = r.timedOut ? `timed out after ${timeoutMs} ms` : `exited with ${r.exitCode ?? r.signal}`;
  throw new Error(r.stderr.trim() || `${cmd} ${status}`);
}
