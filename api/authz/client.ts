// The plugin protocol's client: POST /<Method> with a JSON body over the plugin's socket or TCP
// address, answered in JSON. A status other than 200 is an error naming the method and the
// plugin's `Err` (else the body), as the reference words it.
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { PluginAddress } from './discovery.ts';

export const PLUGIN_MIMETYPE = 'application/vnd.docker.plugins.v1.2+json';
const DEFAULT_TIMEOUT_MS = 30_000;

export interface PluginClient {
  /** Calls `method` with `args` (undefined: an empty body) and answers the decoded JSON. */
  call(method: string, args?: unknown): Promise<unknown>;
}

/** An answer other than 200: `METHOD: ERR`. */
export class PluginStatusError extends Error {
  readonly status: number;
  constructor(status: number, method: string, err: string) {
    super(`${method}: ${err}`);
    this.status = status;
    this.name = 'PluginStatusError';
  }
}

function target(addr: string, tlsSettings: PluginAddress['tls']): RequestOptions & { secure: boolean } {
  let u: URL;
  try {
    u = new URL(addr);
  } catch {
    throw new Error(`invalid plugin address ${JSON.stringify(addr)}`);
  }
  const scheme = u.protocol.replace(/:$/, '');
  if (scheme === 'unix') return { socketPath: u.host ? `${u.host}${u.pathname}` : decodeURIComponent(u.pathname), secure: false };
  if (!['tcp', 'http', 'https'].includes(scheme)) throw new Error(`protocol not available: ${scheme}`);
  const secure = scheme === 'https';
  const opts: RequestOptions & { secure: boolean } = { host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port || (secure ? 443 : 80), secure };
  if (secure && tlsSettings) {
    Object.assign(opts, {
      rejectUnauthorized: !tlsSettings.insecureSkipVerify,
      ca: tlsSettings.caFile ? readFileSync(tlsSettings.caFile) : undefined,
      cert: tlsSettings.certFile ? readFileSync(tlsSettings.certFile) : undefined,
      key: tlsSettings.keyFile ? readFileSync(tlsSettings.keyFile) : undefined,
    });
  }
  return opts;
}

function readAll(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', reject);
  });
}

export function pluginClient(address: PluginAddress, timeoutMs = DEFAULT_TIMEOUT_MS): PluginClient {
  const { secure, ...base } = target(address.addr, address.tls);
  const send = secure ? httpsRequest : httpRequest;
  return {
    call(method, args) {
      const body = args === undefined ? '' : `${JSON.stringify(args)}\n`;
      return new Promise((resolve, reject) => {
        const req = send(
          {
            ...base,
            method: 'POST',
            path: `/${method}`,
            headers: { Accept: PLUGIN_MIMETYPE, 'Content-Type': PLUGIN_MIMETYPE, 'Content-Length': Buffer.byteLength(body) },
            timeout: timeoutMs,
          },
          (res) => {
            readAll(res).then((buf) => {
              const text = buf.toString('utf8');
              if (res.statusCode !== 200) {
                let err = text;
                try {
                  const parsed = JSON.parse(text) as { Err?: unknown };
                  if (typeof parsed?.Err === 'string' && parsed.Err !== '') err = parsed.Err;
                } catch {
                  // not JSON: the body as it is
                }
                reject(new PluginStatusError(res.statusCode ?? 0, method, err));
                return;
              }
              try {
                resolve(JSON.parse(text));
              } catch (e) {
                reject(new Error(`${method}: error reading plugin resp: ${e instanceof Error ? e.message : String(e)}`));
              }
            }, reject);
          },
        );
        req.on('timeout', () => req.destroy(new Error(`${method}: timeout after ${timeoutMs} ms`)));
        req.on('error', reject);
        req.end(body);
      });
    },
  };
}
