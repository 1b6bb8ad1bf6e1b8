// The registry client: which endpoints to try for a registry (mirrors, HTTPS, HTTP for insecure
// ones), the /v2/ ping, authenticated requests for one repository, and registry errors turned
// into EngineErrors with the reference daemon's wording.
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { EngineError, type ErrorCode } from '../../lib/errors.ts';
import { basicHeader, credentialsOf, fetchToken, parseChallenges, type Challenge } from './auth.ts';
import { loadTlsFiles, proxyFor, type HostMatcher, type ProxySettings } from './registry-config.ts';
import type { HttpResponse, TlsSettings, Transport } from './transport.ts';
import type { AuthConfig } from './types.ts';

export const DOCKER_HUB_ENDPOINT = 'https://registry-1.docker.io';
const DEFAULT_DOMAIN = 'docker.io';

export interface Endpoint {
  base: URL;
  tls: TlsSettings;
  mirror: boolean;
  /** The registry name as users write it (`docker.io`, `localhost:5000`). */
  registry: string;
}

export interface RegistryCode {
  code: string;
  message: string;
}

/** An error answer from a registry, with its error codes. */
export class RegistryError extends EngineError {
  readonly status: number;
  readonly codes: RegistryCode[];
  constructor(code: ErrorCode, message: string, status: number, codes: RegistryCode[]) {
    super(code, message);
    this.status = status;
    this.codes = codes;
  }
  has(...codes: string[]): boolean {
    return this.codes.some((c) => codes.includes(c.code));
  }
}

export function codeForStatus(status: number): ErrorCode {
  if (status === 401) return 'Unauthorized';
  if (status === 403) return 'PermissionDenied';
  if (status === 404) return 'NotFound';
  if (status === 429 || status === 503) return 'Unavailable';
  if (status >= 400 && status < 500) return 'InvalidArgument';
  return 'Internal';
}

/** Build the error for a non-2xx answer (reads the body). */
export async function registryError(res: HttpResponse): Promise<RegistryError> {
  let text = '';
  try {
    text = (await res.buffer(1 << 20)).toString('utf8');
  } catch {
    /* the body is best effort */
  }
  let codes: RegistryCode[] = [];
  try {
    const body = JSON.parse(text) as { errors?: Array<{ code?: string; message?: string }> };
    codes = (body.errors ?? []).map((e) => ({ code: String(e.code ?? 'UNKNOWN'), message: String(e.message ?? '') }));
  } catch {
    /* not JSON */
  }
  // An OAuth2 error in the bearer challenge (RFC 6750 3.1) comes first, as the reference client has it.
  if (res.status >= 400 && res.status < 500) {
    const bearer = parseChallenges(res.headers['www-authenticate']).find((c) => c.scheme === 'bearer');
    const oauth = bearer?.params.error === 'invalid_token' ? { code: 'UNAUTHORIZED', message: 'authentication required' }
      : bearer?.params.error === 'insufficient_scope' ? { code: 'DENIED', message: 'requested access to the resource is denied' }
      : undefined;
    if (oauth) codes = [{ code: oauth.code, message: bearer?.params.error_description || oauth.message }, ...codes];
  }
  if (!codes.length) {
    if (res.status === 401) codes = [{ code: 'UNAUTHORIZED', message: 'authentication required' }];
    else if (res.status === 403) codes = [{ code: 'DENIED', message: 'requested access to the resource is denied' }];
    else if (res.status === 429) codes = [{ code: 'TOOMANYREQUESTS', message: 'too many requests' }];
    else {
      const msg = `unexpected status from ${res.url.protocol === 'https:' ? 'HEAD' : 'GET'} request to ${res.url.href}: ${res.status} ${res.statusText}`.trim();
      return new RegistryError(codeForStatus(res.status), msg, res.status, []);
    }
  }
  const one = (c: RegistryCode) => `${c.code.toLowerCase().replace(/_/g, ' ')}: ${c.message}`;
  const message = codes.length === 1 ? one(codes[0]!) : `errors:\n${codes.map((c) => `${one(c)}\n`).join('')}`;
  return new RegistryError(codeForStatus(res.status), message, res.status, codes);
}

/** The method as Go's url.Error names it: `Get`, `Head`, `Put`. */
export function goMethod(method: string): string {
  return `${method[0]}${method.slice(1).toLowerCase()}`;
}

