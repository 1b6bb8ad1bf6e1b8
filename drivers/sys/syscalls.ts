// Thin koffi bindings to libc for the few syscalls Node lacks: mount, umount2, mkfifo, malloc_trim.
// Read errno only after a -1 return (koffi keeps a stale value after success).
import koffi from 'koffi';
import { execa } from 'execa';
import { EngineError } from '../../lib/errors.ts';
import { EXECA_DEFAULTS, SHORT_COMMAND_TIMEOUT_MS } from './exec.ts';

const libc = koffi.load('libc.so.6');
const mountFn = libc.func('int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const char *data)');
const umount2Fn = libc.func('int umount2(const char *target, int flags)');
const mkfifoFn = libc.func('int mkfifo(const char *path, uint32_t mode)');
const strerrorFn = libc.func('const char *strerror(int errnum)');
const mallocTrimFn = libc.func('int malloc_trim(size_t pad)');

export const MS_RDONLY = 0x1;
export const MS_NOSUID = 0x2;
export const MS_NODEV = 0x4;
export const MS_NOEXEC = 0x8;
export const MS_REMOUNT = 0x20;
export const MS_BIND = 0x1000;
export const MS_REC = 0x4000;
export const MS_PRIVATE = 0x40000;
export const MNT_DETACH = 0x2;

export const ERRNO = { EPERM: 1, ENOENT: 2, EBUSY: 16, EEXIST: 17, EINVAL: 22, ELOOP: 40 } as const;

export class SyscallError extends EngineError {
  readonly errno: number;
  constructor(call: string, errno: number, detail: string) {
    super(errno === ERRNO.ENOENT ? 'NotFound' : 'Internal', `${call} ${detail}: ${strerror(errno)}`);
    this.errno = errno;
  }
}

function strerror(errno: number): string {
  return String(strerrorFn(errno));
}

function callAsync(fn: ReturnType<typeof libc.func>, args: unknown[]): Promise<{ ret: number; errno: number }> {
  return new Promise((resolve, reject) => {
    fn.async(...args, (err: unknown, ret: number) => {
      if (err) return reject(err);
      // errno is thread-local: koffi captures it for async calls into koffi.errno() of the worker; read now.
      resolve({ ret, errno: ret === -1 ? koffi.errno() : 0 });
    });
  });
}

/** mount(2). `data` longer than a page fails with a misleading ELOOP: use mountWithCwd for long overlay options. */
export function mount(source: string, target: string, fstype: string | null, flags: number, data: string | null): void {
  const ret = mountFn(source, target, fstype, flags, data) as number;
  if (ret !== 0) throw new SyscallError('mount', koffi.errno(), `${source} on ${target} (${fstype ?? 'none'})`);
}

/**
 * mount(2) off the main thread, as umount: an overlay mount takes ~0.4 ms of the kernel's time,
 * which the daemon's thread would otherwise spend blocked (every container start mounts one).
 */
export async function mountAsync(source: string, target: string, fstype: string | null, flags: number, data: string | null): Promise<void> {
  const { ret, errno } = await callAsync(mountFn, [source, target, fstype, flags, data]);
  if (ret !== 0) throw new SyscallError('mount', errno, `${source} on ${target} (${fstype ?? 'none'})`);
}

/** mount(8) run in `cwd`, so overlay lowerdirs can be relative paths (keeps the option string under a page). */
export async function mountWithCwd(source: string, target: string, fstype: string, data: string, cwd: string): Promise<void> {
  // No caller has an AbortSignal to give: a local overlay mount is quick, so a default deadline bounds it.
  const r = await execa('mount', ['-t', fstype, '-o', data, source, target], {
    ...EXECA_DEFAULTS,
    cwd,
    stdin: 'ignore',
    stdout: 'ignore',
    timeout: SHORT_COMMAND_TIMEOUT_MS,
    reject: false,
  });
  if (r.exitCode === 0) return;
  // As before: a failed start rejects with the spawn error itself.
  if (r.exitCode === undefined && r.signal === undefined && !r.timedOut && r.cause instanceof Error) throw r.cause;
  const code = r.timedOut ? `timed out after ${SHORT_COMMAND_TIMEOUT_MS} ms` : `exit ${r.exitCode ?? null}`;
  throw new EngineError('Internal', `mount ${target}: ${r.stderr.trim() || code}`);
}

/** umount2(2) off the main thread (a busy or hung mount must not block the daemon). EINVAL (not mounted) is ignored. */
export async function umount(target: string, flags = 0): Promise<void> {
  const { ret, errno } = await callAsync(umount2Fn, [target, flags]);
  if (ret !== 0 && errno !== ERRNO.EINVAL && errno !== ERRNO.ENOENT) throw new SyscallError('umount', errno, target);
}

export function umountSync(target: string, flags = 0): void {
  const ret = umount2Fn(target, flags) as number;
  if (ret !== 0) {
    const errno = koffi.errno();
    if (errno !== ERRNO.EINVAL && errno !== ERRNO.ENOENT) throw new SyscallError('umount', errno, target);
  }
}

/** malloc_trim(0): hands the free pages of every malloc arena back to the system. */
export function mallocTrim(): void {
  mallocTrimFn(0);
}

/** mkfifo(3); an existing FIFO at `path` is accepted. */
export function mkfifo(path: string, mode = 0o600): void {
  const ret = mkfifoFn(path, mode) as number;
  if (ret !== 0) {
    const errno = koffi.errno();
    if (errno !== ERRNO.EEXIST) throw new SyscallError('mkfifo', errno, path);
  }
}

/** True when `target` is a mount point (per /proc/self/mountinfo). */
export async function isMountPoint(target: string): Promise<boolean> {
  const { readFile } = await import('node:fs/promises');
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  for (const line of info.split('\n')) {
    const f = line.split(' ');
    if (f[4] === target) return true;
  }
  return false;
}
