// One protobufjs Root for every supervisor RPC and Any payload, plus thin gRPC call helpers.
// Field names stay snake_case (keepCase) inside this folder; the public API is camelCase.
import protobuf from 'protobufjs/light.js';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngineError } from '../../lib/errors.ts';
import type { ErrorCode } from '../../lib/errors.ts';
import { GrpcClient, status } from './grpc.ts';
import type { GrpcError } from './grpc.ts';

const PROTO_DIR = join(dirname(fileURLToPath(import.meta.url)), 'protos');

let rootCache: protobuf.Root | undefined;

/**
 * The definitions from protos/descriptor.json, made from the .proto files beside it by
 * hack/gen-protos.ts: loading the JSON needs no .proto parser (protobufjs's light build).
 */
export function protoRoot(): protobuf.Root {
  if (!rootCache) {
    rootCache = protobuf.Root.fromJSON(JSON.parse(readFileSync(join(PROTO_DIR, 'descriptor.json'), 'utf8')));
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

/** The socket path of a supervisor address: `unix:<path>`, `unix://<absolute path>` or a plain path. */
export function socketPath(address: string): string {
  if (address.startsWith('unix://')) return address.slice('unix://'.length);
  if (address.startsWith('unix:')) return address.slice('unix:'.length);
  return address;
}

export function newGrpcClient(address: string): GrpcClient {
  return new GrpcClient(socketPath(address));
}

const metadataByNamespace = new Map<string, Readonly<Record<string, string>>>();

/** The namespace header; one shared object per namespace (the client copies headers per call). */
export function nsMetadata(namespace: string): Readonly<Record<string, string>> {
  let md = metadataByNamespace.get(namespace);
  if (!md) metadataByNamespace.set(namespace, (md = Object.freeze({ 'containerd-namespace': namespace })));
  return md;
}

/** Map a gRPC status to the engine's error classes, keeping containerd's message intact. */
export function mapGrpcError(err: unknown, what: string): EngineError {
  if (err instanceof EngineError) return err;
  const e = err as Partial<GrpcError>;
  const code = typeof e.code === 'number' ? e.code : -1;
  const detail = e.details || e.message || String(err);
  let ec: ErrorCode;
  switch (code) {
    case status.NOT_FOUND:
      ec = 'NotFound';
      break;
    case status.ALREADY_EXISTS:
      ec = 'AlreadyExists';
      break;
    case status.FAILED_PRECONDITION:
      ec = 'FailedPrecondition';
      break;
    case status.INVALID_ARGUMENT:
      ec = 'InvalidArgument';
      break;
    case status.UNAVAILABLE:
      ec = 'Unavailable';
      break;
    case status.CANCELLED:
      ec = 'Canceled';
      break;
    case status.DEADLINE_EXCEEDED:
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

/**
 * One unary call: `/<package>.<Service>/<Method>` with request/response types from our protos. It
 * waits for a connection within its deadline (see GrpcClient.unary) instead of failing at once while
 * the supervisor restarts.
 */
export function unary(
  client: GrpcClient,
  service: string,
  method: string,
  reqType: string,
  resType: string,
  req: object,
  opts: UnaryOpts,
): Promise<Decoded> {
  if (opts.signal?.aborted) return Promise.reject(new EngineError('Canceled', `${method}: canceled`));
  let body: Buffer;
  try {
    body = encode(reqType, req);
  } catch (err) {
    return Promise.reject(mapGrpcError(err, `${service}/${method}`));
  }
  const deadline = opts.timeoutMs ? Date.now() + opts.timeoutMs : undefined;
  return client.unary(`/${service}/${method}`, body, { headers: nsMetadata(opts.namespace), deadline, signal: opts.signal }).then(
    (res) => {
      try {
        return decode(resType, res);
      } catch (err) {
        throw mapGrpcError(err, `${service}/${method}`);
      }
    },
    (err: GrpcError) => {
      if (opts.signal?.aborted) throw new EngineError('Canceled', `${method}: canceled`, { cause: err });
      throw mapGrpcError(err, `${service}/${method}`);
    },
  );
}