/**
 * A registry that asks for Basic credentials when the client has none: the request is not sent
 * (the reference client's auth transport refuses it with this error).
 */
export class NoBasicAuthError extends EngineError {
  static readonly REASON = 'no basic auth credentials';
  constructor(method: string, url: URL) {
    super('Unauthorized', `${goMethod(method)} "${url.href}": ${NoBasicAuthError.REASON}`);
  }
}

/** Go's wording for a failed request, as the reference daemon prints it. */
export function describeNetworkError(method: string, url: URL, err: unknown): string {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number; reason?: string };
  const verb = `${goMethod(method)} "${url.href}"`;
  const code = e?.code ?? '';
  const dial = `dial tcp ${e?.address ?? url.hostname}:${e?.port ?? (url.port || (url.protocol === 'https:' ? 443 : 80))}`;
  if (code === 'ECONNREFUSED') return `${verb}: ${dial}: connect: connection refused`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `${verb}: dial tcp: lookup ${url.hostname}: no such host`;
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `${verb}: ${dial}: connect: no route to host`;
  if (code === 'ETIMEDOUT') return `${verb}: ${e.message}`;
  if (isPlainHttpAnswer(err)) return `${verb}: http: server gave HTTP response to HTTPS client`;
  if (isUnknownAuthority(err)) return `${verb}: tls: failed to verify certificate: x509: certificate signed by unknown authority`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `${verb}: tls: failed to verify certificate: x509: ${e.reason ?? e.message}`;
  if (code === 'ECONNRESET') return `${verb}: read: connection reset by peer`;
  return `${verb}: ${e?.message ?? String(err)}`;
}

function isPlainHttpAnswer(err: unknown): boolean {
  const e = err as NodeJS.ErrnoException;
  return e?.code === 'EPROTO' || e?.code === 'ERR_SSL_WRONG_VERSION_NUMBER' || /wrong version number|packet length too long|http request/i.test(e?.message ?? '');
}

function isUnknownAuthority(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException)?.code ?? '';
  return ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_GET_ISSUER_CERT', 'CERT_UNTRUSTED'].includes(code);
}

/** True for TLS failures that an --insecure-registry entry would avoid. */
export function isTlsFailure(err: unknown): boolean {
  return isPlainHttpAnswer(err) || isUnknownAuthority(err) || ((err as NodeJS.ErrnoException)?.code ?? '').startsWith('ERR_TLS') || ((err as NodeJS.ErrnoException)?.code ?? '').startsWith('ERR_SSL');
}

export function insecureHint(registry: string, certsDir: string): string {
  return `If this private registry supports only HTTP or HTTPS with an unknown CA certificate, please add \`--insecure-registry ${registry}\` to the daemon's arguments. ` +
    `In the case of HTTPS, if you have access to the registry's CA certificate, no need for the flag; simply place the CA certificate at ${certsDir.replace(/\/+$/, '')}/${registry}/ca.crt`;
}

/** Errors worth another attempt: network failures, cut bodies, 5xx and 429 answers. */
export function isRetryable(err: unknown): boolean {
  if (err instanceof RegistryError) return err.status >= 500 || err.status === 429 || err.status === 408;
  if (err instanceof EngineError) return err.code === 'Unavailable';
  const e = err as Error & { code?: string };
  if (e?.name === 'AbortError') return false;
  // Our own disk full is not the registry's fault, and waiting will not help (as the reference).
  if (e?.code === 'ENOSPC' || e?.code === 'EDQUOT') return false;
  return typeof e?.code === 'string' || e instanceof Error;
}

export interface ClientContext {
  transport: Transport;
  insecure: HostMatcher;
  certsDir: string;
  mirrors: string[];
  proxies: ProxySettings;
  timeoutMs: number;
  log: Logger;
}

export interface RequestInit {
  headers?: Record<string, string>;
  /** A factory so the body can be sent again after a fresh token. */
  body?: Buffer | string | (() => Readable);
  signal: AbortSignal;
  /** Follow redirects (blob downloads). */
  redirect?: boolean;
}

export class RegistryClient {
  readonly ctx: ClientContext;
  constructor(ctx: ClientContext) {
    this.ctx = ctx;
  }

  /** The name pushes and logins use for Docker Hub and everyone else: host[:port]. */
  static registryOf(domain: string): string {
    return domain === 'index.docker.io' ? DEFAULT_DOMAIN : domain;
  }

