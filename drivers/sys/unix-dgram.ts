// Unix datagram sockets (AF_UNIX, SOCK_DGRAM) through koffi: Node has none. Used by the syslog
// log driver for `unixgram://` addresses and the local /dev/log. Every call is non-blocking: the
// sockets are opened SOCK_NONBLOCK and sends pass MSG_DONTWAIT, so a receiver that does not read
// makes send() answer false (EAGAIN) instead of stalling the event loop. Same rules as
// syscalls.ts: errno is read only after a -1 return.
// Errors read as Go's net package writes them ("connect: connection refused"), with the errno's
// name in `code` (ECONNREFUSED, ENOENT, ...), so callers can prefix "dial unixgram PATH: ".
import koffi from 'koffi';
import { constants, endianness } from 'node:os';

const libc = koffi.load('libc.so.6');
const socketFn = libc.func('int socket(int domain, int type, int protocol)');
const connectFn = libc.func('int connect(int fd, const void *addr, uint32_t addrlen)');
const bindFn = libc.func('int bind(int fd, const void *addr, uint32_t addrlen)');
const sendFn = libc.func('long send(int fd, const void *buf, size_t len, int flags)');
const recvFn = libc.func('long recv(int fd, _Out_ void *buf, size_t len, int flags)');
const closeFn = libc.func('int close(int fd)');
const strerrorFn = libc.func('const char *strerror(int errnum)');

const AF_UNIX = 1;
const SOCK_DGRAM = 2;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
const MSG_DONTWAIT = 0x40;
const MSG_NOSIGNAL = 0x4000;
const SUN_PATH_MAX = 108;
const EINTR = 4;
const EAGAIN = 11;
const EINVAL = 22;

const errnoNames = new Map<number, string>(Object.entries(constants.errno).map(([k, v]) => [v, k]));

export interface UnixDgramError extends Error {
  code: string;
  errno: number;
  syscall: string;
}

/** "connect: connection refused": Go's text for a syscall's errno (strerror with a lower-case first letter). */
function syscallError(syscall: string, errno: number): UnixDgramError {
  const text = String(strerrorFn(errno));
  const err = new Error(`${syscall}: ${text.charAt(0).toLowerCase()}${text.slice(1)}`) as UnixDgramError;
  err.code = errnoNames.get(errno) ?? `E${errno}`;
  err.errno = errno;
  err.syscall = syscall;
  return err;
}

/**
 * struct sockaddr_un for `path` and its length, as Go's net package builds it: sa_family then the
 * path NUL-terminated; a leading '@' names an abstract socket (no terminator, NUL first byte).
 */
function sockaddrUn(path: string, syscall: string): { addr: Buffer; len: number } {
  const p = Buffer.from(path);
  if (p.length === 0 || p.length > SUN_PATH_MAX || (p.length === SUN_PATH_MAX && p[0] !== 0x40)) throw syscallError(syscall, EINVAL);
  const addr = Buffer.alloc(2 + SUN_PATH_MAX);
  if (endianness() === 'LE') addr.writeUInt16LE(AF_UNIX, 0);
  else addr.writeUInt16BE(AF_UNIX, 0);
  p.copy(addr, 2);
  if (p[0] === 0x40 /* @ */) {
    addr[2] = 0;
    return { addr, len: 2 + p.length };
  }
  return { addr, len: 2 + p.length + 1 };
}

function openSocket(): number {
  const fd = socketFn(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0) as number;
  if (fd < 0) throw syscallError('socket', koffi.errno());
  return fd;
}

export interface UnixDgramSender {
  /**
   * Sends `buf` as one datagram without waiting. Answers false when the receiver's queue is full
   * (EAGAIN: nothing was sent, try later or drop); throws on any other error (ECONNREFUSED once
   * the receiver is gone, EMSGSIZE, ...).
   */
  send(buf: Buffer): boolean;
  close(): void;
  readonly closed: boolean;
}

/** socket(AF_UNIX, SOCK_DGRAM) connected to `path` (Go's net.Dial("unixgram", path)). */
export function openUnixDgram(path: string): UnixDgramSender {
  const { addr, len } = sockaddrUn(path, 'connect');
  const fd = openSocket();
  if ((connectFn(fd, addr, len) as number) !== 0) {
    const errno = koffi.errno();
    closeFn(fd);
    throw syscallError('connect', errno);
  }
  let open = true;
  return {
    get closed() {
      return !open;
    },
    send(buf: Buffer): boolean {
      if (!open) throw syscallError('write', 9 /* EBADF */);
      for (;;) {
        const n = sendFn(fd, buf, buf.length, MSG_DONTWAIT | MSG_NOSIGNAL) as number;
        if (n >= 0) return true;
        const errno = koffi.errno();
        if (errno === EINTR) continue;
        if (errno === EAGAIN) return false;
        throw syscallError('write', errno);
      }
    },
    close(): void {
      if (!open) return;
      open = false;
      closeFn(fd);
    },
  };
}

export interface UnixDgramReceiver {
  /** The next queued datagram, or null when none is queued (never waits). */
  recv(max?: number): Buffer | null;
  close(): void;
}

/** socket(AF_UNIX, SOCK_DGRAM) bound to `path` (the caller removes the file afterwards). */
export function bindUnixDgram(path: string): UnixDgramReceiver {
  const { addr, len } = sockaddrUn(path, 'bind');
  const fd = openSocket();
  if ((bindFn(fd, addr, len) as number) !== 0) {
    const errno = koffi.errno();
    closeFn(fd);
    throw syscallError('bind', errno);
  }
  let open = true;
  return {
    recv(max = 256 * 1024): Buffer | null {
      if (!open) throw syscallError('read', 9 /* EBADF */);
      const buf = Buffer.alloc(max);
      for (;;) {
        const n = recvFn(fd, buf, max, MSG_DONTWAIT) as number;
        if (n >= 0) return buf.subarray(0, n);
        const errno = koffi.errno();
        if (errno === EINTR) continue;
        if (errno === EAGAIN) return null;
        throw syscallError('read', errno);
      }
    },
    close(): void {
      if (!open) return;
      open = false;
      closeFn(fd);
    },
  };
}
