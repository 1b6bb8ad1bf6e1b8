// Container stdio: the FIFOs the supervisor's shim writes a process's output to (and reads its
// stdin from), and a hub that fans that output out to the log driver and attach clients.
//
// FIFO opens never block: a blocking open waits for the shim (which opens its side only during
// Tasks.Create) and parks a libuv threadpool thread meanwhile, freezing every fs/dns/crypto call
// once four are pending. So our ends are opened O_NONBLOCK (stdin O_RDWR, which never fails with
// ENXIO) and wrapped in net.Socket, a libuv pipe handle driven by epoll.
import { constants, mkdirSync, openSync, closeSync } from 'node:fs';
import { rm, rmdir } from 'node:fs/promises';
import { Socket } from 'node:net';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import { mkfifo } from '../sys/syscalls.ts';

export type StdStream = 'stdout' | 'stderr';

export interface ProcessIO {
  paths: { stdin?: string; stdout: string; stderr?: string };
  stdout: Readable;
  /** null with a tty: the pty merges both streams onto stdout. */
  stderr: Readable | null;
  stdin: Writable | null;
  close(): void;
}

/**
 * A subscriber gets every chunk synchronously. One that cannot keep up returns a Promise (e.g.
 * the 'drain' of its socket): later chunks are then queued for it alone, up to a byte bound, and
 * dropped beyond it, so one slow attach client never grows memory or slows the others. Subscribers
 * that return nothing (the log writer) receive everything, in order.
 */
export type Subscriber = (stream: StdStream, chunk: Buffer) => void | Promise<unknown>;

export interface Hub {
  subscribe(fn: Subscriber, onEnd?: () => void): () => void;
  /** Resolves when every output stream has reached EOF (or was closed). */
  ended: Promise<void>;
  writeStdin(buf: Buffer): void;
  closeStdin(): void;
}

export interface Stdio {
  open(opts: { dir: string; procId: string; stdin: boolean; tty: boolean }): Promise<ProcessIO>;
  hub(io: ProcessIO): Hub;
  remove(dir: string, procId: string): Promise<void>;
}

export interface StdioOptions {
  /** Bytes queued for one slow subscriber before its chunks are dropped. */
  maxQueuedBytes?: number;
}

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

export function createStdio(log: Logger, options: StdioOptions = {}): Stdio {
  const maxQueued = options.maxQueuedBytes ?? 1024 * 1024;

  return {
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
      return createHub(io, log, maxQueued);
    },

    async remove(dir, procId) {
      const p = fifoPaths(dir, procId);
      await Promise.all([p.stdin, p.stdout, p.stderr].map((f) => rm(f, { force: true })));
      // The directory goes once its last process is gone.
      await rmdir(dir).catch(() => {});
    },
  };
}

interface Sub {
  fn: Subscriber;
  onEnd?: () => void;
  queue: Array<[StdStream, Buffer]>;
  queuedBytes: number;
  busy: boolean;
  dropped: number;
  active: boolean;
}

function createHub(io: ProcessIO, log: Logger, maxQueued: number): Hub {
  const subs = new Set<Sub>();
  let isEnded = false;

  const finish = (s: Sub) => {
    if (!s.active) return;
    s.active = false;
    subs.delete(s);
    if (s.dropped) log.warn({ dropped: s.dropped }, 'slow stdio subscriber: output dropped');
    try {
      s.onEnd?.();
    } catch (err) {
      log.warn({ err }, 'stdio subscriber onEnd failed');
    }
  };

  /** Deliver queued chunks one at a time while the subscriber keeps returning promises. */
  const pump = (s: Sub) => {
    while (s.active && !s.busy && s.queue.length) {
      const [stream, chunk] = s.queue.shift()!;
      s.queuedBytes -= chunk.length;
      deliver(s, stream, chunk);
    }
    if (s.active && !s.busy && !s.queue.length && isEnded) finish(s);
  };

  const deliver = (s: Sub, stream: StdStream, chunk: Buffer) => {
    let r: void | Promise<unknown>;
    try {
      r = s.fn(stream, chunk);
    } catch (err) {
      log.warn({ err }, 'stdio subscriber failed; unsubscribing');
      s.active = false;
      subs.delete(s);
      return;
    }
    if (r && typeof (r as Promise<unknown>).then === 'function') {
      s.busy = true;
      (r as Promise<unknown>).then(
        () => {
          s.busy = false;
          pump(s);
        },
        () => {
          s.busy = false;
          s.queue = [];
          s.queuedBytes = 0;
          pump(s);
        },
      );
    }
  };

  const dispatch = (stream: StdStream, chunk: Buffer) => {
    for (const s of subs) {
      if (!s.busy && !s.queue.length) {
        deliver(s, stream, chunk);
      } else if (s.queuedBytes + chunk.length <= maxQueued) {
        s.queue.push([stream, chunk]);
        s.queuedBytes += chunk.length;
      } else {
        s.dropped += chunk.length;
      }
    }
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
    for (const s of [...subs]) if (!s.busy && !s.queue.length) finish(s);
  });

  return {
    subscribe(fn, onEnd) {
      const s: Sub = { fn, onEnd, queue: [], queuedBytes: 0, busy: false, dropped: 0, active: true };
      if (isEnded) {
        s.active = false;
        queueMicrotask(() => onEnd?.());
        return () => {};
      }
      subs.add(s);
      return () => {
        s.active = false;
        s.queue = [];
        subs.delete(s);
      };
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
