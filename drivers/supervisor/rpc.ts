// The supervisor's gRPC services on @grpc/grpc-js, with the message and service types generated
// from our protos (gen/, made by hack/gen-protos.ts with ts-proto). One channel to the socket is
// shared by every service client; a call carries the namespace, a deadline and an AbortSignal, waits
// for the connection within its deadline (the supervisor may be restarting), and fails with the
// engine's error classes, containerd's message kept intact.
import * as grpc from '@grpc/grpc-js';
import { EngineError, type ErrorCode } from '../../lib/errors.ts';
import { ContainersClient } from './gen/containers.ts';
import { EventsClient } from './gen/events.ts';
import type { Timestamp } from './gen/google/protobuf/timestamp.ts';
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
 * (grpc-js copies metadata per call).
 */
export function nsMetadata(namespace: string): grpc.Metadata {
  let md = metadataByNamespace.get(namespace);
  if (!md) {
    md = new grpc.Metadata({ waitForReady: true });
    md.set('containerd-namespace', namespace);
    metadataByNamespace.set(namespace, md);
  }
  return md;
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
  return Object.assign(out, { grpcCode: code, operation: what });
}

export interface CallOptions {
  namespace: string;
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
    const call = method(request, nsMetadata(opts.namespace), { deadline: opts.timeoutMs ? Date.now() + opts.timeoutMs : Infinity }, (err, res) => {
      signal?.removeEventListener('abort', onAbort);
      if (!err) resolve(res);
      else if (signal?.aborted) reject(new EngineError('Canceled', `${what}: canceled`, { cause: err }));
      else reject(mapGrpcError(err, what));
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
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
