// The supervisor's gRPC services on @grpc/grpc-js, with the message and service types generated
// from our protos (gen/, made by hack/gen-protos.ts with ts-proto). One channel to the socket is
// shared by every service client; a call carries the namespace, a deadline and an AbortSignal, waits
// for the connection within its deadline (the supervisor may be restarting), and fails with the
// engine's error classes, containerd's message kept intact.
import * as grpc from '@grpc/grpc-js';
import { EngineError, type ErrorCode } from '../../lib/errors.ts';
import { ContainersClient } from './gen/containers.ts';
import { ContentClient } from './gen/content.ts';
import { DiffClient } from './gen/diff.ts';
import { EventsClient } from './gen/events.ts';
import type { Timestamp } from './gen/google/protobuf/timestamp.ts';
import { ImagesClient } from './gen/images.ts';
import { LeasesClient } from './gen/leases.ts';
import { SnapshotsClient } from './gen/snapshots.ts';
import { TasksClient } from './gen/tasks.ts';
import { VersionClient } from './gen/version.ts';

/** The supervisor's socket path of an address: `unix:<path>`, `unix://<absolute path>` or a plain path. */
export function socketPath(address: string): string {
  if (address.startsWith('unix://')) return address.slice('unix://'.length);
  if (address.startsWith('unix:')) return address.slice('unix:'.length);
  return address;
}

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.max_receive_message_length': 16 * 1024 * 1024,
  // The supervisor restarts in well under a second: reconnect soon, and never wait long between tries.
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 2_000,
};

export interface SupervisorConnection {
  version: VersionClient;
  containers: ContainersClient;
  tasks: TasksClient;
  events: EventsClient;
  content: ContentClient;
  leases: LeasesClient;
  snapshots: SnapshotsClient;
  diff: DiffClient;
  images: ImagesClient;
  /** Aborted by close(): calls still waiting end then (a channel's close leaves them running). */
  closed: AbortSignal;
  close(): void;
}

/** One channel to the supervisor's socket and the service clients on it. */
export function connectSupervisor(address: string): SupervisorConnection {
  const target = `unix://${socketPath(address)}`;
  const credentials = grpc.credentials.createInsecure();
  const channel = new grpc.Channel(target, credentials, CHANNEL_OPTIONS);
  const options = { channelOverride: channel };
  const clients = {
    version: new VersionClient(target, credentials, options),
    containers: new ContainersClient(target, credentials, options),
    tasks: new TasksClient(target, credentials, options),
    events: new EventsClient(target, credentials, options),
    content: new ContentClient(target, credentials, options),
    leases: new LeasesClient(target, credentials, options),
    snapshots: new SnapshotsClient(target, credentials, options),
    diff: new DiffClient(target, credentials, options),
    images: new ImagesClient(target, credentials, options),
  };
  const closing = new AbortController();
  return {
    ...clients,
    closed: closing.signal,
    close() {
      closing.abort();
      channel.close();
    },
  };
}

const metadataByNamespace = new Map<string, grpc.Metadata>();

/**
 * The namespace header, and wait-for-ready: a call made while the channel reconnects waits for the
 * connection within its deadline instead of failing at once. One object per namespace is shared
 * (grpc-js copies metadata per call). With a lease, a copy also carries the `containerd-lease`
 * header: what the call creates (content, snapshots, images) is held by that lease. Leases come and
 * go (one per pull), so those copies are not cached.
 */
export function nsMetadata(namespace: string, lease?: string): grpc.Metadata {
  let md = metadataByNamespace.get(namespace);
  if (!md) {
    md = new grpc.Metadata({ waitForReady: true });
    md.set('containerd-namespace', namespace);
    metadataByNamespace.set(namespace, md);
  }
  if (!lease) return md;
  const leased = md.clone();
  leased.set('containerd-lease', lease);
  return leased;
}

