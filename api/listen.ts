// Serve one fastify app on every -H address. Each listener is a plain node http server that hands
// requests to `app.routing` (so rewriteUrl, hooks and routes are shared) and forwards `upgrade`
// events to `app.server` when a route area listens for them there (attach, exec).
import { chmodSync, chownSync, lstatSync, readFileSync, unlinkSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { upgradeListener } from './upgrade.ts';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { invalidArgument } from '../lib/errors.ts';
import { http } from '../lib/node-http.ts';
import { joinHostPort } from '../lib/host-port.ts';

export type HostAddress =
  | { kind: 'unix'; path: string }
  | { kind: 'tcp'; host: string; port: number; path: string }
  | { kind: 'fd'; fd?: number };

export const DEFAULT_UNIX_SOCKET = '/var/run/engine.sock';

/** Parse one -H value per the spec's socket address forms. */
export function parseHost(raw: string, opts: { tls?: boolean } = {}): HostAddress {
  const s = raw.trim();
  const defaultPort = opts.tls ? 2376 : 2375;
  if (s === '') return { kind: 'unix', path: DEFAULT_UNIX_SOCKET };
  const scheme = /^([a-z]+):\/\//.exec(s);
  if (scheme) {
    const rest = s.slice(scheme[0].length);
    switch (scheme[1]) {
      case 'unix':
        return { kind: 'unix', path: rest || DEFAULT_UNIX_SOCKET };
      case 'tcp':
        return parseTcp(rest, defaultPort, raw);
      case 'fd': {
        if (rest === '') return { kind: 'fd' };
        if (!/^\d+$/.test(rest)) throw invalidArgument(`invalid fd address: ${raw}`);
        return { kind: 'fd', fd: Number(rest) };
      }
      default:
        throw invalidArgument(`Invalid bind address format: ${raw}`);
    }
  }
  // `host:`, `host:port`, `:port` are tcp shorthands.
  if (s.includes(':')) return parseTcp(s, defaultPort, raw);
  throw invalidArgument(`Invalid bind address format: ${raw}`);
}

function parseTcp(rest: string, defaultPort: number, raw: string): HostAddress {
  const slash = rest.indexOf('/', rest.startsWith('[') ? rest.indexOf(']') : 0);
  const hostPort = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash) : '';
  let host: string;
  let portText: string;
  const v6 = /^\[([^\]]+)\](?::(\d*))?$/.exec(hostPort);
  if (v6) {
    host = v6[1];
    portText = v6[2] ?? '';
  } else {
    const colon = hostPort.lastIndexOf(':');
    host = colon >= 0 ? hostPort.slice(0, colon) : hostPort;
    portText = colon >= 0 ? hostPort.slice(colon + 1) : '';
  }
  if (portText !== '' && !/^\d+$/.test(portText)) throw invalidArgument(`Invalid bind address format: ${raw}`);
  const port = portText === '' ? defaultPort : Number(portText);
  if (port > 65535) throw invalidArgument(`Invalid bind address format: ${raw}`);
  return { kind: 'tcp', host: host || '127.0.0.1', port, path };
}

export interface ListenTls {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
  verify: boolean;
}

export interface Listeners {
  close(): Promise<void>;
  addresses: string[];
  /** The node servers, for callers that need their events. */
  servers: Server[];
}

export async function listenAll(
  app: FastifyInstance,
  hosts: string[],
  opts: {
    socketGroup?: string;
    log: Logger;
    /** TLS for tcp listeners (unix sockets and activated fds stay plain); `verify` requires client certificates signed by `ca`. */
    tls?: ListenTls;
  },
): Promise<Listeners> {
  await app.ready();
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  const unixPaths: string[] = [];
  const addresses: string[] = [];

  const closeAll = async (): Promise<void> => {
    await Promise.all(
      servers.map(
        (srv) =>
          new Promise<void>((resolve) => {
            srv.close(() => resolve());
            srv.closeIdleConnections();
          }),
      ).concat([
        (async () => {
          // Long-lived streams (events, logs -f, attach) would hold close() forever.
          for (const s of sockets) s.destroy();
        })(),
      ]),
    );
    for (const p of unixPaths) removeStale(p);
  };

  try {
    for (const raw of hosts.length ? hosts : ['']) {
      const addr = parseHost(raw, { tls: !!opts.tls });
      if (addr.kind === 'fd') {
        for (const fd of activatedFds(addr.fd)) {
          const srv = makeServer(app, opts.log, sockets);
          servers.push(srv);
          await listen(srv, { fd });
          addresses.push(`fd://${fd}`);
          opts.log.info({ address: `fd://${fd}` }, 'API listening (socket activation)');
        }
        continue;
      }
      const srv = makeServer(app, opts.log, sockets, addr.kind === 'tcp' ? opts.tls : undefined);
      servers.push(srv);
      if (addr.kind === 'unix') {
        removeStale(addr.path);
        await listen(srv, { path: addr.path });
        unixPaths.push(addr.path);
        chmodSync(addr.path, 0o660);
        applyGroup(addr.path, opts.socketGroup, opts.log);
        addresses.push(`unix://${addr.path}`);
      } else {
        await listen(srv, { host: addr.host, port: addr.port });
        const a = srv.address();
        const port = a && typeof a === 'object' ? a.port : addr.port;
        addresses.push(`tcp://${joinHostPort(addr.host, port)}`);
      }
      opts.log.info({ address: addresses[addresses.length - 1] }, 'API listening');
    }
  } catch (err) {
    await closeAll();
    throw err;
  }
  return { close: closeAll, addresses, servers };
}

