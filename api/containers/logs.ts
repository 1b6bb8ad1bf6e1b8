// GET /containers/{id}/logs: headers flushed at once, one frame per entry (multiplexed without a
// TTY), follow until the container stops, errors after the header go in band.
import type { FastifyReply } from 'fastify';
import { isRunning, Containers, type ContainerResource } from '../../store/kinds/container.ts';
import type { ContainerLogReader } from '../ports.ts';
import { FRAME_HEADER_BYTES, frame, writeFrameHeader } from '../stdcopy.ts';
import type { ApiStore } from './store.ts';
import { settle } from '../write-and-wait.ts';

export interface LogsQuery {
  stdout: boolean;
  stderr: boolean;
  follow: boolean;
  timestamps: boolean;
  details: boolean;
  since: number;
  until: number;
  tail: number;
  apiVersion: number;
}

/** History goes out in writes of about this size. */
const FLUSH_BYTES = 64 * 1024;
/** A batch buffer's size: a flush's worth plus room for one more 16 KiB json-file entry. */
const BATCH_BYTES = FLUSH_BYTES + 17 * 1024;

/**
 * Frames entries straight into one buffer per write (header, prefix and line copied once), instead
 * of a buffer per frame and another per batch: reading a long log allocates a third as much.
 */
class FrameBatch {
  private buf: Buffer | null = null;
  private off = 0;
  private readonly raw: boolean;
  /** 0: a buffer of exactly each entry's size (a follower flushes every entry). */
  private readonly batchBytes: number;
  constructor(raw: boolean, batchBytes: number) {
    this.raw = raw;
    this.batchBytes = batchBytes;
  }

  get size(): number {
    return this.off;
  }

  add(stream: number, prefix: Buffer | null, line: Buffer): void {
    const payload = (prefix?.length ?? 0) + line.length;
    const need = (this.raw ? 0 : FRAME_HEADER_BYTES) + payload;
    if (!this.buf || this.buf.length - this.off < need) {
      const next = Buffer.allocUnsafeSlow(Math.max(this.batchBytes, this.off + need));
      if (this.buf) this.buf.copy(next, 0, 0, this.off);
      this.buf = next;
    }
    const b = this.buf;
    if (!this.raw) {
      writeFrameHeader(b, this.off, stream, payload);
      this.off += FRAME_HEADER_BYTES;
    }
    if (prefix) this.off += prefix.copy(b, this.off);
    this.off += line.copy(b, this.off);
  }

  take(): Buffer | undefined {
    const out = this.buf?.subarray(0, this.off);
    this.buf = null;
    this.off = 0;
    return out;
  }
}

/** The abort reason when the answer ends (made once: a default AbortError costs a stack trace per request). */
const DONE = new Error('logs request ended');

export async function streamLogs(
  reply: FastifyReply,
  c: ContainerResource,
  store: ApiStore,
  reader: ContainerLogReader,
  o: LogsQuery,
): Promise<void> {
  const tty = !!c.spec.config.Tty;
  const contentType = !tty && o.apiVersion >= 1.42 ? 'application/vnd.docker.multiplexed-stream' : 'application/vnd.docker.raw-stream';
  const abort = new AbortController();
  const stopFollowing = new AbortController();
  reply.hijack();
  const res = reply.raw;
  res.on('close', () => abort.abort(DONE));
  res.writeHead(200, { 'Content-Type': contentType });
  const follow = o.follow && isRunning(c.status);
  // A follower learns at once that the stream is open; history alone goes out with its first
  // bytes (a short log: headers and body in one write).
  if (follow) {
    res.flushHeaders();
    settle(store, Containers, c.name, (r) => !r || !isRunning(r.status), { signal: abort.signal })
      .then(() => stopFollowing.abort(), () => {});
  }
  try {
    const iter = reader.read(c.name, { stdout: o.stdout, stderr: o.stderr, follow, since: o.since, until: o.until, tail: o.tail }, abort.signal, stopFollowing.signal);
    // Coalesce writes when reading history; flush each entry promptly when following.
    const batch = new FrameBatch(tty, follow ? 0 : BATCH_BYTES);
    for await (const e of iter) {
      let prefix = '';
      if (o.timestamps) prefix += `${e.time} `;
      if (o.details) {
        prefix += `${detailsOf(e.attrs)} `;
      }
      batch.add(e.stream === 'stdout' ? 1 : 2, prefix ? Buffer.from(prefix) : null, e.line);
      if (batch.size >= FLUSH_BYTES || follow) {
        if (!res.write(batch.take())) await new Promise((r) => res.once('drain', r));
      }
    }
    res.end(batch.take());
  } catch (err) {
    if (!abort.signal.aborted) {
      const msg = Buffer.from(`Error grabbing logs: ${err instanceof Error ? err.message : String(err)}`);
      res.write(tty ? msg : frame(3, msg));
    }
  } finally {
    abort.abort(DONE);
    if (!res.writableEnded) res.end();
  }
}

const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Go's url.QueryEscape: all but [A-Za-z0-9_.~-] percent-encoded, space as '+'. */
function queryEscape(s: string): string {
  return encodeURIComponent(s.toWellFormed()).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%20/g, '+');
}

/** The --details prefix of an entry, as the reference's attrsByteSlice: `k=v,k2=v2` sorted by key. */
function detailsOf(attrs: Record<string, string> | undefined): string {
  return attrs ? Object.keys(attrs).sort(byUtf8).map((k) => `${queryEscape(k)}=${queryEscape(attrs[k]!)}`).join(',') : '';
}
