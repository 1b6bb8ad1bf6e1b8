// The fastify application: version prefix and range check, the headers every response carries,
// body parsing the way Engine API clients send bodies, and the error table. Areas plug their
// routes in through `plugins`.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { invalidArgument } from '../lib/errors.ts';
import type { AuthzChain } from './authz/chain.ts';
import { installAuthz, rememberJsonBody } from './authz/hooks.ts';
import { installErrorHandling } from './errors.ts';
import { compareVersions, validationError } from './request.ts';

export { compareVersions } from './request.ts';

/** The app every area's plugin receives: routes declare zod schemas and get typed input. */
export type App = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, ZodTypeProvider>;
/** One area's routes. */
export type Plugin = (app: App) => Promise<void>;

declare module 'fastify' {
  interface FastifyRequest {
    /** The API version of this request: the `/vX.Y` prefix, or the daemon's maximum for bare paths. */
    apiVersion: string;
  }
}

export interface AppOptions {
  log: Logger;
  plugins: Plugin[];
  experimental?: boolean;
  version: { api: string; min: string };
  /** Daemon version for the `Server` header. */
  engineVersion?: string;
  /** --api-cors-header: the Access-Control-Allow-Origin every response carries (none when empty). */
  corsHeader?: string;
  /** Told of every answered request: method, route pattern (undefined: no route) and seconds (the action metrics). */
  onAnswered?: (method: string, route: string | undefined, seconds: number) => void;
  /** Authorization plugins every request (and every reply sent whole) goes through. */
  authz?: AuthzChain;
}

/** Where rewriteUrl leaves the prefix version for the onRequest hook. */
const REQUESTED_VERSION = Symbol('requestedApiVersion');
type RawWithVersion = IncomingMessage & { [REQUESTED_VERSION]?: string };

/** Headers that carry credentials (registry auth, HTTP auth): redacted from the request log. */
const REDACTED_HEADERS = ['request.headers.authorization', 'request.headers["x-registry-auth"]', 'request.headers["x-registry-config"]', 'request.headers.cookie'];

const VERSION_PREFIX = /^\/v([0-9.]+)(?=[/?]|$)/;
const JSON_BODY_LIMIT = 64 << 20;

function noSchemaCompiler(): never {
  throw new Error('routes declare zod schemas only, for their input');
}

export function createApp(opts: AppOptions): App {
  const max = opts.version.api;
  const min = opts.version.min;
  const experimental = String(opts.experimental ?? false);
  const server = `Engine/${opts.engineVersion ?? max} (linux)`;
  const cors = opts.corsHeader ?? '';

  const app = Fastify({
    // Request logs name the request's headers; those that carry credentials are never written.
    loggerInstance: opts.log.child({}, { redact: { paths: REDACTED_HEADERS, censor: '[redacted]' } }),
    logController: new LogController({ disableRequestLogging: true }),
    // Streams (wait, logs, events, attach) live as long as they need to.
    requestTimeout: 0,
    connectionTimeout: 0,
    bodyLimit: JSON_BODY_LIMIT,
    routerOptions: { maxParamLength: 4096 },
    // Routes declare zod schemas (validated by the type provider's compiler) and no response
    // schema, so fastify's default compilers (ajv, fast-json-stringify: ~1.5 MiB of heap once
    // loaded) are never needed; giving it these keeps them from being loaded at all.
    schemaController: { compilersFactory: { buildValidator: noSchemaCompiler, buildSerializer: noSchemaCompiler } },
    schemaErrorFormatter: validationError,
    rewriteUrl(req) {
      const url = req.url ?? '/';
      const m = VERSION_PREFIX.exec(url);
      if (!m) return url;
      (req as RawWithVersion)[REQUESTED_VERSION] = m[1];
      const rest = url.slice(m[0].length);
      return rest.startsWith('/') ? rest : `/${rest}`;
    },
  }).withTypeProvider<ZodTypeProvider>() as unknown as App;

  app.setValidatorCompiler(validatorCompiler);
  app.decorateRequest('apiVersion', '');

  const debugEnabled = () => opts.log.isLevelEnabled?.('debug') ?? true;

  // Hooks in callback form: an async hook costs a promise and a microtask hop on every request.
  app.addHook('onRequest', (req, reply, done) => {
    // Set on the raw response so hijacked and streamed answers carry them too.
    const res = reply.raw;
    res.setHeader('Api-Version', max);
    res.setHeader('Server', server);
    res.setHeader('Ostype', 'linux');
    if (cors) {
      // As the reference's CORS middleware; OPTIONS pre-flights are answered 200 (api/errors.ts).
      res.setHeader('Access-Control-Allow-Origin', cors);
      res.setHeader('Access-Control-Allow-Headers', 'Origin, X-Requested-With, Content-Type, Accept, X-Registry-Auth');
      res.setHeader('Access-Control-Allow-Methods', 'HEAD, GET, POST, DELETE, PUT, OPTIONS');
    }
    const requested = (req.raw as RawWithVersion)[REQUESTED_VERSION];
    req.apiVersion = requested ?? max;
    if (requested !== undefined && !req.is404) {
      if (compareVersions(requested, min) < 0) {
        const msg = `client version ${requested} is too old. Minimum supported API version is ${min}, please upgrade your client to a newer version`;
        // Clients older than 1.24 cannot parse the JSON error form.
        if (compareVersions(requested, '1.24') < 0) {
          reply.code(400).type('text/plain; charset=utf-8').send(`${msg}\n`);
          return;
        }
        done(invalidArgument(msg));
        return;
      }
      if (compareVersions(requested, max) > 0) {
        done(invalidArgument(`client version ${requested} is too new. Maximum supported API version is ${max}`));
        return;
      }
    }
    res.setHeader('Docker-Experimental', experimental);
    done();
  });

  // The Go client parses error bodies only when Content-Type is exactly `application/json`.
  app.addHook('onSend', (_req, reply, payload, done) => {
    const ct = reply.getHeader('content-type');
    if (typeof ct === 'string' && ct.startsWith('application/json')) reply.header('content-type', 'application/json');
    done(null, payload);
  });

  const answered = opts.onAnswered;
  app.addHook('onResponse', (req, reply, done) => {
    answered?.(req.method, req.routeOptions.url, reply.elapsedTime / 1000);
    if (debugEnabled()) {
      const url = (req.raw as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url;
      req.log.debug({ request: { method: req.method, url, headers: req.headers }, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    }
    done();
  });

  if (opts.authz) installAuthz(app, opts.authz);
  installBodyParsers(app, !!opts.authz);
  installErrorHandling(app);

  for (const plugin of opts.plugins) app.register(plugin);
  return app;
}

/**
 * JSON bodies may be empty (= no options); every other content type is left unread so handlers
 * can stream `req.raw` (tar uploads for load, import, build, archive). With authorization plugins,
 * a JSON body's text is kept for them.
 */
function installBodyParsers(app: FastifyInstance, keepJsonText: boolean): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: JSON_BODY_LIMIT }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (keepJsonText) rememberJsonBody(req.raw, text);
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      const message = /after JSON/i.test(detail) ? 'unexpected content after JSON' : `invalid JSON: ${detail}`;
      done(invalidArgument(message), undefined);
    }
  });
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
}
