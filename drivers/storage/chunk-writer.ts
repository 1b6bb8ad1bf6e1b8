// Streams chunks into a file with few thread-pool round trips: while one write is in flight, the
// chunks that arrive queue up and go out together in one writev. Layer data arrives in 16-64 KiB
// pieces; writing each on its own costs a thread-pool hand-off (and a wake-up on each side) apiece.
import type { FileHandle } from 'node:fs/promises';

/** Write all of `bufs` at `position` (null: the file's current position), however short each writev. */
async function writevAll(fh: FileHandle, bufs: Buffer[], position: number | null): Promise<void> {
  let rest = bufs;
  let pos = position;
  for (;;) {
    const total = rest.reduce((n, b) => n + b.length, 0);
    const { bytesWritten } = await fh.writev(rest, pos ?? undefined);
    if (bytesWritten >= total) return;
    if (bytesWritten === 0) throw Object.assign(new Error('writev wrote nothing'), { code: 'EIO' });
    if (pos !== null) pos += bytesWritten;
    let skip = bytesWritten;
    const next: Buffer[] = [];
    for (const b of rest) {
      if (skip >= b.length) {
        skip -= b.length;
        continue;
      }
      next.push(skip > 0 ? b.subarray(skip) : b);
      skip = 0;
    }
    rest = next;
  }
}

export class ChunkWriter {
  private readonly fh: FileHandle;
  private pos: number | null;
  private readonly limit: number;
  private queue: Buffer[] = [];
  private queued = 0;
  private inflight: Promise<void> | null = null;
  private failed: { err: unknown } | null = null;

  /**
   * `position`: where the first chunk goes (null: the file's current position). `limit`: bytes
   * queued beyond which write() asks the caller to wait. Chunks must not change once written.
   */
  constructor(fh: FileHandle, position: number | null, limit = 1 << 20) {
    this.fh = fh;
    this.pos = position;
    this.limit = limit;
  }

  /** Queue a chunk. Returns a promise only when the caller should wait before the next one. */
  write(chunk: Buffer): Promise<void> | undefined {
    if (this.failed) throw this.failed.err;
    if (chunk.length === 0) return undefined;
    this.queue.push(chunk);
    this.queued += chunk.length;
    this.inflight ??= this.drain();
    return this.queued > this.limit ? this.flush() : undefined;
  }

  /** Everything queued is written (throws the first write error). */
  async flush(): Promise<void> {
    while (this.inflight) await this.inflight;
    if (this.failed) throw this.failed.err;
  }

  /** Wait for the write in flight, ignoring errors (before the file is truncated or closed on failure). */
  async settle(): Promise<void> {
    this.queue = [];
    this.queued = 0;
    while (this.inflight) await this.inflight;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        const n = this.queued;
        this.queue = [];
        this.queued = 0;
        await writevAll(this.fh, batch, this.pos);
        if (this.pos !== null) this.pos += n;
      }
    } catch (err) {
      this.failed = { err };
      this.queue = [];
      this.queued = 0;
    } finally {
      this.inflight = null;
    }
  }
}
