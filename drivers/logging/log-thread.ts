// The log thread: a worker thread (./log-worker.ts) that writes the file logs (json-file, local)
// of containers that log fast, so the thread serving the API does not spend its time and its
// garbage collections on their output (bench: p99 of `GET /containers/json` while four containers
// log `yes`). A log starts in the daemon's thread — a container that prints a little never costs
// a thread, whose start takes 20-40 ms and ~18 MiB — and moves to the log thread once it writes a
// MiB within a second (PromotingSink). The thread starts with the first such log and ends when no
// log has used it for a while.
//
// Backpressure crosses the threads: chunks posted and not yet acknowledged count against a limit
// (a MiB, or what a ring in front asks for), and past it log() asks the caller to wait, which
// pauses the container's output as a writer in this thread would.
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { BatchedLogFile, Held, LogSink } from './batched-file.ts';
import { newFileWriter, type FileWriterSpec } from './file-writer.ts';
import type { FromLogThread, PostedError, ToLogThread } from './log-worker.ts';

type Stream = 'stdout' | 'stderr';

/**
 * A log moves to the log thread once it writes this much within PROMOTE_WINDOW_MS (1 MiB;
 * ENGINE_LOG_PROMOTE_BYTES sets it: tests that need the move make it certain on a slow machine).
 */
const PROMOTE_BYTES = Number(process.env.ENGINE_LOG_PROMOTE_BYTES) || 1 << 20;
const PROMOTE_WINDOW_MS = 1000;
/** Bytes in flight to the log thread before log() asks its caller to wait. */
const IN_FLIGHT = 1 << 20;
/** The log thread ends after this long without a log (before the memory reclaimer's quiet period ends: drivers/sys/memory-reclaim.ts). */
const IDLE_MS = 5_000;

/** The worker's module: beside this one (sources, compiled modules) or beside the bundle (hack/build.sh). */
function workerEntry(): URL {
  const here = import.meta.url;
  if (here.endsWith('/log-thread.ts')) return new URL('./log-worker.ts', here);
  if (here.endsWith('/log-thread.js')) return new URL('./log-worker.js', here);
  return new URL('./log-worker.bundle.mjs', here);
}

export class LogThread {
  private worker: Worker | null = null;
  /** Open logs, each with the thread it was opened in (an idle thread may still be ending when the next one starts). */
  private readonly sinks = new Map<number, { sink: ThreadedSink; worker: Worker }>();
  private nextId = 1;
  private idle: NodeJS.Timeout | null = null;
  private readonly log: Logger;
  private readonly idleMs: number;

  constructor(log: Logger, opts: { idleMs?: number } = {}) {
    this.log = log;
    this.idleMs = opts.idleMs ?? IDLE_MS;
  }

  /** Whether the thread runs now (tests). */
  get running(): boolean {
    return this.worker !== null;
  }

  /** A writer for `spec` in the log thread, going on from `held`; `lost` is called if the thread dies under it. */
  open(spec: FileWriterSpec, held: Held, log: Logger, lost: () => void, limit?: number): ThreadedSink {
    const id = this.nextId++;
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    const worker = (this.worker ??= this.spawn());
    // A log talks to the thread it was opened in, for good: a thread that ends takes only its own logs.
    const sink = new ThreadedSink(id, (m, transfer) => worker.postMessage(m, transfer), log, lost, () => this.forget(id), limit);
    this.sinks.set(id, { sink, worker });
    worker.postMessage({ t: 'open', id, spec, held, limit } satisfies ToLogThread);
    return sink;
  }

  /** Ends the thread now (the daemon's shutdown); logs still open are lost. */
  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }

  private spawn(): Worker {
    const w = new Worker(workerEntry(), { stdout: false, stderr: false });
    // The daemon's exit does not wait for the thread; its shutdown closes the logs first.
    w.unref();
    w.on('message', (m: FromLogThread) => this.onMessage(m));
    w.on('error', (err) => this.log.warn({ err }, 'log thread failed'));
    w.on('exit', (code) => {
      if (this.worker === w) this.worker = null;
      const orphans = [...this.sinks.values()].filter((s) => s.worker === w);
      if (orphans.length === 0) return;
      this.log.warn({ code, logs: orphans.length }, 'log thread ended under open logs; they go on in the daemon thread');
      for (const s of orphans) s.sink.lose();
    });
    return w;
  }

  private onMessage(m: FromLogThread): void {
    const s = this.sinks.get(m.id)?.sink;
    if (!s) return;
    if (m.t === 'ack') s.acked(m.bytes);
    else if (m.t === 'say') s.say(m.level, m.fields, m.msg);
    else s.ended(m.error);
  }

  private forget(id: number): void {
    this.sinks.delete(id);
    if (this.sinks.size > 0 || this.idle || !this.worker) return;
    this.idle = setTimeout(() => {
      this.idle = null;
      if (this.sinks.size === 0) void this.stop();
    }, this.idleMs);
    this.idle.unref();
  }
}

/** One log written in the log thread, as the LogSink its container's output is fed to. */
export class ThreadedSink implements LogSink {
  /** log() posts a copy. */
  readonly copiesChunks = true;
  private inFlight = 0;
  private limit: number;
  private waiters: Array<() => void> = [];
  private closed = false;
  private readonly done = Promise.withResolvers<void>();
  private readonly id: number;
  private readonly send: (m: ToLogThread, transfer?: ArrayBuffer[]) => void;
  private readonly log_: Logger;
  private readonly lost: () => void;
  private readonly forget: () => void;

