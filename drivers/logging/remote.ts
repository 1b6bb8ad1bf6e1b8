// The common part of the drivers that send logs elsewhere (syslog, gelf, fluentd, journald):
// the container's output cut into messages (one per line, without its newline; lines longer than
// 16 KiB cut into partial messages) and a queue in front of the driver, drained one message at a
// time; past BACKPRESSURE queued bytes, log() returns a promise so the container's output waits.
// mode=non-blocking puts the ring of ./ring.ts in front (as for every driver), and the local
// cache that keeps `docker logs` working (dual logging) is written beside it (withCache), outside
// the ring as in the reference: the cache never drops what the ring drops.
import type { Logger } from 'pino';
import type { LogSink } from './json-file.ts';

export interface LogMessage {
  source: 'stdout' | 'stderr';
  /** Without its trailing newline. */
  line: Buffer;
  timestamp: Date;
  /** Set on the pieces of a line longer than 16 KiB. */
  partial?: { id: string; ordinal: number; last: boolean };
}

export interface RemoteDriver {
  readonly name: string;
  send(msg: LogMessage): Promise<void> | void;
  close(): Promise<void>;
}

const MAX_LINE = 16 * 1024;
const BACKPRESSURE = 1 << 20;

export interface RemoteSinkOptions {
  log: Logger;
}

export class RemoteSink implements LogSink {
  private readonly driver: RemoteDriver;
  private readonly opts: RemoteSinkOptions;
  private readonly pending: Record<'stdout' | 'stderr', Buffer[]> = { stdout: [], stderr: [] };
  private readonly partialIds: Record<'stdout' | 'stderr', { id: string; ordinal: number } | null> = { stdout: null, stderr: null };
  private queue: LogMessage[] = [];
  private head = 0;
  private queuedBytes = 0;
  private pumping: Promise<void> | null = null;
  private waiters: Array<() => void> = [];
  private closed = false;
  private failures = 0;
  private backpressure = BACKPRESSURE;

  constructor(driver: RemoteDriver, opts: RemoteSinkOptions) {
    this.driver = driver;
    this.opts = opts;
  }

  log(stream: 'stdout' | 'stderr', chunk: Buffer): void | Promise<void> {
    if (this.closed) return;
    const now = new Date();
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      this.pending[stream].push(chunk.subarray(start, nl));
      this.flushLine(stream, now, true);
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.pending[stream].push(Buffer.from(chunk.subarray(start)));
      let len = this.pending[stream].reduce((n, b) => n + b.length, 0);
      while (len >= MAX_LINE) {
        const all = Buffer.concat(this.pending[stream]);
        this.pending[stream] = [all.subarray(MAX_LINE)];
        this.emitPartial(stream, all.subarray(0, MAX_LINE), now, false);
        len -= MAX_LINE;
      }
    }
    if (this.queuedBytes > this.backpressure) return new Promise<void>((res) => this.waiters.push(res));
  }

  limitQueue(bytes: number): void {
    this.backpressure = Math.max(0, bytes);
  }

  private flushLine(stream: 'stdout' | 'stderr', ts: Date, complete: boolean): void {
    const parts = this.pending[stream];
    this.pending[stream] = [];
    const line = parts.length === 1 ? Buffer.from(parts[0]!) : Buffer.concat(parts);
    if (this.partialIds[stream]) this.emitPartial(stream, line, ts, true);
    else if (complete || line.length) this.enqueue({ source: stream, line, timestamp: ts });
  }

  private emitPartial(stream: 'stdout' | 'stderr', line: Buffer, ts: Date, last: boolean): void {
    let p = this.partialIds[stream];
    if (!p) p = this.partialIds[stream] = { id: randomHex(32), ordinal: 0 };
    p.ordinal++;
    this.enqueue({ source: stream, line: Buffer.from(line), timestamp: ts, partial: { id: p.id, ordinal: p.ordinal, last } });
    if (last) this.partialIds[stream] = null;
  }

  private enqueue(msg: LogMessage): void {
    const size = msg.line.length;
    this.queue.push(msg);
    this.queuedBytes += size;
    if (!this.pumping) this.pumping = this.pump();
  }

  private async pump(): Promise<void> {
    // Let the producer queue a batch first (and keep log() synchronous).
    await Promise.resolve();
    while (this.head < this.queue.length) {
      const msg = this.queue[this.head]!;
      this.queue[this.head++] = undefined as unknown as LogMessage;
      this.queuedBytes -= msg.line.length;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      try {
        await this.driver.send(msg);
      } catch (err) {
        if (this.failures++ % 1000 === 0) {
          this.opts.log.error({ err: (err as Error).message, driver: this.driver.name, failures: this.failures }, 'Failed to log msg for logger');
        }
      }
      if (this.queuedBytes <= this.backpressure / 2 && this.waiters.length) this.release();
    }
    this.queue = [];
    this.head = 0;
    this.pumping = null;
    this.release();
  }

  private release(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const r of w) r();
  }

  /** Sends what is still queued (a line without newline included), then closes the driver. */
  async close(): Promise<void> {
    if (this.closed) return;
    const now = new Date();
    for (const s of ['stdout', 'stderr'] as const) if (this.pending[s].length) this.flushLine(s, now, false);
    this.closed = true;
    while (this.pumping) await this.pumping;
    this.release();
    await this.driver.close().catch(() => {});
  }
}

/** `sink` with the local cache written beside it (dual logging); both wait and close together. */
export function withCache(sink: LogSink, cache: LogSink | null): LogSink {
  if (!cache) return sink;
  return {
    log(stream, chunk) {
      const a = cache.log(stream, chunk);
      const b = sink.log(stream, chunk);
      if (a && b) return Promise.all([a, b]).then(() => {});
      return a ?? b;
    },
    async close() {
      await Promise.allSettled([sink.close(), cache.close()]);
    },
  };
}

function randomHex(n: number): string {
  const b = Buffer.alloc(n / 2);
  for (let i = 0; i < b.length; i++) b[i] = Math.floor(Math.random() * 256);
  return b.toString('hex');
}