  /** Candidate endpoints in order: mirrors (pulls from docker.io), HTTPS, then HTTP for insecure registries. */
  async endpoints(domain: string, opts: { pull: boolean }): Promise<Endpoint[]> {
    const registry = RegistryClient.registryOf(domain);
    const out: Endpoint[] = [];
    if (registry === DEFAULT_DOMAIN) {
      if (opts.pull) {
        for (const m of this.ctx.mirrors) {
          const base = new URL(m.includes('://') ? m : `https://${m}`);
          const insecure = await this.ctx.insecure.matches(base.host);
          out.push({ base: new URL(`${base.protocol}//${base.host}`), tls: { ...(await loadTlsFiles(this.ctx.certsDir, base.host)), skipVerify: insecure }, mirror: true, registry });
        }
      }
      out.push({ base: new URL(DOCKER_HUB_ENDPOINT), tls: await loadTlsFiles(this.ctx.certsDir, 'registry-1.docker.io'), mirror: false, registry });
      return out;
    }
    const insecure = await this.ctx.insecure.matches(registry);
    const tls = await loadTlsFiles(this.ctx.certsDir, registry);
    out.push({ base: new URL(`https://${registry}`), tls: { ...tls, skipVerify: insecure }, mirror: false, registry });
    if (insecure) out.push({ base: new URL(`http://${registry}`), tls: {}, mirror: false, registry });
    return out;
  }

  async send(method: string, url: URL, ep: Endpoint | undefined, headers: Record<string, string>, body: Buffer | string | Readable | undefined, signal: AbortSignal): Promise<HttpResponse> {
    const sameHost = ep && url.host === ep.base.host;
    const tls: TlsSettings = sameHost ? ep.tls : await loadTlsFiles(this.ctx.certsDir, url.host);
    if (!sameHost && url.protocol === 'https:' && (await this.ctx.insecure.matches(url.host))) tls.skipVerify = true;
    try {
      return await this.ctx.transport.send({ method, url, headers, body, signal, tls, proxy: proxyFor(url, this.ctx.proxies), timeoutMs: this.ctx.timeoutMs });
    } catch (err) {
      if (signal.aborted) throw signal.reason ?? err;
      throw Object.assign(new Error(describeNetworkError(method, url, err), { cause: err }), { code: (err as NodeJS.ErrnoException).code ?? 'ENET', tls: isTlsFailure(err) });
    }
  }

  /** GET /v2/: the registry speaks v2; returns its auth challenges. */
  async ping(ep: Endpoint, signal: AbortSignal): Promise<Challenge[]> {
    const url = new URL('/v2/', ep.base);
    const res = await this.send('GET', url, ep, {}, undefined, signal);
    res.discard();
    if (res.status === 200 || res.status === 401) return parseChallenges(res.headers['www-authenticate']);
    if (res.status === 404) throw new EngineError('FailedPrecondition', `${ep.registry} does not speak the registry v2 protocol (legacy v1 registries are not supported)`);
    throw new RegistryError(codeForStatus(res.status), `Get "${url.href}": unexpected status ${res.status} ${res.statusText}`, res.status, []);
  }

  /**
   * Find the first endpoint that answers the ping and open a session on it. A secure registry
   * failing over TLS gets the hint about --insecure-registry and the certificates directory.
   */
  async open(domain: string, repo: string, auth: AuthConfig | undefined, actions: string[], signal: AbortSignal, opts: { pull: boolean }): Promise<Session> {
    const eps = await this.endpoints(domain, opts);
    let lastErr: unknown;
    for (const ep of eps) {
      try {
        const challenges = await this.ping(ep, signal);
        return new Session(this, ep, challenges, auth, [`repository:${repo}:${actions.join(',')}`]);
      } catch (err) {
        if (signal.aborted) throw err;
        lastErr = err;
        this.ctx.log.debug({ err, endpoint: ep.base.href }, 'registry endpoint failed');
      }
    }
    throw this.finalError(eps, lastErr);
  }

  /** Endpoints for a domain, each with its session: callers that fall back per step (mirrors) iterate these. */
  async *sessions(domain: string, repo: string, auth: AuthConfig | undefined, actions: string[], signal: AbortSignal, opts: { pull: boolean }): AsyncGenerator<Session | Error> {
    const eps = await this.endpoints(domain, opts);
    let lastErr: unknown;
    for (const ep of eps) {
      try {
        const challenges = await this.ping(ep, signal);
        yield new Session(this, ep, challenges, auth, [`repository:${repo}:${actions.join(',')}`]);
        continue;
      } catch (err) {
        if (signal.aborted) throw err;
        lastErr = err;
        this.ctx.log.debug({ err, endpoint: ep.base.href }, 'registry endpoint failed');
      }
    }
    if (lastErr) yield this.finalError(eps, lastErr);
  }

