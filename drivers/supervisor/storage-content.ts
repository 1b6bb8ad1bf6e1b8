// The supervisor's (containerd's) content store: blobs by digest. A blob is written through a ref
// (an ingest, resumable and locked while one writer holds it) with containerd's client protocol on
// the Write stream: WRITE messages carry the data at their offset, a last COMMIT carries the total
// and the expected digest, and containerd checks both before the blob becomes visible.
import { Readable } from 'node:stream';
import { EngineError, isCode } from '../../lib/errors.ts';
import {
  AbortRequest, DeleteContentRequest, InfoRequest, ListContentRequest, ReadContentRequest, WriteContentRequest,
  type ContentClient, type Info, type WriteContentResponse,
} from './gen/content.ts';
import { AddResourceRequest, type LeasesClient } from './gen/leases.ts';
import { collectStream, duplexExchange, serverStream, toDate, unary, type CallOptions } from './rpc.ts';

/** One WriteContentRequest carries at most this much data (well under the 16 MiB message limit). */
export const WRITE_CHUNK = 1024 * 1024;

/** Per-call options: a deadline (ms, 0 for none; each method has a default) and an AbortSignal. */
export interface StorageCallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Options of a call that creates something: a lease holds it (see SupervisorStorage.leases). */
export interface LeasedCallOptions extends StorageCallOptions {
  lease?: string;
}

export interface BlobInfo {
  digest: string;
  size: number;
  labels: Record<string, string>;
  createdAt: Date | null;
  updatedAt: Date | null;
}

export interface WriteBlobOptions extends LeasedCallOptions {
  /** The ingest's name; one writer at a time per ref (containerd answers Unavailable to a second). */
  ref: string;
  /** `sha256:<hex>`: containerd refuses the commit when the data hashes otherwise. */
  digest: string;
  size: number;
  data: Readable | Buffer | Uint8Array;
  labels?: Record<string, string>;
}

export interface ContentStore {
  /** Writes a blob and answers its digest; a blob already stored counts as written (and joins `lease`). */
  writeBlob(o: WriteBlobOptions): Promise<string>;
  info(digest: string, o?: StorageCallOptions): Promise<BlobInfo>;
  /** The blob's bytes as a stream (destroy it to stop reading); NotFound surfaces as its error. */
  read(digest: string, o?: StorageCallOptions & { offset?: number; size?: number }): Readable;
  delete(digest: string, o?: StorageCallOptions): Promise<void>;
  list(filters?: string[], o?: StorageCallOptions): Promise<BlobInfo[]>;
  /** Drops an unfinished write (its ingest). */
  abort(ref: string, o?: StorageCallOptions): Promise<void>;
}

export interface ContentDeps {
  content: ContentClient;
  leases: LeasesClient;
  namespace: string;
  /** Aborted when the connection closes. */
  closed: AbortSignal;
  /** Default deadline of ordinary calls (ms). */
  timeoutMs: number;
  /** Default deadline of whole streams: writing or reading a blob (ms). */
  streamTimeoutMs: number;
}

export function blobInfo(i: Info | undefined): BlobInfo {
  return { digest: i?.digest ?? '', size: i?.size ?? 0, labels: i?.labels ?? {}, createdAt: toDate(i?.created_at), updatedAt: toDate(i?.updated_at) };
}

/** Data as chunks of at most WRITE_CHUNK bytes. */
async function* chunks(data: Readable | Buffer | Uint8Array): AsyncGenerator<Buffer> {
  const source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array> = data instanceof Readable ? data : [data];
  for await (const c of source) {
    const buf = typeof c === 'string' ? Buffer.from(c) : Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
    for (let at = 0; at < buf.length; at += WRITE_CHUNK) yield buf.subarray(at, at + WRITE_CHUNK);
  }
}

