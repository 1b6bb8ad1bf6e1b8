// One protobufjs Root for every supervisor RPC and Any payload, plus thin grpc-js call helpers.
// Field names stay snake_case (keepCase) inside this folder; the public API is camelCase.
import protobuf from 'protobufjs';
import * as grpc from '@grpc/grpc-js';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngineError } from '../../lib/errors.ts';
import type { ErrorCode } from '../../lib/errors.ts';

const PROTO_DIR = join(dirname(fileURLToPath(import.meta.url)), 'protos');
const FILES = [
  'version.proto',
  'containers.proto',
  'tasks.proto',
  'events.proto',
  'task-events.proto',
  'runc-options.proto',
  'runtime-options.proto',
];

let rootCache: protobuf.Root | undefined;

export function protoRoot(): protobuf.Root {
  if (!rootCache) {
    const root = new protobuf.Root();
    rootCache = root.loadSync(FILES.map((f) => join(PROTO_DIR, f)), { keepCase: true });
    rootCache.resolveAll();
  }
  return rootCache;
}

const types = new Map<string, protobuf.Type>();

/** Looked up once per name: a Root lookup walks the namespace tree on every call. */
export function messageType(name: string): protobuf.Type {
  let t = types.get(name);
  if (!t) types.set(name, (t = protoRoot().lookupType(name)));
  return t;
}

/** Decoded message: int64 as decimal strings, enums as names, proto3 defaults filled in. */
export type Decoded = Record<string, any>;

const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: String, defaults: true };

export function encode(typeName: string, obj: object): Buffer {
  const t = messageType(typeName);
  return Buffer.from(t.encode(t.fromObject(obj as Record<string, unknown>)).finish());
}

export function decode(typeName: string, buf: Uint8Array): Decoded {
  const t = messageType(typeName);
  return t.toObject(t.decode(buf), TO_OBJECT);
}

/** containerd uses bare type URLs ("containerd.events.TaskExit"), never type.googleapis.com/. */
export function anyOf(typeUrl: string, obj: object): { type_url: string; value: Buffer } {
  return { type_url: typeUrl, value: encode(typeUrl, obj) };
}

export function jsonAny(typeUrl: string, obj: unknown): { type_url: string; value: Buffer } {
  return { type_url: typeUrl, value: Buffer.from(JSON.stringify(obj)) };
}

const anyTypes = new Map<string, protobuf.Type | null>();

/** Decode an Any by the message named in its type URL; null when the type is not in our protos. */
export function decodeAny(any: { type_url?: string; value?: Uint8Array } | null | undefined): { type: string; value: Decoded } | null {
  if (!any?.type_url) return null;
  const name = any.type_url.slice(any.type_url.lastIndexOf('/') + 1);
  let t = anyTypes.get(name);
  if (t === undefined) {
    const found = protoRoot().lookup(name);
    anyTypes.set(name, (t = found instanceof protobuf.Type ? found : null));
  }
  if (!t) return null;
  return { type: name, value: t.toObject(t.decode(any.value ?? new Uint8Array()), TO_OBJECT) };
}

/** Go's zero time (0001-01-01, seconds -62135596800) and a missing timestamp both mean "unset". */
export function toDate(ts: { seconds?: string | number; nanos?: number } | null | undefined): Date | null {
  if (!ts) return null;
  const s = BigInt(ts.seconds ?? 0);
  const n = ts.nanos ?? 0;
  if (s < 0n || (s === 0n && n === 0)) return null;
  return new Date(Number(s) * 1000 + Math.floor(n / 1e6));
}

export const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.max_receive_message_length': 16 * 1024 * 1024,
  'grpc.max_send_message_length': 16 * 1024 * 1024,
  // After a supervisor restart the channel must find the new socket quickly, not after minutes.
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 2_000,
  // Nobody reads channelz; tracking it costs every call.
  'grpc.enable_channelz': 0,
};

export function grpcTarget(address: string): string {
  if (address.startsWith('unix:')) return address;
  return `unix://${address}`;
}

