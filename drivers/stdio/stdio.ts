// Container stdio: the FIFOs the supervisor's shim writes a process's output to (and reads its
// stdin from), and a hub that fans that output out to the log driver and attach clients.
//
// FIFO opens never block: a blocking open waits for the shim (which opens its side only during
// Tasks.Create) and parks a libuv threadpool thread meanwhile, freezing every fs/dns/crypto call
// once four are pending. So our ends are opened O_NONBLOCK (stdin O_RDWR, which never fails with
// ENXIO) and wrapped in net.Socket, a libuv pipe handle driven by epoll.
import { constants, mkdirSync, openSync, closeSync, readdirSync, unlinkSync } from 'node:fs';
import { rmdir } from 'node:fs/promises';
import { Socket } from 'node:net';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { releaseBuffer } from '../../lib/release-buffer.ts';
import { mkfifo } from '../sys/syscalls.ts';
import type { ProcessIO, StdioHub, StdioPort, StdStream, Subscriber, SubscribeOptions } from '../../lib/ports/stdio.ts';

export type { ProcessIO, StdStream, Subscriber, SubscribeOptions };
export type Hub = StdioHub;

export interface Stdio extends StdioPort {
  /**
   * The FIFOs under `root` (one directory per container) of processes other than `keep` (the
   * execs of a daemon that died, or was stopped, while they ran): each is opened and drained until
   * its writer closes, then removed. Returns how many processes had some. See drainLeftovers.
   */
  drainLeftovers(root: string, keep: string): number;
}

export interface StdioOptions {}

export function fifoPaths(dir: string, procId: string): { stdin: string; stdout: string; stderr: string } {
  return { stdin: join(dir, `${procId}-stdin`), stdout: join(dir, `${procId}-stdout`), stderr: join(dir, `${procId}-stderr`) };
}

