// The API application: version prefix and range check, the headers every response carries,
// body parsing the way Engine API clients send bodies, and the error table. Areas plug their
// routes in through `plugins`.
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { invalidArgument } from '../lib/errors.ts';
import { notFound, sendError } from './errors.ts';
import { HttpApp } from './server/http-app.ts';

export interface AppOptions {
  log: Logger;
  plugins: Array<(app: HttpApp) => Promise<void>>;
  experimental?: boolean;
  version: { api: string; min: string };
  /** Daemon version for the `Server` header. */
  engineVersion?: string;
}

/** Where rewriteUrl leaves the prefix version for the onRequest hook. */
const REQUESTED_VERSION = Symbol('requestedApiVersion');
type RawWithVersion = IncomingMessage & { [REQUESTED_VERSION]?: string };

const VERSION_PREFIX = /^\/v([0-9.]+)(?=[/?]|$)/;
const JSON_BODY_LIMIT = 64 << 20;

/** Numeric, part-by-part comparison (1.9 < 1.10); missing parts count as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.');
  const pb = b.split('.');
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = Number.parseInt(pa[i] ?? '0', 10) || 0;
    const y = Number.parseInt(pb[i] ?? '0', 10) || 0;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

export function createApp(opts: AppOptions): HttpApp {
  const max = opts.version.api;
  const min = opts.version.min;
  const experimental = String(opts.experimental ?? false);
  const server = `Engine/${opts.engineVersion ?? max} (linux)`;
  const debugEnabled = () => opts.log.isLevelEnabled?.('debug') ?? true;

  const app = new HttpApp({
    log: opts.log,
    bodyLimit: JSON_BODY_LIMIT,
    maxParamLength: 4096,
    rewriteUrl(req) {
      const url = req.url ?? '/';
      const m = VERSION_PREFIX.exec(url);
      if (!m) return url;
      (req as RawWithVersion)[REQUESTED_VERSION] = m[1];
      const rest = url.slice(m[0].length);
      return rest.startsWith('/') ? rest : `/${rest}`;
    },
    onRequest(req, reply) {
      // Set on the raw response so hijacked and streamed answers carry them too.
      const res = reply.raw;
      res.setHeader('Api-Version', max);
      res.setHeader('Server', server);
      res.setHeader('Ostype', 'linux');
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
          throw invalidArgument(msg);
        }
        if (compareVersions(requested, max) > 0) throw invalidArgument(`client version ${requested} is too new. Maximum supported API version is ${max}`);
      }
      res.setHeader('Docker-Experimental', experimental);
    },
    parseJson,
    onError: sendError,
    notFound,
    onResponse(req, reply) {
      if (debugEnabled()) req.log.debug({ method: req.method, url: req.originalUrl, status: reply.statusCode }, 'request');
    },
  });

  for (const plugin of opts.plugins) void app.register(plugin);
  return app;
}

/**
 * JSON bodies may be empty (= no options); every other content type is left unread so handlers
 * can stream `req.raw` (tar uploads for load, import, build, archive).
 */
function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    throw invalidArgument(/after JSON/i.test(detail) ? 'unexpected content after JSON' : `invalid JSON: ${detail}`);
  }
}