let activation: number[] | null = null;

/**
 * Listening sockets passed by systemd socket activation (LISTEN_PID/LISTEN_FDS, from fd 3): all of
 * them for `fd://`, the one numbered n for `fd://n`. Read once; the variables are then removed so
 * containers and helpers do not inherit them.
 */
export function activatedFds(n: number | undefined, env: NodeJS.ProcessEnv = process.env): number[] {
  if (activation === null) {
    const count = Number(env.LISTEN_FDS ?? 0);
    const forUs = env.LISTEN_PID === undefined || Number(env.LISTEN_PID) === process.pid;
    activation = forUs && Number.isInteger(count) && count > 0 ? Array.from({ length: count }, (_, i) => 3 + i) : [];
    delete env.LISTEN_PID;
    delete env.LISTEN_FDS;
    delete env.LISTEN_FDNAMES;
  }
  if (activation.length === 0) throw invalidArgument('no sockets found via socket activation: make sure the service was started by systemd');
  if (n === undefined) return activation;
  if (n < 3 || n - 3 >= activation.length) throw invalidArgument('too few socket activated files passed in by systemd');
  return [n];
}

/** Request headers beyond this answer 431 (the reference allows 1 MiB; 64 KiB holds any registry auth header). */
export const MAX_HEADER_BYTES = 64 * 1024;

/** The answer to a request Node's parser refused: 431 for oversized headers, else 400. */
export function clientErrorResponse(code: string | undefined): string {
  const tooLarge = code === 'HPE_HEADER_OVERFLOW';
  const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
  const body = JSON.stringify({ message: tooLarge ? 'request header fields too large' : 'malformed HTTP request' });
  return `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

function makeServer(app: FastifyInstance, log: Logger, sockets: Set<Socket>, tls?: ListenTls): Server {
  const handler = (req: IncomingMessage, res: ServerResponse) => app.routing(req, res);
  const srv: Server = tls
    ? createHttpsServer({ cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: tls.verify, rejectUnauthorized: tls.verify, minVersion: 'TLSv1', maxHeaderSize: MAX_HEADER_BYTES }, handler)
    : http.createServer({ maxHeaderSize: MAX_HEADER_BYTES }, handler);
  srv.requestTimeout = 0;
  srv.keepAliveTimeout = 72_000;
  srv.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  srv.on('upgrade', upgradeListener(handler));
  srv.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (err.code !== 'ECONNRESET') log.debug({ err }, 'client error');
    if (!socket.writable || socket.destroyed) {
      socket.destroy();
      return;
    }
    socket.end(clientErrorResponse(err.code));
    // Keep reading (and dropping) what the client still sends, so it reads the answer instead of
    // a reset or a full buffer; then close.
    socket.on('data', () => {});
    socket.resume();
    setTimeout(() => socket.destroy(), 2000).unref();
  });
  return srv;
}

function listen(srv: Server, where: { path: string } | { host: string; port: number } | { fd: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(where, () => {
      srv.off('error', reject);
      resolve();
    });
  });
}

function removeStale(path: string): void {
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
  } catch {
    // absent
  }
}

function applyGroup(path: string, group: string | undefined, log: Logger): void {
  if (!group) return;
  const gid = lookupGroup(group);
  if (gid === undefined) {
    log.warn({ group, path }, 'socket group not found; socket stays owned by the daemon group');
    return;
  }
  try {
    chownSync(path, process.getuid?.() ?? 0, gid);
  } catch (err) {
    log.warn({ err, group, path }, 'cannot set socket group');
  }
}

function lookupGroup(group: string): number | undefined {
  if (/^\d+$/.test(group)) return Number(group);
  try {
    for (const line of readFileSync('/etc/group', 'utf8').split('\n')) {
      const [name, , gid] = line.split(':');
      if (name === group && gid !== undefined) return Number(gid);
    }
  } catch {
    // no group database
  }
  return undefined;
}