const CODES: Partial<Record<grpc.status, ErrorCode>> = {
  [grpc.status.NOT_FOUND]: 'NotFound',
  [grpc.status.ALREADY_EXISTS]: 'AlreadyExists',
  [grpc.status.FAILED_PRECONDITION]: 'FailedPrecondition',
  [grpc.status.INVALID_ARGUMENT]: 'InvalidArgument',
  [grpc.status.UNAVAILABLE]: 'Unavailable',
  [grpc.status.CANCELLED]: 'Canceled',
  [grpc.status.DEADLINE_EXCEEDED]: 'Unavailable',
};

/** A gRPC failure as an engine error: the class from the status, containerd's message as it is. */
export function mapGrpcError(err: unknown, what: string): EngineError {
  if (err instanceof EngineError) return err;
  const e = err as Partial<grpc.ServiceError>;
  const code = typeof e.code === 'number' ? e.code : -1;
  const out = new EngineError(CODES[code as grpc.status] ?? 'Internal', e.details || e.message || String(err), { cause: err });
  // UNAVAILABLE is the transport's (no connection, or it dropped): lib/errors.ts isUnreachable.
  return Object.assign(out, { grpcCode: code, operation: what, unreachable: code === grpc.status.UNAVAILABLE });
}

export interface CallOptions {
  namespace: string;
  /** A lease id: the `containerd-lease` header, holding what the call creates. */
  lease?: string;
  /** Milliseconds; 0 or undefined: no deadline. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A generated client's unary method, bound to its client. */
export type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: (error: grpc.ServiceError | null, response: Res) => void,
) => grpc.ClientUnaryCall;

