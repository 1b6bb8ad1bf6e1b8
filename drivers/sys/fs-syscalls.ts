// koffi bindings for the file-system calls Node lacks and layer unpacking needs: device nodes,
// extended attributes on the link itself (never followed), and syncfs. Same rules as syscalls.ts:
// read errno only after a -1 return.
import koffi from 'koffi';
import { SyscallError } from './syscalls.ts';

const libc = koffi.load('libc.so.6');
const mknodFn = libc.func('int mknod(const char *path, uint32_t mode, uint64_t dev)');
const lsetxattrFn = libc.func('int lsetxattr(const char *path, const char *name, const void *value, size_t size, int flags)');
const lgetxattrFn = libc.func('long lgetxattr(const char *path, const char *name, _Out_ void *value, size_t size)');
const llistxattrFn = libc.func('long llistxattr(const char *path, _Out_ void *list, size_t size)');
const lremovexattrFn = libc.func('int lremovexattr(const char *path, const char *name)');
const syncfsFn = libc.func('int syncfs(int fd)');

export const S_IFIFO = 0o010000;
export const S_IFCHR = 0o020000;
export const S_IFBLK = 0o060000;

const ENODATA = 61;
const ENOTSUP = 95;
const ERANGE = 34;

/** glibc's makedev(3) for 64-bit dev_t. */
export function makedev(major: number, minor: number): bigint {
  const ma = BigInt(major);
  const mi = BigInt(minor);
  return ((ma & 0xfffff000n) << 32n) | ((ma & 0xfffn) << 8n) | ((mi & 0xffffff00n) << 12n) | (mi & 0xffn);
}

/** mknod(2); `mode` carries the file type (S_IFCHR, S_IFBLK, S_IFIFO) and permission bits. */
export function mknod(path: string, mode: number, major = 0, minor = 0): void {
  const ret = mknodFn(path, mode, makedev(major, minor)) as number;
  if (ret !== 0) throw new SyscallError('mknod', koffi.errno(), path);
}

export function lsetxattr(path: string, name: string, value: Buffer): void {
  const ret = lsetxattrFn(path, name, value, value.length, 0) as number;
  if (ret !== 0) throw new SyscallError('lsetxattr', koffi.errno(), `${name} on ${path}`);
}

/** The attribute's value, or null when it is not set (or the file system has no xattrs). */
export function lgetxattr(path: string, name: string): Buffer | null {
  let size = 256;
  for (;;) {
    const buf = Buffer.alloc(size);
    const ret = Number(lgetxattrFn(path, name, buf, size));
    if (ret >= 0) return buf.subarray(0, ret);
    const errno = koffi.errno();
    if (errno === ENODATA || errno === ENOTSUP) return null;
    if (errno !== ERANGE || size >= 1 << 20) throw new SyscallError('lgetxattr', errno, `${name} on ${path}`);
    size *= 16;
  }
}

/** Names of the extended attributes set on `path` itself. */
export function llistxattr(path: string): string[] {
  let size = 1024;
  for (;;) {
    const buf = Buffer.alloc(size);
    const ret = Number(llistxattrFn(path, buf, size));
    if (ret >= 0) return buf.subarray(0, ret).toString('utf8').split('\0').filter((n) => n.length > 0);
    const errno = koffi.errno();
    if (errno === ENOTSUP) return [];
    if (errno !== ERANGE || size >= 1 << 20) throw new SyscallError('llistxattr', errno, path);
    size *= 16;
  }
}

export function lremovexattr(path: string, name: string): void {
  const ret = lremovexattrFn(path, name) as number;
  if (ret !== 0) {
    const errno = koffi.errno();
    if (errno !== ENODATA) throw new SyscallError('lremovexattr', errno, `${name} on ${path}`);
  }
}

/** syncfs(2) on the file system holding the open descriptor `fd`. */
export function syncfs(fd: number): void {
  const ret = syncfsFn(fd) as number;
  if (ret !== 0) throw new SyscallError('syncfs', koffi.errno(), `fd ${fd}`);
}
