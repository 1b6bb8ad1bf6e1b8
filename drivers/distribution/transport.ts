// One HTTP(S) exchange with a registry: per-registry TLS material, optional proxy (absolute-URI
// requests for http, a CONNECT tunnel for https), abort and a deadline for the response head.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { http } from '../../lib/node-http.ts';
import type { TlsFiles } from './registry-config.ts';

export interface TlsSettings extends TlsFiles {
  /** Accept any certificate (insecure registries reached over TLS). */
  skipVerify?: boolean;
}

export interface HttpRequest {
  method: string;
  url: URL;
  headers?: Record<string, string>;
  body?: Buffer | string | Readable;
  signal: AbortSignal;
  tls?: TlsSettings;
  proxy?: URL;
  /** Deadline for the response head (the body may take longer). */
  timeoutMs?: number;
}

export interface HttpResponse {
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  url: URL;
  body: IncomingMessage;
  header(name: string): string | undefined;
  buffer(limit?: number): Promise<Buffer>;
  text(): Promise<string>;
  /** Discard the body so the connection can be reused. */
  discard(): void;
}

export class Transport {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  private readonly httpsAgents = new Map<string, HttpsAgent>();

  private httpsAgent(t: TlsSettings): HttpsAgent {
    const key = JSON.stringify([t.skipVerify ?? false, t.ca?.length ?? 0, t.ca?.at(-1) ?? '', t.cert ?? '']);
    let a = this.httpsAgents.get(key);
    if (!a) {
      a = new HttpsAgent({ keepAlive: true, maxSockets: 64, ca: t.ca, cert: t.cert, key: t.key, rejectUnauthorized: !t.skipVerify });
      this.httpsAgents.set(key, a);
    }
    return a;
  }

  close(): void {
    this.httpAgent.destroy();
    for (const a of this.httpsAgents.values()) a.destroy();
    this.httpsAgents.clear();
  }

  async send(r: HttpRequest): Promise<HttpResponse> {
    r.signal.throwIfAborted();
    const https = r.url.protocol === 'https:';
    const headers: Record<string, string> = { 'User-Agent': 'engine/0.1 go/unknown', ...r.headers };
    const tls = r.tls ?? {};
    let options: Record<string, unknown>;
    if (r.proxy && https) {
      const raw = await connectTunnel(r.proxy, r.url, r.signal, r.timeoutMs);
      const secure = tlsConnect({
        socket: raw, servername: isIP(r.url.hostname) ? undefined : r.url.hostname, ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: !tls.skipVerify,
      });
      options = { host: r.url.hostname, port: r.url.port || 443, path: r.url.pathname + r.url.search, createConnection: () => secure };
    } else if (r.proxy) {
      const auth = proxyAuth(r.proxy);
      if (auth) headers['Proxy-Authorization'] = auth;
      options = { host: r.proxy.hostname, port: r.proxy.port || 80, path: r.url.href, agent: this.httpAgent };
      headers.Host = r.url.host;
    } else {
      options = {
        host: r.url.hostname.replace(/^\[|\]$/g, ''), port: r.url.port || (https ? 443 : 80), path: r.url.pathname + r.url.search,
        agent: https ? this.httpsAgent(tls) : this.httpAgent,
      };
    }
    if (https && !r.proxy) options.servername = isIP(r.url.hostname) ? '' : r.url.hostname;
    const body = r.body;
    if (typeof body === 'string' || Buffer.isBuffer(body)) headers['Content-Length'] = String(Buffer.byteLength(body));

    return new Promise<HttpResponse>((resolve, reject) => {
      // Through a tunnel the TLS socket is ours already: plain http.request speaks over it.
      const req = (https && !r.proxy ? httpsRequest : http.request)({ ...options, method: r.method, headers });
      // Linked by hand (not `signal:`) so the listener goes away with the request, and a late
      // abort cannot raise an unhandled error on a response that was already consumed.
      let complete = false;
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () => {
        // No error object: destroying with one can surface on a socket that is on its way back
        // to the agent and has no error listener any more. The caller sees the abort itself.
        if (!settled) {
          settled = true;
          clearTimeout(timer);
          reject(Object.assign(new Error('The operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR' }));
        }
        if (!complete) req.destroy();
      };
      r.signal.addEventListener('abort', onAbort, { once: true });
      req.on('close', () => r.signal.removeEventListener('abort', onAbort));
      if (r.timeoutMs) {
        timer = setTimeout(() => req.destroy(Object.assign(new Error(`net/http: request to ${r.url.host} timed out awaiting headers`), { code: 'ETIMEDOUT' })), r.timeoutMs);
      }
      req.on('error', (err) => {
        clearTimeout(timer);
        settled = true;
        reject(err);
      });
      req.on('response', (res) => {
        clearTimeout(timer);
        settled = true;
        res.on('error', () => {});
        res.on('end', () => {
          complete = true;
          r.signal.removeEventListener('abort', onAbort);
        });
        resolve(wrap(res, r.url));
      });
      if (body instanceof Readable) {
        body.on('error', (err) => req.destroy(err));
        body.pipe(req);
      } else {
        req.end(body);
      }
    });
  }
}

function proxyAuth(proxy: URL): string | undefined {
  if (!proxy.username) return undefined;
  const cred = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return `Basic ${Buffer.from(cred).toString('base64')}`;
}

function connectTunnel(proxy: URL, target: URL, signal: AbortSignal, timeoutMs?: number): Promise<Socket> {
  const headers: Record<string, string> = { Host: target.host };
  const auth = proxyAuth(proxy);
  if (auth) headers['Proxy-Authorization'] = auth;
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: proxy.hostname, port: proxy.port || 80, method: 'CONNECT', path: `${target.hostname}:${target.port || 443}`, headers, signal, agent: false,
    });
    const timer = timeoutMs ? setTimeout(() => req.destroy(new Error('proxyconnect: timed out')), timeoutMs) : undefined;
    req.on('connect', (res, socket) => {
      clearTimeout(timer);
      if (res.statusCode !== 200) {
        socket.destroy();
        reject(new Error(`proxyconnect tcp: ${res.statusCode} ${res.statusMessage}`));
        return;
      }
      resolve(socket);
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}

function wrap(res: IncomingMessage, url: URL): HttpResponse {
  const header = (name: string): string | undefined => {
    const v = res.headers[name.toLowerCase()];
    return Array.isArray(v) ? v[0] : v;
  };
  const buffer = async (limit = 16 << 20): Promise<Buffer> => {
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of res) {
      n += (c as Buffer).length;
      if (n > limit) {
        res.destroy();
        throw new Error(`response body from ${url.host} exceeds ${limit} bytes`);
      }
      chunks.push(c as Buffer);
    }
    return Buffer.concat(chunks);
  };
  return {
    status: res.statusCode ?? 0,
    statusText: res.statusMessage ?? '',
    headers: res.headers,
    url,
    body: res,
    header,
    buffer,
    text: async () => (await buffer()).toString('utf8'),
    discard: () => {
      res.on('error', () => {});
      res.resume();
    },
  };
}
