// POST /session: a BuildKit session (what an SDK's or the CLI's BuildKit build opens first). The
// client asks to upgrade to h2c with the X-Docker-Expose-Session-* headers; the answer is the
// reference's 101 (Connection: Upgrade, Upgrade: h2c) and the connection is the session's from then
// on: the daemon is the HTTP/2 client of the gRPC services the client serves on it (SessionPort,
// drivers/session/manager.ts), registered by the session's id until it closes. The refusals are
// BuildKit's session manager's, as the reference answers them (400): a session id already open, no
// Upgrade header, an upgrade to anything but h2c.
import type { Duplex } from 'node:stream';
import type { App } from '../app.ts';
import { invalidArgument } from '../../lib/errors.ts';
import { upgradeHead } from '../upgrade.ts';
import { readUpgradeBody } from '../upgrade-body.ts';

export interface SessionOpen {
  id: string;
  name: string;
  sharedKey: string;
  methods: string[];
  healthTimeoutMs?: number;
}

export interface SessionPort {
  has(id: string): boolean;
  /** Takes over `conn` (the 101 written) for the session. */
  open(h: SessionOpen, conn: Duplex): unknown;
}

const SWITCHING = 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n';

export function sessionRoutes(deps: { sessions: SessionPort }) {
  return async function register(app: App): Promise<void> {
    app.post('/session', async (req, reply) => {
      const all = req.raw.headersDistinct;
      const one = (name: string) => all[name]?.[0] ?? '';
      const id = one('x-docker-expose-session-uuid');
      if (deps.sessions.has(id)) throw invalidArgument(`session ${id} already exists`);
      const proto = one('upgrade');
      if (!proto) throw invalidArgument('no upgrade proto in request');
      if (proto !== 'h2c') throw invalidArgument(`protocol ${proto} not supported`);
      // Node hands over the connection only for an upgrade request (Connection: Upgrade too).
      const head = upgradeHead(req.raw);
      if (head === undefined) throw invalidArgument('no upgrade proto in request');
      const timeout = Number(one('x-buildkit-session-health-custom-timeout'));
      reply.hijack();
      const conn = req.raw.socket;
      // A body some clients send (docker-modem: a chunked empty one) is not the session's; the
      // bytes after it (its HTTP/2 server's first frames) are.
      const { rest } = await readUpgradeBody(req.raw, conn, head);
      // Another request with this id may have opened it meanwhile: from here to open() nothing waits.
      if (deps.sessions.has(id)) {
        const body = JSON.stringify({ message: `session ${id} already exists` });
        conn.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
        return;
      }
      conn.write(SWITCHING);
      if (rest.length) conn.unshift(rest);
      deps.sessions.open({
        id,
        name: one('x-docker-expose-session-name'),
        sharedKey: one('x-docker-expose-session-sharedkey'),
        methods: all['x-docker-expose-session-grpc-method'] ?? [],
        ...(Number.isInteger(timeout) && timeout > 0 ? { healthTimeoutMs: timeout } : {}),
      }, conn);
    });
  };
}
