// One request and its answer as route handlers see them: the parsed request (params, query, JSON
// body, the raw message for streamed bodies) and a reply that sends JSON, text, bytes or a stream,
// or is taken over (hijacked) by a handler that writes the raw response or socket itself.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Params } from './router.ts';

export type Query = Record<string, string | string[] | undefined>;

/** What a route declares about its request, for the handler's types only. */
export interface RouteTypes {
  Params?: unknown;
  Querystring?: unknown;
  Body?: unknown;
}

type Field<T, K extends keyof RouteTypes, D> = T extends { [P in K]: infer X } ? X : D;

let lastId = 0;

export class HttpRequest<T extends RouteTypes = RouteTypes> {
  readonly id = `req-${++lastId}`;
  /** The API version of this request: the `/vX.Y` prefix, or the daemon's maximum for bare paths. */
  apiVersion = '';
  body: Field<T, 'Body', unknown> = undefined as Field<T, 'Body', unknown>;
  private child: Logger | undefined;

  readonly raw: IncomingMessage;
  /** The URL routed on (version prefix removed); `originalUrl` is what the client sent. */
  readonly url: string;
  readonly originalUrl: string;
  readonly params: Field<T, 'Params', Params>;
  readonly query: Field<T, 'Querystring', Query>;
  /** No route matched (the request is answered by the not-found handler). */
  readonly is404: boolean;
  private readonly baseLog: Logger;

  constructor(raw: IncomingMessage, url: string, originalUrl: string, params: Params, query: Query, is404: boolean, log: Logger) {
    this.raw = raw;
    this.url = url;
    this.originalUrl = originalUrl;
    this.params = params as Field<T, 'Params', Params>;
    this.query = query as Field<T, 'Querystring', Query>;
    this.is404 = is404;
    this.baseLog = log;
  }

  get method(): string {
    return this.raw.method ?? 'GET';
  }

  get headers(): IncomingMessage['headers'] {
    return this.raw.headers;
  }

  /** A logger naming this request; made on first use (most requests never log). */
  get log(): Logger {
    return (this.child ??= this.baseLog.child({ reqId: this.id }));
  }
}

const isStream = (v: unknown): v is Readable => typeof (v as Readable | null)?.pipe === 'function';

export class HttpReply {
  readonly raw: ServerResponse;
  private readonly req: HttpRequest;
  private hijacked = false;
  private done = false;

  constructor(raw: ServerResponse, req: HttpRequest) {
    this.raw = raw;
    this.req = req;
  }

  /** The request's logger. */
  get log(): Logger {
    return this.req.log;
  }

  get statusCode(): number {
    return this.raw.statusCode;
  }

  /** True once an answer was sent or the handler took the response over. */
  get sent(): boolean {
    return this.done || this.hijacked || this.raw.writableEnded;
  }

  code(status: number): this {
    this.raw.statusCode = status;
    return this;
  }

  header(name: string, value: string | number | readonly string[]): this {
    this.raw.setHeader(name, value);
    return this;
  }

  getHeader(name: string): ReturnType<ServerResponse['getHeader']> {
    return this.raw.getHeader(name);
  }

  type(contentType: string): this {
    return this.header('Content-Type', contentType);
  }

  /** The handler answers on the raw response or socket itself from now on. */
  hijack(): this {
    this.hijacked = true;
    return this;
  }

  /**
   * Objects go as JSON, strings as text, bytes and streams as octet-stream unless a type was set;
   * nothing is an empty body. A JSON type is sent as exactly `application/json`: the Go client
   * parses error bodies only then.
   */
  send(payload?: unknown): this {
    if (this.sent) return this;
    this.done = true;
    const res = this.raw;
    const type = res.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('application/json')) res.setHeader('Content-Type', 'application/json');
    const defaultType = (t: string) => {
      if (type === undefined) res.setHeader('Content-Type', t);
    };
    if (payload === undefined || payload === null) {
      res.end();
    } else if (typeof payload === 'string') {
      defaultType('text/plain; charset=utf-8');
      res.end(payload);
    } else if (payload instanceof Uint8Array) {
      defaultType('application/octet-stream');
      res.end(payload);
    } else if (isStream(payload)) {
      defaultType('application/octet-stream');
      payload.on('error', (err) => res.destroy(err));
      res.on('close', () => {
        if (!res.writableFinished) payload.destroy();
      });
      payload.pipe(res);
    } else {
      defaultType('application/json');
      res.end(JSON.stringify(payload));
    }
    return this;
  }
}