export function createContentStore(d: ContentDeps): ContentStore {
  const { content, leases } = d;
  const opts = (o: LeasedCallOptions | undefined, fallback: number): CallOptions => ({
    namespace: d.namespace,
    lease: o?.lease,
    timeoutMs: o?.timeoutMs ?? fallback,
    signal: o?.signal ? AbortSignal.any([o.signal, d.closed]) : d.closed,
  });

  /** A blob that was already there is not under the caller's lease yet: add it, as a write would have. */
  async function holdExisting(o: WriteBlobOptions): Promise<string> {
    if (o.lease) {
      const req = AddResourceRequest.fromPartial({ id: o.lease, resource: { id: o.digest, type: 'content' } });
      await unary('Leases.AddResource', leases.addResource.bind(leases), req, opts({ ...o, lease: undefined }, d.timeoutMs));
    }
    return o.digest;
  }

  return {
    async writeBlob(o) {
      const what = `Content.Write ${o.ref}`;
      const call = opts(o, d.streamTimeoutMs);
      const session = duplexExchange<WriteContentRequest, WriteContentResponse>(what, content.write.bind(content), call);
      try {
        // STAT opens (and locks) the ingest; with the expected digest, containerd answers AlreadyExists
        // at once for a blob it has. A leftover ingest's data is dropped: our first WRITE at offset 0
        // truncates it, as the data source cannot be rewound to resume.
        await session.exchange(WriteContentRequest.fromPartial({ action: 'STAT', ref: o.ref, total: o.size, expected: o.digest }));
        let offset = 0;
        for await (const chunk of chunks(o.data)) {
          if (offset + chunk.length > o.size) throw new EngineError('InvalidArgument', `${what}: more data than the ${o.size} bytes declared`);
          const r = await session.exchange(WriteContentRequest.fromPartial({ action: 'WRITE', ref: o.ref, offset, data: chunk }));
          offset += chunk.length;
          if (r.offset !== offset) throw new EngineError('Internal', `${what}: containerd is at offset ${r.offset}, we wrote ${offset}`);
        }
        if (offset !== o.size) throw new EngineError('InvalidArgument', `${what}: ${offset} bytes of data, ${o.size} declared`);
        // COMMIT names the offset: one of 0 would truncate what was written.
        const r = await session.exchange(WriteContentRequest.fromPartial({ action: 'COMMIT', ref: o.ref, offset, total: o.size, expected: o.digest, labels: o.labels ?? {} }));
        if (r.digest !== o.digest) throw new EngineError('Internal', `${what}: committed ${r.digest}, expected ${o.digest}`);
        await session.end();
        return o.digest;
      } catch (err) {
        session.cancel();
        if (isCode(err, 'AlreadyExists')) return holdExisting(o);
        // Leave no half-written ingest behind (the ref stays usable for a retry).
        if (!isCode(err, 'Canceled')) await unary('Content.Abort', content.abort.bind(content), AbortRequest.fromPartial({ ref: o.ref }), opts(undefined, d.timeoutMs)).catch(() => {});
        throw err;
      } finally {
        if (o.data instanceof Readable && !o.data.readableEnded) o.data.destroy();
      }
    },

    async info(digest, o) {
      const r = await unary('Content.Info', content.info.bind(content), InfoRequest.fromPartial({ digest }), opts(o, d.timeoutMs));
      return blobInfo(r.info);
    },

    read(digest, o) {
      const req = ReadContentRequest.fromPartial({ digest, offset: o?.offset ?? 0, size: o?.size ?? 0 });
      const messages = serverStream('Content.Read', content.read.bind(content), req, opts(o, d.streamTimeoutMs));
      return Readable.from((async function* () {
        for await (const m of messages) if (m.data.length) yield Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength);
      })(), { objectMode: false });
    },

    async delete(digest, o) {
      await unary('Content.Delete', content.delete.bind(content), DeleteContentRequest.fromPartial({ digest }), opts(o, d.timeoutMs));
    },

    async list(filters = [], o) {
      const batches = await collectStream('Content.List', content.list.bind(content), ListContentRequest.fromPartial({ filters }), opts(o, d.timeoutMs));
      return batches.flatMap((b) => b.info.map(blobInfo));
    },

    async abort(ref, o) {
      await unary('Content.Abort', content.abort.bind(content), AbortRequest.fromPartial({ ref }), opts(o, d.timeoutMs));
    },
  };
}
