// A reverse proxy in front of a test registry that sees what the daemon does on the wire: it
// counts blob downloads and blob uploads in flight (optionally holding each one for a while so
// that overlap shows), records every request, and can reset the connection of the next N GETs of
// a given blob, or stall them (half the body sent, then nothing, the connection held open). As a forward proxy it also answers CONNECT (for https:// registries behind
// --https-proxy): whatever host:port the tunnel names, it is piped to the target's address, so a
// name like registry.test:PORT resolves nowhere but through the proxy.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface ProxyStats {
  /** Most blob GETs in flight at once. */
  maxDownloads: number;
  /** Most blob upload requests (PATCH, PUT) in flight at once. */
  maxUploads: number;
  /** Blob GETs answered (not dropped), by digest. */
  downloads: Map<string, number>;
  /** Blob upload PATCH/PUT requests forwarded. */
  uploads: number;
  /** Connections reset on purpose. */
  dropped: number;
  /** Blob GETs stalled on purpose. */
  stalled: number;
  /** `METHOD path` of every request, in arrival order (`CONNECT host:port` for a tunnel). */
  requests: string[];
  /** CONNECT tunnels opened, by the host:port they named. */
  tunnels: Map<string, number>;
}

export interface TestProxy {
  hostPort: string;
  url: string;
  stats: ProxyStats;
  /** Hold every blob GET and upload request this long before forwarding it. */
  delayMs: number;
  /** Reset the connection of the next `n` GETs of this blob. */
  dropNext(digest: string, n: number): void;
  /** Send half the body of the next `n` GETs of this blob, then nothing more (the connection stays open). */
  stallNext(digest: string, n: number): void;
  reset(): void;
  stop(): Promise<void>;
}

const BLOB_GET = /^\/v2\/.+\/blobs\/(sha256:[0-9a-f]{64})$/;
const UPLOAD = /^\/v2\/.+\/blobs\/uploads\/[^/]+/;

function emptyStats(): ProxyStats {
  return { maxDownloads: 0, maxUploads: 0, downloads: new Map(), uploads: 0, dropped: 0, stalled: 0, requests: [], tunnels: new Map() };
}

export async function startProxy(target: string): Promise<TestProxy> {
  const to = new URL(target);
  const drops = new Map<string, number>();
  const stalls = new Map<string, number>();
  const sockets = new Set<Socket>();
  let downloads = 0;
  let uploads = 0;
  const proxy: TestProxy = {
    hostPort: '',
    url: '',
    stats: emptyStats(),
    delayMs: 0,
    dropNext(digest, n) {
      drops.set(digest, n);
    },
    stallNext(digest, n) {
      stalls.set(digest, n);
    },
    reset() {
      proxy.stats = emptyStats();
      proxy.delayMs = 0;
      drops.clear();
      stalls.clear();
    },
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  /** Pass the request on (its body, or `body` when it was read already). */
  const forward = (req: IncomingMessage, res: ServerResponse, done: () => void, body?: Buffer, stall = false) => {
    const headers = { ...req.headers };
    if (body) {
      delete headers['transfer-encoding'];
      headers['content-length'] = String(body.length);
    }
    const up = request({
      host: to.hostname, port: to.port, method: req.method, path: req.url, headers, agent: false,
    }, (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, upRes.headers);
      if (!stall) {
        upRes.pipe(res);
        return;
      }
      // Half the body, then silence: the upstream is let go and the client's connection held.
      let left = Math.floor(Number(upRes.headers['content-length'] ?? 0) / 2);
      upRes.on('data', (c: Buffer) => {
        if (left <= 0) return;
        res.write(c.subarray(0, left));
        left -= c.length;
        if (left <= 0) upRes.destroy();
      });
    });
    up.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502).end(String(err));
      else res.destroy();
    });
    res.on('close', () => {
      up.destroy();
      done();
    });
    if (body) up.end(body);
    else req.pipe(up);
  };

  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]!;
    const stats = proxy.stats;
    stats.requests.push(`${req.method} ${path}`);
    const blob = req.method === 'GET' ? BLOB_GET.exec(path)?.[1] : undefined;
    const upload = (req.method === 'PATCH' || req.method === 'PUT') && UPLOAD.test(path);
    if (blob && (drops.get(blob) ?? 0) > 0) {
      drops.set(blob, drops.get(blob)! - 1);
      stats.dropped++;
      req.socket.resetAndDestroy();
      return;
    }
    const stall = !!blob && (stalls.get(blob) ?? 0) > 0;
    if (stall) {
      stalls.set(blob!, stalls.get(blob!)! - 1);
      stats.stalled++;
    }
    if (blob) {
      downloads++;
      stats.maxDownloads = Math.max(stats.maxDownloads, downloads);
      stats.downloads.set(blob, (stats.downloads.get(blob) ?? 0) + 1);
    } else if (upload) {
      uploads++;
      stats.uploads++;
      stats.maxUploads = Math.max(stats.maxUploads, uploads);
    }
    let finished = false;
    const done = () => {
      if (finished) return;
      finished = true;
      if (blob) downloads--;
      else if (upload) uploads--;
    };
    const delay = blob || upload ? proxy.delayMs : 0;
    if (delay > 0) {
      // Uploads are held after their body arrived, so the time counts while the request is open.
      if (upload) {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => setTimeout(() => forward(req, res, done, Buffer.concat(chunks)), delay));
        res.on('close', done);
        return;
      }
      setTimeout(() => forward(req, res, done), delay);
      res.on('close', done);
      return;
    }
    forward(req, res, done, undefined, stall);
  });
  // Long keep-alive: the daemon must never meet a connection closed under it by accident, only
  // the ones reset on purpose.
  server.keepAliveTimeout = 120_000;
  // A tunnel: answer 200 once the target's address is connected, then pipe both ways.
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const authority = req.url ?? '';
    proxy.stats.requests.push(`CONNECT ${authority}`);
    proxy.stats.tunnels.set(authority, (proxy.stats.tunnels.get(authority) ?? 0) + 1);
    const up = connect({ host: to.hostname, port: Number(to.port || (to.protocol === 'https:' ? 443 : 80)) });
    sockets.add(up);
    up.on('close', () => sockets.delete(up));
    let established = false;
    up.once('connect', () => {
      established = true;
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(client);
      client.pipe(up);
    });
    up.on('error', () => {
      if (!established && client.writable) client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      else client.destroy();
    });
    client.on('error', () => up.destroy());
    client.on('close', () => up.destroy());
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  proxy.hostPort = `127.0.0.1:${port}`;
  proxy.url = `http://${proxy.hostPort}`;
  return proxy;
}
