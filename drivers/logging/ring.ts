// mode=non-blocking, for every log driver (json-file, local and the remote ones), as the
// reference's RingLogger (daemon/logger/ring.go): the container's output is cut into messages
// (one per line, its newline kept; a line still without newline once it reaches 16 KiB goes on
// as a piece of its own) and queued in a ring of max-buffer-size bytes (default 1 MB; a message
// counts the length of its line without the newline). A message that does not fit while others
// wait is dropped; one that does not fit an empty ring is queued all the same. log() never asks
// the container's output to wait. The ring is drained into the wrapped driver one message at a
// time, waiting whenever that driver is behind (its queue is limited to RING_INNER_QUEUE bytes,
// so the ring and not the driver's own queue is what holds the backlog). close() hands what is
// still queued (and a last line without newline) to the driver, then closes it.
import type { Logger } from 'pino';
import type { LogSink } from './batched-file.ts';

/** The reference's defaultRingMaxSize. */
export const DEFAULT_RING_SIZE = 1e6;
/** Bytes the wrapped driver may queue before it asks the ring to wait. */
export const RING_INNER_QUEUE = 64 * 1024;
const MAX_LINE = 16 * 1024;

interface Message {
  stream: 'stdout' | 'stderr';
  /** The line with its newline (or a piece without). */
  data: Buffer;
  /** The size the ring counts: the line without its newline. */
  size: number;
}

type Stream = 'stdout' | 'stderr';

export class RingSink implements LogSink {
  private readonly inner: LogSink;
  private readonly maxBytes: number;
  private readonly log_: Logger;
  private readonly pending: Record<Stream, Buffer[]> = { stdout: [], stderr: [] };
  private readonly pendingLen: Record<Stream, number> = { stdout: 0, stderr: 0 };
  private queue: Message[] = [];
  private head = 0;
  private queuedBytes = 0;
  private pumping: Promise<void> | null = null;
  private closed = false;
  private failures = 0;
  /** Messages dropped because the ring was full. */
  dropped = 0;

  constructor(inner: LogSink, maxBytes: number, log: Logger) {
    this.inner = inner;
    this.maxBytes = maxBytes < 0 ? DEFAULT_RING_SIZE : maxBytes;
    this.log_ = log;
    inner.limitQueue?.(RING_INNER_QUEUE);
  }

  log(stream: Stream, chunk: Buffer): void {
    if (this.closed || chunk.length === 0) return;
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl + 1);
      if (this.pendingLen[stream] > 0) {
        const data = Buffer.concat([...this.pending[stream], piece]);
        this.pending[stream] = [];
        this.pendingLen[stream] = 0;
        this.enqueue({ stream, data, size: data.length - 1 });
      } else {
        // The caller may reuse its buffer: the message keeps a copy.
        this.enqueue({ stream, data: Buffer.from(piece), size: piece.length - 1 });
      }
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.pending[stream].push(Buffer.from(chunk.subarray(start)));
      this.pendingLen[stream] += chunk.length - start;
      if (this.pendingLen[stream] >= MAX_LINE) this.flushPending(stream);
    }
  }

  private flushPending(stream: Stream): void {
    const parts = this.pending[stream];
    if (!parts.length) return;
    const data = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    this.pending[stream] = [];
    this.pendingLen[stream] = 0;
    this.enqueue({ stream, data, size: data.length });
  }

  private enqueue(m: Message): void {
    if (m.size + this.queuedBytes > this.maxBytes && this.queue.length - this.head > 0) {
      this.dropped++;
      return;
    }
    this.queue.push(m);
    this.queuedBytes += m.size;
    if (!this.pumping) this.pumping = this.pump();
  }

  private async pump(): Promise<void> {
    // Let the producer queue a batch first (and keep log() synchronous).
    await Promise.resolve();
    while (this.head < this.queue.length) {
      const m = this.queue[this.head]!;
      this.queue[this.head++] = undefined as unknown as Message;
      this.queuedBytes -= m.size;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      try {
        const wait = this.inner.log(m.stream, m.data);
        if (wait) await wait;
      } catch (err) {
        if (this.failures++ % 1000 === 0) this.log_.error({ err, failures: this.failures }, 'Error writing log message');
      }
    }
    this.queue = [];
    this.head = 0;
    this.pumping = null;
  }

  async close(): Promise<void> {
    if (this.closed) {
      while (this.pumping) await this.pumping;
      return;
    }
    for (const s of ['stdout', 'stderr'] as const) this.flushPending(s);
    this.closed = true;
    while (this.pumping) await this.pumping;
    await this.inner.close();
  }
}

/** Wraps `sink` in a ring when the config asks for mode=non-blocking. */
export function withLogMode(sink: LogSink, cfg: Record<string, string>, ramInBytes: (s: string) => number, log: Logger): LogSink {
  if (cfg.mode !== 'non-blocking') return sink;
  const size = cfg['max-buffer-size'] !== undefined ? ramInBytes(cfg['max-buffer-size']) : DEFAULT_RING_SIZE;
  return new RingSink(sink, size, log);
}
