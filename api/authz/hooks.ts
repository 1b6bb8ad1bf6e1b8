// The authorization chain on the fastify app: once the body is parsed, the request goes through
// AuthZReq (the body with it when it is JSON, under 1 MiB, and not for .../auth); a reply sent
// whole goes through AuthZRes before it leaves, and a denial replaces it with the error. Hijacked
// connections and streamed replies are checked on the request only.
import type { IncomingMessage } from 'node:http';
import { TLSSocket, type DetailedPeerCertificate } from 'node:tls';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { toHttpError } from '../errors.ts';
import type { AuthzChain, AuthzMessage } from './chain.ts';

/** The reference sends a body to the plugins only under this size. */
export const MAX_BODY_SIZE = 1 << 20;

const RAW_JSON = Symbol('authzRawJsonBody');
type RawWithBody = IncomingMessage & { [RAW_JSON]?: string };

/** The JSON body parser keeps the text here for the request check. */
export function rememberJsonBody(raw: IncomingMessage, text: string): void {
  if (text.length < MAX_BODY_SIZE && Buffer.byteLength(text) < MAX_BODY_SIZE) (raw as RawWithBody)[RAW_JSON] = text;
}

/** Go's canonical header key: Content-Type, X-Registry-Auth. */
export function canonicalHeaderKey(k: string): string {
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(k)) return k;
  return k.toLowerCase().replace(/(^|-)([a-z])/g, (_m, d: string, c: string) => d + c.toUpperCase());
}

const SECRET_HEADERS = new Set(['authorization', 'x-registry-config', 'x-registry-auth']);

/** The request's headers as the client sent them (last value wins), without credentials or Host. */
export function requestHeaders(rawHeaders: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const k = rawHeaders[i].toLowerCase();
    if (k === 'host' || SECRET_HEADERS.has(k)) continue;
    out[canonicalHeaderKey(rawHeaders[i])] = rawHeaders[i + 1];
  }
  return out;
}

function responseHeaders(reply: FastifyReply): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (h: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(h)) {
      if (v === undefined || SECRET_HEADERS.has(k.toLowerCase())) continue;
      out[canonicalHeaderKey(k)] = Array.isArray(v) ? String(v[v.length - 1]) : String(v);
    }
  };
  add(reply.raw.getHeaders());
  add(reply.getHeaders());
  return out;
}

function mediaType(ct: unknown): string {
  return typeof ct === 'string' ? ct.split(';')[0].trim().toLowerCase() : '';
}

function isAuthPath(uri: string): boolean {
  const path = uri.split('?')[0].replace(/\/+$/, '');
  return path.endsWith('/auth');
}

function pem(der: Buffer): Buffer {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return Buffer.from(`-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`);
}

/** The TLS client's identity: its certificate's common name, and the chain it presented. */
function peer(raw: IncomingMessage): Pick<AuthzMessage, 'User' | 'UserAuthNMethod' | 'RequestPeerCertificates'> {
  const sock = raw.socket;
  if (!(sock instanceof TLSSocket)) return {};
  const leaf = sock.getPeerCertificate(true) as DetailedPeerCertificate | undefined;
  if (!leaf || !leaf.raw) return {};
  const certs: Buffer[] = [];
  const seen = new Set<string>();
  for (let c: DetailedPeerCertificate | undefined = leaf; c?.raw && !seen.has(c.fingerprint256); c = c.issuerCertificate) {
    seen.add(c.fingerprint256);
    certs.push(pem(c.raw));
  }
  const cn = leaf.subject?.CN as string | string[] | undefined;
  return { User: Array.isArray(cn) ? cn[0] : (cn ?? ''), UserAuthNMethod: 'TLS', RequestPeerCertificates: certs };
}

/** What AuthZReq is told about this request. */
export function requestMessage(req: FastifyRequest): AuthzMessage {
  const raw = req.raw as RawWithBody;
  const uri = req.originalUrl ?? raw.url ?? req.url;
  const text = raw[RAW_JSON];
  const sendBody = text !== undefined && text !== '' && mediaType(raw.headers['content-type']) === 'application/json' && !isAuthPath(uri);
  return {
    ...peer(raw),
    RequestMethod: req.method,
    RequestUri: uri,
    RequestBody: sendBody ? Buffer.from(text) : undefined,
    RequestHeaders: requestHeaders(raw.rawHeaders),
  };
}

function payloadBytes(payload: unknown): Buffer | null | undefined {
  if (payload === null || payload === undefined) return null;
  if (typeof payload === 'string') return Buffer.from(payload);
  if (Buffer.isBuffer(payload)) return payload;
  if (payload instanceof Uint8Array) return Buffer.from(payload);
  return undefined; // a stream
}

/** Hooks the chain into the app; requests pass untouched while the chain has no plugin. */
export function installAuthz(app: FastifyInstance, chain: AuthzChain): void {
  const allowed = new WeakMap<FastifyRequest, AuthzMessage>();
  // Replies waiting for AuthZRes. An async handler that calls reply.send() without returning the
  // reply has fastify send again (undefined) while this check is under way: that second send is
  // left to lapse, the first one answers.
  const pending = new WeakSet<FastifyRequest>();

  app.addHook('preHandler', (req, _reply, done) => {
    if (!chain.active) {
      done();
      return;
    }
    const message = requestMessage(req);
    chain.authorizeRequest(message).then(
      () => {
        allowed.set(req, message);
        done();
      },
      (err: unknown) => {
        req.log.error({ err: err instanceof Error ? err.message : String(err) }, `AuthZRequest for ${req.method} ${message.RequestUri} returned error`);
        done(err as Error);
      },
    );
  });

  app.addHook('onSend', (req, reply, payload, done) => {
    if (pending.has(req)) return;
    const message = allowed.get(req);
    if (!message || !chain.active || reply.raw.headersSent) {
      done(null, payload);
      return;
    }
    allowed.delete(req);
    const body = payloadBytes(payload);
    if (body === undefined) {
      done(null, payload);
      return;
    }
    const ct = reply.getHeader('content-type') ?? reply.raw.getHeader('content-type');
    const withBody = body && body.length && mediaType(ct) === 'application/json' && !isAuthPath(message.RequestUri);
    const full: AuthzMessage = { ...message, ResponseStatusCode: reply.statusCode, ResponseHeaders: responseHeaders(reply), ResponseBody: withBody ? body : undefined };
    pending.add(req);
    chain.authorizeResponse(full).then(
      () => {
        pending.delete(req);
        done(null, payload);
      },
      (err: unknown) => {
        pending.delete(req);
        const { status, message: text } = toHttpError(err);
        req.log.error({ err: text }, `AuthZResponse for ${req.method} ${message.RequestUri} returned error`);
        reply.code(status);
        reply.removeHeader('content-length');
        reply.header('content-type', 'application/json');
        done(null, JSON.stringify({ message: text }));
      },
    );
  });
}