export function newGrpcClient(address: string): grpc.Client {
  return new grpc.Client(grpcTarget(address), grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
}

const metadataByNamespace = new Map<string, grpc.Metadata>();

/** The namespace header; one shared instance per namespace (grpc-js clones metadata per call). */
export function nsMetadata(namespace: string): grpc.Metadata {
  let md = metadataByNamespace.get(namespace);
  if (!md) {
    md = new grpc.Metadata();
    md.set('containerd-namespace', namespace);
    metadataByNamespace.set(namespace, md);
  }
  return md;
}

const waitingByNamespace = new Map<string, grpc.Metadata>();

/**
 * The namespace header with waitForReady set (grpc-js takes that option from the metadata): a call
 * waits for a connection within its deadline instead of failing at once with "No connection
 * established" while the channel is in reconnect backoff after a supervisor restart. A call that
 * was never sent is safe to hold back.
 */
function waitingMetadata(namespace: string): grpc.Metadata {
  let md = waitingByNamespace.get(namespace);
  if (!md) {
    md = nsMetadata(namespace).clone();
    md.setOptions({ waitForReady: true });
    waitingByNamespace.set(namespace, md);
  }
  return md;
}

/** Map a gRPC status to the engine's error classes, keeping containerd's message intact. */
export function mapGrpcError(err: unknown, what: string): EngineError {
  if (err instanceof EngineError) return err;
  const e = err as Partial<grpc.ServiceError>;
  const code = typeof e.code === 'number' ? e.code : -1;
  const detail = e.details || e.message || String(err);
  let ec: ErrorCode;
  switch (code) {
    case grpc.status.NOT_FOUND:
      ec = 'NotFound';
      break;
    case grpc.status.ALREADY_EXISTS:
      ec = 'AlreadyExists';
      break;
    case grpc.status.FAILED_PRECONDITION:
      ec = 'FailedPrecondition';
      break;
    case grpc.status.INVALID_ARGUMENT:
      ec = 'InvalidArgument';
      break;
    case grpc.status.UNAVAILABLE:
      ec = 'Unavailable';
      break;
    case grpc.status.CANCELLED:
      ec = 'Canceled';
      break;
    case grpc.status.DEADLINE_EXCEEDED:
      ec = 'Unavailable';
      break;
    default:
      ec = 'Internal';
  }
  const out = new EngineError(ec, detail, { cause: err });
  (out as EngineError & { grpcCode?: number; operation?: string }).grpcCode = code;
  (out as EngineError & { grpcCode?: number; operation?: string }).operation = what;
  return out;
}

export interface UnaryOpts {
  namespace: string;
  /** Milliseconds; 0 or undefined-with-noDeadline means none. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** One unary call: `/<package>.<Service>/<Method>` with request/response types from our protos. */
export function unary(
  client: grpc.Client,
  service: string,
  method: string,
  reqType: string,
  resType: string,
  req: object,
  opts: UnaryOpts,
): Promise<Decoded> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) return reject(new EngineError('Canceled', `${method}: canceled`));
    const callOpts: grpc.CallOptions = {};
    if (opts.timeoutMs) callOpts.deadline = Date.now() + opts.timeoutMs;
    let onAbort: (() => void) | undefined;
    const call = client.makeUnaryRequest<object, Decoded>(
      `/${service}/${method}`,
      (o) => encode(reqType, o),
      (b) => decode(resType, b),
      req,
      waitingMetadata(opts.namespace),
      callOpts,
      (err, res) => {
        if (onAbort) opts.signal?.removeEventListener('abort', onAbort);
        if (err) {
          if (opts.signal?.aborted) return reject(new EngineError('Canceled', `${method}: canceled`, { cause: err }));
          return reject(mapGrpcError(err, `${service}/${method}`));
        }
        resolve(res ?? {});
      },
    );
    if (opts.signal) {
      onAbort = () => call.cancel();
      opts.signal.addEventListener('abort', onAbort, { once: true });
    }
  });
}