function openReader(path: string): Socket {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    return new Socket({ fd, readable: true, writable: false });
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

function openWriter(path: string): Socket {
  const fd = openSync(path, constants.O_RDWR | constants.O_NONBLOCK);
  try {
    return new Socket({ fd, readable: false, writable: true });
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

export function createStdio(log: Logger, _options: StdioOptions = {}): Stdio {
  const stdio: Stdio = {
    async open({ dir, procId, stdin, tty }) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const p = fifoPaths(dir, procId);
      const paths: ProcessIO['paths'] = { stdout: p.stdout };
      if (!tty) paths.stderr = p.stderr;
      if (stdin) paths.stdin = p.stdin;
      // An existing FIFO is reused: a restarted daemon re-opens a live container's streams.
      for (const path of [paths.stdout, paths.stderr, paths.stdin]) if (path) mkfifo(path, 0o600);
      const opened: Socket[] = [];
      try {
        const out = openReader(paths.stdout);
        opened.push(out);
        const err = paths.stderr ? openReader(paths.stderr) : null;
        if (err) opened.push(err);
        const inp = paths.stdin ? openWriter(paths.stdin) : null;
        if (inp) {
          opened.push(inp);
          // A process that exits without reading its stdin breaks the pipe: not our error.
          inp.on('error', (e) => log.debug({ err: e, procId }, 'stdin write failed'));
        }
        for (const s of [out, err]) s?.on('error', (e) => log.warn({ err: e, procId }, 'stdio read failed'));
        return {
          paths,
          stdout: out,
          stderr: err,
          stdin: inp,
          close() {
            for (const s of opened) s.destroy();
          },
        };
      } catch (e) {
        for (const s of opened) s.destroy();
        throw e;
      }
    },

    hub(io) {
      return createHub(io, log);
    },

    drainLeftovers(root, keep) {
      let dirs: string[];
      try {
        dirs = readdirSync(root);
      } catch {
        return 0;
      }
      return dirs.reduce((n, d) => n + drainLeftovers(join(root, d), keep, log, (dir, procId) => stdio.remove(dir, procId)), 0);
    },

    async remove(dir, procId) {
      // FIFOs hold no data: direct syscalls cost microseconds of CPU, where each fs.promises call
      // costs tens (a threadpool round trip) and rm even lstats each path twice first.
      const p = fifoPaths(dir, procId);
      for (const f of [p.stdin, p.stdout, p.stderr]) {
        try {
          unlinkSync(f);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        }
      }
      // The directory goes once its last process is gone. Asynchronously: freeing a directory's
      // block can wait on the disk (a discard), which must not stall the event loop.
      await rmdir(dir).catch(() => {
        // not empty (another process's FIFOs) or gone
      });
    },
  };
  return stdio;
}

interface Sub {
  fn: Subscriber;
  onEnd?: () => void;
  active: boolean;
  copies: boolean;
}

/**
 * Why leftovers are drained: the shim opens an exec's output FIFOs for writing with a blocking
 * open, one after the other, while it starts the exec. When the daemon that made them dies in
 * between (kill -9 during a healthcheck probe), the shim's open waits for a reader that never
 * comes, holding the task's lock: every later request about the container (its state, so its
 * adoption) times out. Opening the read side completes that open; reading until EOF lets the
 * process write and end; then the FIFOs go. A stdin FIFO gets EOF at once.
 */
function drainLeftovers(dir: string, keep: string, log: Logger, remove: (dir: string, procId: string) => Promise<void>): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  const procs = new Set<string>();
  for (const n of names) {
    const m = /^(.+)-(stdin|stdout|stderr)$/.exec(n);
    if (m && m[1] !== keep) procs.add(m[1]!);
  }
  for (const procId of procs) {
    const p = fifoPaths(dir, procId);
    const readers: Socket[] = [];
    for (const path of [p.stdout, p.stderr]) {
      if (!names.includes(path.slice(dir.length + 1))) continue;
      try {
        readers.push(openReader(path));
      } catch (err) {
        log.debug({ err, path }, 'opening a leftover FIFO failed');
      }
    }
    if (names.includes(`${procId}-stdin`)) {
      try {
        openWriter(p.stdin).destroy();
      } catch (err) {
        log.debug({ err, path: p.stdin }, 'closing a leftover stdin FIFO failed');
      }
    }
    let open = readers.length;
    const done = () => {
      if (--open > 0) return;
      remove(dir, procId).catch((err) => log.debug({ err, procId }, 'removing leftover FIFOs failed'));
    };
    for (const r of readers) {
      r.on('error', () => r.destroy());
      r.once('close', done);
      r.resume();
    }
    if (readers.length === 0) remove(dir, procId).catch(() => {});
  }
  return procs.size;
}

function createHub(io: ProcessIO, log: Logger): Hub {
  const subs = new Set<Sub>();
  /** Subscribers that may keep a chunk after it was dispatched to them. */
  let keepers = 0;
  let isEnded = false;
  /** Subscribers still busy with a chunk: while any is, the sources are paused. */
  let waiting = 0;
  const sources = [io.stdout, io.stderr].filter((r): r is Readable => r !== null);

  const drop = (s: Sub) => {
    if (subs.delete(s) && !s.copies) keepers--;
    s.active = false;
  };

  const finish = (s: Sub) => {
    if (!s.active) return;
    drop(s);
    try {
      s.onEnd?.();
    } catch (err) {
      log.warn({ err }, 'stdio subscriber onEnd failed');
    }
  };

  const settled = () => {
    if (--waiting === 0) for (const r of sources) r.resume();
  };

  const dispatch = (stream: StdStream, chunk: Buffer) => {
    for (const s of subs) {
      let r: void | Promise<unknown>;
      try {
        r = s.fn(stream, chunk);
      } catch (err) {
        log.warn({ err }, 'stdio subscriber failed; unsubscribing');
        drop(s);
        continue;
      }
      if (r && typeof (r as Promise<unknown>).then === 'function') {
        if (waiting++ === 0) for (const src of sources) src.pause();
        (r as Promise<unknown>).then(settled, settled);
      }
    }
    // Every subscriber copied what it keeps (or there is none): the read's buffer is garbage now.
    if (keepers === 0) releaseBuffer(chunk);
  };

  const streamEnded = (r: Readable) =>
    new Promise<void>((resolve) => {
      if (r.readableEnded || r.destroyed) return resolve();
      r.once('end', resolve);
      r.once('close', resolve);
      r.once('error', () => resolve());
    });

  io.stdout.on('data', (c: Buffer) => dispatch('stdout', c));
  io.stderr?.on('data', (c: Buffer) => dispatch('stderr', c));
  const ended = Promise.all([streamEnded(io.stdout), io.stderr ? streamEnded(io.stderr) : Promise.resolve()]).then(() => {
    isEnded = true;
    for (const s of [...subs]) finish(s);
  });

  return {
    subscribe(fn, onEnd, opts) {
      const s: Sub = { fn, onEnd, active: true, copies: opts?.copies === true };
      if (isEnded) {
        s.active = false;
        queueMicrotask(() => onEnd?.());
        return () => {};
      }
      subs.add(s);
      if (!s.copies) keepers++;
      return () => drop(s);
    },
    ended,
    writeStdin(buf) {
      if (io.stdin && !io.stdin.destroyed && !io.stdin.writableEnded) io.stdin.write(buf);
    },
    closeStdin() {
      // Our end only: the shim holds its own write end, so the process sees EOF after the
      // supervisor's CloseIO, which the caller sends.
      if (io.stdin && !io.stdin.destroyed) io.stdin.end();
    },
  };
}
