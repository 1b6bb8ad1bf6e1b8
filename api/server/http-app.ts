// The HTTP application every listener serves: routes by method and path, the JSON request body,
// handler results sent as replies, and the hooks api/app.ts fills in (URL rewrite, checks before
// routing, the error and not-found answers, a log line per request). Node's own HTTP server does the
// protocol; this is only what sits between it and the route handlers, with nothing per request
// beyond a request and a reply object.
import type { IncomingMessage, ServerResponse, Server } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import type { Logger } from 'pino';
import { http } from '../../lib/node-http.ts';
import { HttpReply, HttpRequest, type Query, type RouteTypes } from './reply.ts';
import { BadUrlError, Router } from './router.ts';

export { HttpReply, HttpRequest, type RouteTypes } from './reply.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Handler<T extends RouteTypes = any> = (req: HttpRequest<T>, reply: HttpReply) => unknown;
export type Plugin = (app: HttpApp) => Promise<void> | void;

/** An error that carries its own HTTP status (a body over the limit, a bad URL escape). */
export class HttpStatusError extends Error {
  readonly statusCode: number;

  constructor(statusCode: number, message: string) {
    super(message);
    this.statusCode = statusCode;
  }
}

export interface HttpAppOptions {
  log: Logger;
  /** Largest JSON body read, in bytes; more is 413. */
  bodyLimit: number;
  maxParamLength?: number;
  /** The URL to route on (e.g. without a version prefix); may record what it removed on `raw`. */
  rewriteUrl?: (raw: IncomingMessage) => string;
  /** Before the body is read: may answer the request itself, or throw to fail it. */
  onRequest?: (req: HttpRequest, reply: HttpReply) => void;
  /** A JSON body's text to its value; throws for a malformed body. */
  parseJson: (text: string) => unknown;
  onError: (err: unknown, req: HttpRequest, reply: HttpReply) => void;
  notFound: (req: HttpRequest, reply: HttpReply) => void;
  /** Once the response is finished (not for hijacked ones the handler never ends). */
  onResponse?: (req: HttpRequest, reply: HttpReply) => void;
}

export interface InjectOptions {
  method?: string;
  url: string;
  headers?: Record<string, string | undefined>;
  query?: Record<string, string | string[]>;
  payload?: string | Buffer | object;
}

export interface InjectResponse {
  statusCode: number;
  headers: IncomingMessage['headers'];
  body: string;
  json(): any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

const NO_BODY = new Set(['GET', 'HEAD']);

function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() === 'application/json';
}

export class HttpApp {
  readonly log: Logger;
  private readonly router: Router<Handler>;
  private readonly pending: Promise<void>[] = [];
  private injector: { server: Server; path: string } | null = null;
  private readonly opts: HttpAppOptions;

  constructor(opts: HttpAppOptions) {
    this.opts = opts;
    this.log = opts.log;
    this.router = new Router(opts.maxParamLength);
  }

  get<T extends RouteTypes = RouteTypes>(path: string, handler: Handler<T>): void {
    this.router.add('GET', path, handler);
  }
  post<T extends RouteTypes = RouteTypes>(path: string, handler: Handler<T>): void {
    this.router.add('POST', path, handler);
  }
  put<T extends RouteTypes = RouteTypes>(path: string, handler: Handler<T>): void {
    this.router.add('PUT', path, handler);
  }
  delete<T extends RouteTypes = RouteTypes>(path: string, handler: Handler<T>): void {
    this.router.add('DELETE', path, handler);
  }
  head<T extends RouteTypes = RouteTypes>(path: string, handler: Handler<T>): void {
    this.router.add('HEAD', path, handler);
  }
  route(r: { method: string | string[]; url: string; handler: Handler }): void {
    for (const m of Array.isArray(r.method) ? r.method : [r.method]) this.router.add(m, r.url, r.handler);
  }

  /** Runs a plugin that adds routes; `ready()` waits for every one registered. */
  register(plugin: Plugin): Promise<void> {
    const p = Promise.resolve().then(() => plugin(this));
    p.catch(() => {}); // reported by ready()
    this.pending.push(p);
    return p;
  }

  async ready(): Promise<void> {
    await Promise.all(this.pending);
  }

  /** The request listener for node's HTTP servers. */
  readonly routing = (raw: IncomingMessage, res: ServerResponse): void => {
    void this.handle(raw, res);
  };