  constructor(id: number, send: (m: ToLogThread, transfer?: ArrayBuffer[]) => void, log: Logger, lost: () => void, forget: () => void, limit?: number) {
    this.id = id;
    this.send = send;
    this.log_ = log;
    this.lost = lost;
    this.forget = forget;
    this.limit = limit ?? IN_FLIGHT;
  }

  log(stream: Stream, chunk: Buffer): void | Promise<void> {
    if (this.closed || chunk.length === 0) return;
    // A copy the thread takes over (the caller's buffer may be shared or reused).
    const data = new Uint8Array(chunk);
    this.inFlight += data.length;
    this.send({ t: 'log', id: this.id, stream, data }, [data.buffer]);
    if (this.inFlight < this.limit) return;
    return new Promise<void>((r) => this.waiters.push(r));
  }

  limitQueue(bytes: number): void {
    this.limit = Math.max(1, bytes);
    this.send({ t: 'limit', id: this.id, bytes: this.limit });
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.send({ t: 'close', id: this.id });
      this.wake();
    }
    return this.done.promise;
  }

  acked(bytes: number): void {
    this.inFlight -= bytes;
    if (this.inFlight < this.limit / 2) this.wake();
  }

  say(level: 'info' | 'warn', fields: Record<string, unknown>, msg: string): void {
    const obj: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields)) obj[k] = k === 'err' && v && typeof v === 'object' ? Object.assign(new Error((v as PostedError).message), { code: (v as PostedError).code }) : v;
    this.log_[level](obj, msg);
  }

  /** The thread closed the log (or could not open it: `error`). */
  ended(error?: string): void {
    if (error) this.log_.warn({ err: new Error(error) }, 'container log in the log thread failed');
    this.finish();
    if (error && !this.closed) this.lost();
  }

  /** The thread died: the log goes on elsewhere (what was in flight is lost). */
  lose(): void {
    const wasOpen = !this.closed;
    this.finish();
    if (wasOpen) this.lost();
  }

  private finish(): void {
    this.forget();
    this.wake();
    this.done.resolve();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/**
 * A file log that starts in the daemon's thread and moves to the log thread once it is busy: the
 * writer here finishes what it queued and hands over the pieces waiting for their newline, and
 * what arrives meanwhile is parked and fed to the new writer in order, so the file reads as if one
 * writer wrote it.
 */
export class PromotingSink implements LogSink {
  /** Both its writers copy, and so does the parking while a log moves. */
  readonly copiesChunks = true;
  private inner: LogSink;
  private local: BatchedLogFile<string | Buffer> | null;
  private thread: LogThread | null;
  private moving: Promise<void> | null = null;
  private readonly parked: Array<[Stream, Buffer]> = [];
  private window = { start: 0, bytes: 0 };
  private limit: number | undefined;
  private readonly spec: FileWriterSpec;
  private readonly log_: Logger;

  constructor(spec: FileWriterSpec, thread: LogThread, log: Logger) {
    this.spec = spec;
    this.thread = thread;
    this.log_ = log;
    this.local = newFileWriter(spec, log);
    this.inner = this.local;
  }

  log(stream: Stream, chunk: Buffer): void | Promise<void> {
    if (this.moving) {
      if (chunk.length > 0) this.parked.push([stream, Buffer.from(chunk)]);
      return this.moving;
    }
    const wait = this.inner.log(stream, chunk);
    if (this.local && this.thread && this.busy(chunk.length)) this.promote(this.local, this.thread);
    return wait;
  }

  limitQueue(bytes: number): void {
    this.limit = bytes;
    this.inner.limitQueue?.(bytes);
  }

  async close(): Promise<void> {
    while (this.moving) await this.moving;
    await this.inner.close();
  }

  private busy(bytes: number): boolean {
    const now = performance.now();
    if (now - this.window.start > PROMOTE_WINDOW_MS) this.window = { start: now, bytes: 0 };
    this.window.bytes += bytes;
    return this.window.bytes >= PROMOTE_BYTES;
  }

  private promote(local: BatchedLogFile<string | Buffer>, thread: LogThread): void {
    this.local = null;
    const move = async () => {
      try {
        const held = await local.handOver();
        this.inner = thread.open(this.spec, held, this.log_, () => this.stayHere(), this.limit);
        this.log_.debug({ path: this.spec.path }, 'container log is busy: moved to the log thread');
      } catch (err) {
        this.log_.warn({ err }, 'moving a container log to the log thread failed; it stays in the daemon thread');
        this.stayHere();
      }
      while (this.parked.length > 0) {
        const [stream, chunk] = this.parked.shift()!;
        await this.inner.log(stream, chunk);
      }
      this.moving = null;
    };
    this.moving = move();
  }

  /** The log goes on (or back) in the daemon's thread, for good. */
  private stayHere(): void {
    this.thread = null;
    try {
      this.local = newFileWriter(this.spec, this.log_);
    } catch (err) {
      this.log_.warn({ err }, 'reopening a container log failed; its output is dropped');
      this.inner = { log: () => {}, close: async () => {} };
      return;
    }
    if (this.limit !== undefined) this.local.limitQueue(this.limit);
    this.inner = this.local;
  }
}