  finalError(eps: Endpoint[], err: unknown): Error {
    const last = eps.at(-1);
    if (last && last.base.protocol === 'https:' && !last.mirror && (err as { tls?: boolean })?.tls) {
      return new EngineError('Internal', `${(err as Error).message}. ${insecureHint(last.registry, this.ctx.certsDir)}`, { cause: err });
    }
    if (err instanceof EngineError) return err;
    return new EngineError('Internal', err instanceof Error ? err.message : String(err), { cause: err });
  }
}

/** Authenticated requests against one repository of one endpoint. */
export class Session {
  readonly client: RegistryClient;
  readonly endpoint: Endpoint;
  private challenges: Challenge[];
  private readonly auth: AuthConfig | undefined;
  private scopes: string[];
  private token: Promise<string> | undefined;

  constructor(client: RegistryClient, endpoint: Endpoint, challenges: Challenge[], auth: AuthConfig | undefined, scopes: string[]) {
    this.client = client;
    this.endpoint = endpoint;
    this.challenges = challenges;
    this.auth = auth;
    this.scopes = scopes;
  }

  /** Add scopes (cross-repository mount needs pull on the source); the next request fetches a new token. */
  addScopes(scopes: string[]): void {
    const missing = scopes.filter((s) => !this.scopes.includes(s));
    if (!missing.length) return;
    this.scopes = [...this.scopes, ...missing];
    this.token = undefined;
  }

  /** The Authorization header; null when the registry wants Basic credentials and there are none. */
  private async authorization(signal: AbortSignal): Promise<string | null | undefined> {
    const bearer = this.challenges.find((c) => c.scheme === 'bearer');
    if (bearer) {
      if (this.auth?.registrytoken) return `Bearer ${this.auth.registrytoken}`;
      this.token ??= fetchToken({
        realm: bearer.params.realm ?? '',
        service: bearer.params.service,
        scopes: this.scopes,
        auth: this.auth,
        send: (method, url, headers, body) => this.client.send(method, url, this.endpoint, headers, body, signal),
      }).then((t) => t.token);
      this.token.catch(() => {
        this.token = undefined;
      });
      return `Bearer ${await this.token}`;
    }
    const basic = this.challenges.find((c) => c.scheme === 'basic');
    const creds = credentialsOf(this.auth);
    if (basic && creds?.username && creds.password) return basicHeader(creds);
    if (basic) return null;
    return undefined;
  }

  url(pathOrUrl: string): URL {
    return new URL(pathOrUrl, this.endpoint.base);
  }

  /** One request; a 401 carrying a new challenge is retried once with a fresh token. Non-2xx answers are returned. */
  async request(method: string, pathOrUrl: string, init: RequestInit): Promise<HttpResponse> {
    let url = this.url(pathOrUrl);
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { ...init.headers };
      const authz = url.host === this.endpoint.base.host ? await this.authorization(init.signal) : undefined;
      if (authz === null) throw new NoBasicAuthError(method, url);
      if (authz) headers.Authorization = authz;
      const body = typeof init.body === 'function' ? init.body() : init.body;
      const res = await this.client.send(method, url, this.endpoint, headers, body, init.signal);
      if (res.status === 401 && attempt === 0) {
        const ch = parseChallenges(res.headers['www-authenticate']);
        if (ch.length) {
          res.discard();
          const scope = ch.find((c) => c.scheme === 'bearer')?.params.scope;
          this.challenges = ch;
          this.token = undefined;
          if (scope) this.addScopes(scope.split(' '));
          continue;
        }
      }
      if (init.redirect && res.status >= 300 && res.status < 400 && res.headers.location && attempt < 6) {
        res.discard();
        url = new URL(res.headers.location, url);
        continue;
      }
      return res;
    }
  }

  /** Like request, but a non-2xx answer throws its RegistryError. */
  async ok(method: string, pathOrUrl: string, init: RequestInit): Promise<HttpResponse> {
    const res = await this.request(method, pathOrUrl, init);
    if (res.status < 200 || res.status >= 300) throw await registryError(res);
    return res;
  }
}