  private async handle(raw: IncomingMessage, res: ServerResponse): Promise<void> {
    const originalUrl = raw.url ?? '/';
    const url = this.opts.rewriteUrl ? this.opts.rewriteUrl(raw) : originalUrl;
    (raw as IncomingMessage & { originalUrl?: string }).originalUrl = originalUrl;
    raw.url = url;
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = raw.method ?? 'GET';
    let found: ReturnType<Router<Handler>['find']> = null;
    let badUrl: unknown;
    try {
      found = this.router.find(method, path) ?? (method === 'HEAD' ? this.router.find('GET', path) : null);
    } catch (err) {
      badUrl = err instanceof BadUrlError ? new HttpStatusError(400, err.message) : err;
    }
    const query = (q < 0 ? {} : parseQuery(url.slice(q + 1))) as Query;
    const req = new HttpRequest(raw, url, originalUrl, found?.params ?? {}, query, !found && !badUrl, this.log);
    const reply = new HttpReply(res, req);
    const onResponse = this.opts.onResponse;
    if (onResponse) res.once('finish', () => onResponse(req, reply));
    try {
      if (badUrl) throw badUrl;
      this.opts.onRequest?.(req, reply);
      if (reply.sent) return;
      if (!found) {
        this.opts.notFound(req, reply);
        return;
      }
      if (!NO_BODY.has(method) && isJson(raw.headers['content-type'])) req.body = this.opts.parseJson(await this.readBody(raw));
      const out = await found.handler(req, reply);
      if (!reply.sent) reply.send(out === reply ? undefined : out);
    } catch (err) {
      try {
        this.opts.onError(err, req, reply);
      } catch {
        res.destroy();
      }
    }
  }

  private readBody(raw: IncomingMessage): Promise<string> {
    const limit = this.opts.bodyLimit;
    const tooLarge = () => new HttpStatusError(413, 'request body too large');
    if (Number(raw.headers['content-length'] ?? 0) > limit) return Promise.reject(tooLarge());
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const onData = (b: Buffer) => {
        size += b.length;
        if (size > limit) {
          // Drop the rest as it comes: the 413 is answered and the connection stays usable.
          raw.off('data', onData);
          raw.resume();
          reject(tooLarge());
          return;
        }
        chunks.push(b);
      };
      raw.on('data', onData);
      raw.once('end', () => resolve(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8')));
      raw.once('error', reject);
      raw.once('aborted', () => reject(new HttpStatusError(400, 'request aborted')));
    });
  }

  /** A request through a real socket of this app's own (tests), answered in full. */
  async inject(o: InjectOptions | string): Promise<InjectResponse> {
    const opts = typeof o === 'string' ? { url: o } : o;
    const path = await this.injectSocket();
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k] = v;
    let body: string | Buffer | undefined;
    if (opts.payload !== undefined) {
      if (typeof opts.payload === 'string' || Buffer.isBuffer(opts.payload)) body = opts.payload;
      else {
        body = JSON.stringify(opts.payload);
        if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
      }
    }
    let url = opts.url;
    if (opts.query) {
      const qs = new URLSearchParams();
      for (const [k, v] of Object.entries(opts.query)) for (const one of Array.isArray(v) ? v : [v]) qs.append(k, one);
      url += (url.includes('?') ? '&' : '?') + qs.toString();
    }
    return new Promise((resolve, reject) => {
      const r = http.request({ socketPath: path, method: opts.method ?? 'GET', path: url, headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: text, json: () => JSON.parse(text) });
        });
        res.on('error', reject);
      });
      r.on('error', reject);
      r.end(body);
    });
  }

  private async injectSocket(): Promise<string> {
    if (this.injector) return this.injector.path;
    // An abstract socket: no file to remove; unref'd: a test that never closes the app still exits.
    const path = `\0engine-inject-${process.pid}-${Math.random().toString(36).slice(2)}`;
    const server = http.createServer(this.routing);
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, () => resolve()));
    server.unref();
    this.injector = { server, path };
    return path;
  }

  async close(): Promise<void> {
    const inj = this.injector;
    this.injector = null;
    if (!inj) return;
    inj.server.closeAllConnections();
    await new Promise<void>((resolve) => inj.server.close(() => resolve()));
  }
}
