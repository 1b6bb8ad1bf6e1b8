// A minimal gRPC client on node:http2: unary calls and server streams of raw protobuf bytes over one
// HTTP/2 connection to the supervisor's unix socket. The grpc package used before held ~1.5-2 MiB of
// heap for its code and allocated a lot per call for name resolution, load balancing, channelz,
// compression and interceptors, none of which a local, insecure, uncompressed peer needs.
import type * as Events from 'node:events';
import type * as Http2 from 'node:http2';
import type * as Net from 'node:net';

// Not ES-module namespace imports: see lib/node-http.ts.
const http2: typeof Http2 = process.getBuiltinModule('node:http2');
const net: typeof Net = process.getBuiltinModule('node:net');
const EventEmitter: typeof Events.EventEmitter = process.getBuiltinModule('node:events').EventEmitter;
const { NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM, NGHTTP2_ENHANCE_YOUR_CALM } = http2.constants;

/** The gRPC status codes we produce or map. */
export const status = {
  OK: 0, CANCELLED: 1, UNKNOWN: 2, INVALID_ARGUMENT: 3, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, ALREADY_EXISTS: 6, PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8, FAILED_PRECONDITION: 9, UNIMPLEMENTED: 12, INTERNAL: 13, UNAVAILABLE: 14, UNAUTHENTICATED: 16,
} as const;

const NAMES: Record<number, string> = Object.fromEntries(Object.entries(status).map(([k, v]) => [v, k]));

/** The shape the old grpc package's errors had, which mapGrpcError and its callers read. */
export interface GrpcError extends Error {
  code: number;
  details: string;
}

export function grpcError(code: number, details: string): GrpcError {
  return Object.assign(new Error(`${code} ${NAMES[code] ?? 'UNKNOWN'}: ${details}`), { code, details });
}

const MAX_MESSAGE = 16 * 1024 * 1024;
const WINDOW = 1 << 20;
// Reconnect backoff of a call waiting for the supervisor (it restarts in well under a second).
const BACKOFF_START_MS = 100;
const BACKOFF_MAX_MS = 2_000;

export interface CallOptions {
  /** Extra request headers (the containerd-namespace). */
  headers: Http2.OutgoingHttpHeaders;
  /** Absolute time in ms (Date.now() clock); none when undefined. */
  deadline?: number;
  signal?: AbortSignal;
}

export interface ServerStream {
  on(event: 'data', fn: (msg: Buffer) => void): this;
  on(event: 'error', fn: (err: GrpcError) => void): this;
  on(event: 'end', fn: () => void): this;
  cancel(): void;
}

/** Calls the message callback for each length-prefixed message in the body, however it is chunked. */
function deframer(onMessage: (m: Buffer) => void): (chunk: Buffer) => GrpcError | null {
  let chunks: Buffer[] = [];
  let size = 0;
  let need = 5;
  return (chunk) => {
    chunks.push(chunk);
    size += chunk.length;
    // A large message arrives in many chunks: they are joined once, when it is complete.
    while (size >= need) {
      const buf = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
      // We never offer compression, so a compressed message is a protocol error.
      if (buf[0] !== 0) return grpcError(status.INTERNAL, 'Received compressed message but compression is not enabled');
      const len = buf.readUInt32BE(1);
      if (len > MAX_MESSAGE) return grpcError(status.RESOURCE_EXHAUSTED, `Received message larger than max (${len} vs. ${MAX_MESSAGE})`);
      chunks = [buf];
      if (size < 5 + len) {
        need = 5 + len;
        break;
      }
      onMessage(buf.subarray(5, 5 + len));
      const rest = buf.subarray(5 + len);
      chunks = rest.length ? [rest] : [];
      size = rest.length;
      need = 5;
    }
    return null;
  };
}

/** grpc's mapping of an HTTP status that came without a grpc-status. */
function httpStatusError(code: number): GrpcError {
  const c =
    code === 400 ? status.INTERNAL
    : code === 401 ? status.UNAUTHENTICATED
    : code === 403 ? status.PERMISSION_DENIED
    : code === 404 ? status.UNIMPLEMENTED
    : [429, 502, 503, 504].includes(code) ? status.UNAVAILABLE
    : status.UNKNOWN;
  return grpcError(c, `Received HTTP status code ${code}`);
}

function percentDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export class GrpcClient {
  private session: Http2.ClientHttp2Session | null = null;
  private ready: Promise<Http2.ClientHttp2Session> | null = null;
  private closed = false;
  /** In-flight streams: the session keeps the process alive only while there are some, as before. */
  private active = 0;
  /** The end functions of unfinished calls, so close() can fail them. */
  private readonly calls = new Set<(err: GrpcError) => void>();

  private readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  /** The shared session once connected; a new one after the last closed, failed or went away. */
  private connect(): Promise<Http2.ClientHttp2Session> {
    if (this.closed) return Promise.reject(new Error('Channel has been shut down'));
    if (this.ready) return this.ready;
    const s = http2.connect('http://localhost', { createConnection: () => net.connect(this.path), settings: { initialWindowSize: WINDOW } });
    this.session = s;
    const drop = () => {
      if (this.session !== s) return;
      this.session = null;
      this.ready = null;
    };
    // Every session error also closes it; the streams on it see their own error or close.
    s.on('error', drop);
    s.on('goaway', drop);
    s.on('close', drop);
    this.ready = new Promise((resolve, reject) => {
      s.once('connect', () => {
        s.setLocalWindowSize(WINDOW);
        if (this.active === 0) s.unref();
        resolve(s);
      });
      s.once('error', reject);
      s.once('close', () => reject(new Error('Connection closed')));
    });
    return this.ready;
  }

  /**
   * One unary call. It waits for the connection within its deadline (waitForReady): while the
   * supervisor restarts its socket is missing or refusing, and a call never sent is safe to hold.
   */
  unary(path: string, body: Buffer, opts: CallOptions): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      let res: Buffer | null = null;
      let extra = false;
      this.start(path, body, opts, true, (m) => (res ? (extra = true) : (res = m)), (err) => {
        if (!err && extra) err = grpcError(status.INTERNAL, 'Too many response messages for a unary call');
        if (!err && !res) err = grpcError(status.INTERNAL, 'No message received for a unary call');
        if (err) reject(err);
        else resolve(res!);
      });
    });
  }

  /** A server stream: 'data' per message, then 'end' (status OK) or one 'error'. Not waitForReady: the caller retries. */
  serverStream(path: string, body: Buffer, opts: CallOptions): ServerStream {
    const ee = new EventEmitter() as Events.EventEmitter & ServerStream;
    ee.cancel = this.start(path, body, opts, false, (m) => ee.emit('data', m), (err) => {
      // An 'error' without a listener would throw; after cancel() nobody may be listening.
      if (!err) ee.emit('end');
      else if (ee.listenerCount('error')) ee.emit('error', err);
    });
    return ee;
  }

  /** Starts a call; returns its cancel function. onEnd runs once, never before start() returned. */
  private start(path: string, body: Buffer, o: CallOptions, waitForReady: boolean, onMessage: (m: Buffer) => void, onEnd: (err: GrpcError | null) => void): () => void {
    let stream: Http2.ClientHttp2Stream | null = null;
    let deadlineTimer: NodeJS.Timeout | undefined;
    let retryTimer: NodeJS.Timeout | undefined;
    let done = false;
    const end = (err: GrpcError | null) => {
      if (done) return;
      done = true;
      clearTimeout(deadlineTimer);
      clearTimeout(retryTimer);
      o.signal?.removeEventListener('abort', cancel);
      this.calls.delete(end);
      if (stream && !stream.closed) stream.close(NGHTTP2_CANCEL);
      onEnd(err);
    };
    const cancel = () => end(grpcError(status.CANCELLED, 'Cancelled on client'));
    this.calls.add(end);
    o.signal?.addEventListener('abort', cancel, { once: true });
    if (o.deadline !== undefined) deadlineTimer = setTimeout(() => end(grpcError(status.DEADLINE_EXCEEDED, 'Deadline exceeded')), Math.max(0, o.deadline - Date.now()));

    const send = (session: Http2.ClientHttp2Session) => {
      const headers: Http2.OutgoingHttpHeaders = { ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...o.headers };
      if (o.deadline !== undefined) headers['grpc-timeout'] = `${Math.min(99_999_999, Math.max(1, o.deadline - Date.now()))}m`;
      try {
        stream = session.request(headers);
      } catch (err) {
        return end(grpcError(status.UNAVAILABLE, (err as Error).message));
      }
      const s = stream;
      this.active++;
      session.ref();
      let response: Http2.IncomingHttpHeaders | undefined;
      let trailers: Http2.IncomingHttpHeaders | undefined;
      let streamErr: Error | undefined;
      const push = deframer((m) => !done && onMessage(m));
      s.on('response', (h) => (response = h));
      s.on('trailers', (h) => (trailers = h));
      s.on('data', (chunk: Buffer) => {
        const err = done ? null : push(chunk);
        if (err) end(err);
      });
      s.on('error', (err) => (streamErr = err));
      s.on('close', () => {
        if (--this.active === 0) this.session?.unref();
        // Trailers-only responses carry the status in the response headers.
        const st = trailers?.['grpc-status'] !== undefined ? trailers : response?.['grpc-status'] !== undefined ? response : undefined;
        if (st) {
          const code = Number(st['grpc-status']);
          return end(code === status.OK ? null : grpcError(Number.isInteger(code) ? code : status.UNKNOWN, percentDecode(String(st['grpc-message'] ?? ''))));
        }
        if (response && Number(response[':status']) !== 200) return end(httpStatusError(Number(response[':status'])));
        const rst = s.rstCode ?? 0;
        if (rst === NGHTTP2_ENHANCE_YOUR_CALM) return end(grpcError(status.RESOURCE_EXHAUSTED, 'Bandwidth exhausted or memory limit exceeded'));
        // The connection broke (the supervisor went away): node closes its streams with CANCEL.
        if (rst === NGHTTP2_REFUSED_STREAM || rst === NGHTTP2_CANCEL || session.closed || session.destroyed) {
          return end(grpcError(status.UNAVAILABLE, streamErr?.message ?? 'Connection dropped'));
        }
        end(grpcError(status.INTERNAL, streamErr?.message ?? `Stream ended without a status (RST_STREAM code ${rst})`));
      });
      // 5-byte prefix: not compressed, big-endian length.
      const msg = Buffer.allocUnsafe(5 + body.length);
      msg[0] = 0;
      msg.writeUInt32BE(body.length, 1);
      body.copy(msg, 5);
      s.end(msg);
    };

    let backoff = BACKOFF_START_MS;
    const attempt = () => {
      if (done) return;
      if (o.signal?.aborted) return cancel();
      this.connect().then(
        (session) => !done && send(session),
        (err: Error) => {
          if (done) return;
          if (!waitForReady || this.closed) return end(grpcError(status.UNAVAILABLE, `connect ${this.path}: ${err.message}`));
          retryTimer = setTimeout(attempt, backoff);
          backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
        },
      );
    };
    process.nextTick(attempt);
    return cancel;
  }

  /** Fails the unfinished calls and closes the connection. */
  close(): void {
    this.closed = true;
    for (const end of [...this.calls]) end(grpcError(status.CANCELLED, 'Channel closed'));
    this.session?.destroy();
    this.session = null;
    this.ready = null;
  }
}