/** One unary call; `what` names it in errors. */
export function unary<Req, Res>(what: string, method: UnaryMethod<Req, Res>, request: Req, opts: CallOptions): Promise<Res> {
  const { signal } = opts;
  if (signal?.aborted) return Promise.reject(new EngineError('Canceled', `${what}: canceled`));
  return new Promise<Res>((resolve, reject) => {
    const onAbort = () => call.cancel();
    const call = method(request, nsMetadata(opts.namespace, opts.lease), { deadline: deadlineOf(opts) }, (err, res) => {
      signal?.removeEventListener('abort', onAbort);
      if (!err) resolve(res);
      else if (signal?.aborted) reject(new EngineError('Canceled', `${what}: canceled`, { cause: err }));
      else reject(mapGrpcError(err, what));
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const deadlineOf = (opts: CallOptions): number => (opts.timeoutMs ? Date.now() + opts.timeoutMs : Infinity);

/** The error a failed call ends with: Canceled when our signal ended it, else the mapped status. */
function callError(err: unknown, what: string, signal?: AbortSignal): EngineError {
  if (signal?.aborted) return new EngineError('Canceled', `${what}: canceled`, { cause: err });
  return mapGrpcError(err, what);
}

/** A generated client's server-streaming method, bound to its client. */
export type ServerStreamMethod<Req, Res> = (request: Req, metadata: grpc.Metadata, options: Partial<grpc.CallOptions>) => grpc.ClientReadableStream<Res>;

/**
 * One server-streaming call, its messages in order. The deadline covers the whole stream; leaving
 * the loop early (break, a thrown error) or an abort cancels the call.
 */
export async function* serverStream<Req, Res>(what: string, method: ServerStreamMethod<Req, Res>, request: Req, opts: CallOptions): AsyncGenerator<Res> {
  const { signal } = opts;
  if (signal?.aborted) throw new EngineError('Canceled', `${what}: canceled`);
  const call = method(request, nsMetadata(opts.namespace, opts.lease), { deadline: deadlineOf(opts) });
  const onAbort = () => call.cancel();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const message of call) yield message as Res;
  } catch (err) {
    throw callError(err, what, signal);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    // A no-op once the stream has ended; stops it when the caller left early.
    call.cancel();
  }
}

/** Every message of a server-streaming call (List calls answer a few batches). */
export async function collectStream<Req, Res>(what: string, method: ServerStreamMethod<Req, Res>, request: Req, opts: CallOptions): Promise<Res[]> {
  const out: Res[] = [];
  for await (const m of serverStream(what, method, request, opts)) out.push(m);
  return out;
}

/** A generated client's bidirectional-streaming method, bound to its client. */
export type DuplexMethod<Req, Res> = (metadata: grpc.Metadata, options: Partial<grpc.CallOptions>) => grpc.ClientDuplexStream<Req, Res>;

/** A bidirectional stream used request by response, as containerd's content Write is. */
export interface DuplexExchange<Req, Res> {
  /** Sends one request and answers the next response. */
  exchange(request: Req): Promise<Res>;
  /** Ends our side and waits for the server to end the call (responses not asked for are dropped). */
  end(): Promise<void>;
  /** Cancels the call; pending exchanges fail. */
  cancel(): void;
}

/** Opens a bidirectional-streaming call; the deadline covers the whole call, an abort cancels it. */
export function duplexExchange<Req, Res>(what: string, method: DuplexMethod<Req, Res>, opts: CallOptions): DuplexExchange<Req, Res> {
  const { signal } = opts;
  const call = method(nsMetadata(opts.namespace, opts.lease), { deadline: signal?.aborted ? Date.now() : deadlineOf(opts) });
  const responses: Res[] = [];
  const waiters: Array<{ resolve(r: Res): void; reject(e: Error): void }> = [];
  let failure: EngineError | null = null;
  const onAbort = () => call.cancel();
  signal?.addEventListener('abort', onAbort, { once: true });
  const fail = (err: EngineError) => {
    failure ??= err;
    for (const w of waiters.splice(0)) w.reject(failure);
  };
  const done = new Promise<void>((resolve, reject) => {
    call.on('data', (m: Res) => {
      const w = waiters.shift();
      if (w) w.resolve(m);
      else responses.push(m);
    });
    call.on('error', (err) => {
      signal?.removeEventListener('abort', onAbort);
      fail(callError(err, what, signal));
      reject(failure);
    });
    call.on('end', () => {
      signal?.removeEventListener('abort', onAbort);
      fail(new EngineError('Internal', `${what}: the stream ended without a response`));
      resolve();
    });
  });
  done.catch(() => {}); // Reported through exchange() or end().
  return {
    exchange(request) {
      // Responses are matched to requests in order; one already received answers this one.
      const ready = responses.shift();
      if (ready === undefined && failure) return Promise.reject(failure);
      call.write(request);
      if (ready !== undefined) return Promise.resolve(ready);
      return new Promise<Res>((resolve, reject) => waiters.push({ resolve, reject }));
    },
    end() {
      call.end();
      return done;
    },
    cancel() {
      call.cancel();
    },
  };
}

/** containerd uses bare type URLs ("containerd.events.TaskExit"), never type.googleapis.com/. */
export function anyOf<T>(typeUrl: string, type: { encode(m: T): { finish(): Uint8Array } }, message: T): { type_url: string; value: Buffer } {
  return { type_url: typeUrl, value: Buffer.from(type.encode(message).finish()) };
}

/** An OCI document (spec, process, resources) travels as JSON in an Any. */
export function jsonAny(typeUrl: string, obj: unknown): { type_url: string; value: Buffer } {
  return { type_url: typeUrl, value: Buffer.from(JSON.stringify(obj)) };
}

/** Go's zero time (0001-01-01, seconds -62135596800) and a missing timestamp both mean "unset". */
export function toDate(ts: Timestamp | null | undefined): Date | null {
  if (!ts) return null;
  const s = ts.seconds ?? 0;
  const n = ts.nanos ?? 0;
  if (s < 0 || (s === 0 && n === 0)) return null;
  return new Date(s * 1000 + Math.floor(n / 1e6));
}
