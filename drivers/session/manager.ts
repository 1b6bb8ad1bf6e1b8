// BuildKit sessions (POST /session, api/session/routes.ts): the client upgrades its connection to
// h2c and serves gRPC on it (auth, in the CLI's case file sync and secrets); the daemon is the
// HTTP/2 client of those services, as BuildKit's session manager is. A session is registered by
// its id until the connection closes (or its health checks fail), and a build names it in its
// `session=` query.
//
// The connection is the client's, already open: grpc-js dials only addresses, so each session has
// a unix socket of its own under the sessions directory whose one connection is relayed, byte for
// byte, to the taken-over connection (a second connection is refused, as BuildKit's dialer refuses a
// second dial). The generated clients (gen/) speak gRPC over it.
//
// Health: every interval (5 s; a client's X-Buildkit-Session-Health-Custom-Timeout header sets it,
// at least 1 s) grpc.health.v1.Health/Check; two failures in a row (one with the header) end the
// session, as in BuildKit. A client that serves no health service (UNIMPLEMENTED: dockerode's
// session serves only Auth) answered, so it is alive: unlike BuildKit, whose checks would end such
// a session, it stays until the client closes it.
import * as grpc from '@grpc/grpc-js';
import { mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { invalidArgument } from '../../lib/errors.ts';
import { AuthClient } from './gen/auth.ts';
import { HealthClient } from './gen/health.ts';

export interface SessionHeaders {
  id: string;
  name: string;
  sharedKey: string;
  /** The gRPC methods the client serves (X-Docker-Expose-Session-Grpc-Method), e.g. /moby.filesync.v1.Auth/Credentials. */
  methods: readonly string[];
  /** X-Buildkit-Session-Health-Custom-Timeout, in ms. */
  healthTimeoutMs?: number;
}

export interface SessionManagerOptions {
  /** Where each session's relay socket is made (created when missing). */
  dir: string;
  log: Logger;
  /** The health check interval (and its timeout's floor). Default 5 s. */
  healthIntervalMs?: number;
}

const DEFAULT_INTERVAL_MS = 5_000;
const DEFAULT_TIMEOUT_MS = 15_000;

export class BuildSession {
  readonly id: string;
  readonly name: string;
  readonly sharedKey: string;
  readonly auth: AuthClient;
  readonly health: HealthClient;
  private readonly methods: Set<string>;
  private readonly ac = new AbortController();
  private readonly relay: Server;
  private readonly relayPath: string;
  private readonly conn: Duplex;
  private readonly log: Logger;
  private readonly onEnd: (s: BuildSession) => void;
  private healthTimer: NodeJS.Timeout | undefined;

  constructor(h: SessionHeaders, conn: Duplex, relayPath: string, log: Logger, onEnd: (s: BuildSession) => void, intervalMs: number) {
    this.log = log;
    this.onEnd = onEnd;
    this.id = h.id;
    this.name = h.name;
    this.sharedKey = h.sharedKey;
    this.methods = new Set(h.methods.map((m) => m.toLowerCase()));
    this.conn = conn;
    this.relayPath = relayPath;
    let taken = false;
    this.relay = createServer((c: Socket) => {
      if (taken) {
        c.destroy();
        return;
      }
      taken = true;
      c.on('error', () => {});
      c.pipe(conn);
      conn.pipe(c);
      c.once('close', () => this.close('the relay connection closed'));
    });
    rmSync(relayPath, { force: true });
    this.relay.listen(relayPath);
    this.relay.on('error', (err) => this.close(`relay: ${err.message}`));
    conn.on('error', () => {});
    conn.once('close', () => this.close('the client closed the session'));
    const target = `unix://${relayPath}`;
    const creds = grpc.credentials.createInsecure();
    // One connection for the session's life: no retries of a dial the relay would refuse anyway.
    const options = { 'grpc.max_receive_message_length': 16 << 20, 'grpc.enable_retries': 0, 'grpc.initial_reconnect_backoff_ms': 60_000 };
    this.auth = new AuthClient(target, creds, options);
    this.health = new HealthClient(target, creds, options);
    const custom = h.healthTimeoutMs && h.healthTimeoutMs > 0 ? Math.max(h.healthTimeoutMs, 1000) : undefined;
    this.monitorHealth(custom ?? intervalMs, custom ?? DEFAULT_TIMEOUT_MS, custom ? 1 : 2);
  }

  /** Aborted when the session ends (the client closed it, or its health checks failed). */
  get signal(): AbortSignal {
    return this.ac.signal;
  }

  get closed(): boolean {
    return this.ac.signal.aborted;
  }

  /** Whether the client said it serves this gRPC method (a full name, /package.Service/Method). */
  supports(method: string): boolean {
    return this.methods.has(method.toLowerCase());
  }

  /**
   * moby.filesync.v1.Auth/Credentials for a registry host: what the client's credential store says
   * (both empty for none), or undefined when the client serves no such method or the call fails.
   */
  credentials(host: string, timeoutMs = 15_000): Promise<{ username: string; secret: string } | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.auth.credentials({ Host: host }, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) => {
        if (err || !res) {
          this.log.debug({ err, session: this.id, host }, 'session: no credentials from the client');
          resolve(undefined);
          return;
        }
        resolve({ username: res.Username, secret: res.Secret });
      });
    });
  }

  close(reason: string): void {
    if (this.closed) return;
    this.log.debug({ session: this.id, reason }, 'session closed');
    this.ac.abort(new Error(`session ${this.id}: ${reason}`));
    clearTimeout(this.healthTimer);
    this.auth.close();
    this.health.close();
    this.relay.close();
    rmSync(this.relayPath, { force: true });
    this.conn.destroy();
    this.onEnd(this);
  }

  private monitorHealth(intervalMs: number, timeoutMs: number, threshold: number): void {
    let failures = 0;
    let lastMs = 0;
    const tick = () => {
      const started = Date.now();
      const deadline = started + Math.max(timeoutMs, lastMs * 1.5);
      this.health.check({ service: '' }, new grpc.Metadata(), { deadline }, (err) => {
        if (this.closed) return;
        lastMs = Date.now() - started;
        if (err && err.code !== grpc.status.UNIMPLEMENTED) {
          failures++;
          this.log.warn({ err: err.message, session: this.id, failures }, 'session health check failed');
          if (failures >= threshold) {
            this.close(`health check failed: ${err.message}`);
            return;
          }
        } else {
          failures = 0;
        }
        this.healthTimer = setTimeout(tick, intervalMs);
      });
    };
    this.healthTimer = setTimeout(tick, intervalMs);
  }
}

export class SessionManager {
  private readonly sessions = new Map<string, BuildSession>();
  private readonly opts: SessionManagerOptions;
  private seq = 0;

  constructor(opts: SessionManagerOptions) {
    this.opts = opts;
    // Only this daemon's relay sockets live here: what a killed one left goes.
    rmSync(opts.dir, { recursive: true, force: true });
    mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
  }

  has(id: string): boolean {
    return this.sessions.has(id);
  }

  /** Registers a session on a connection the API took over (its 101 written); an id already open is refused. */
  open(h: SessionHeaders, conn: Duplex): BuildSession {
    if (this.sessions.has(h.id)) throw invalidArgument(`session ${h.id} already exists`);
    const relayPath = join(this.opts.dir, `${process.pid}-${++this.seq}.sock`);
    const s = new BuildSession(h, conn, relayPath, this.opts.log, (ended) => {
      if (this.sessions.get(ended.id) === ended) this.sessions.delete(ended.id);
    }, this.opts.healthIntervalMs ?? DEFAULT_INTERVAL_MS);
    this.sessions.set(h.id, s);
    this.opts.log.debug({ session: h.id, name: h.name, methods: h.methods.length }, 'session opened');
    return s;
  }

  /** An open session by id; a `prefix:` before the id is ignored, as BuildKit's lookup does. */
  get(id: string): BuildSession | undefined {
    const i = id.indexOf(':');
    const key = i >= 0 && i < id.length - 1 ? id.slice(i + 1) : id;
    return this.sessions.get(key);
  }

  /** Every session ended (the daemon stops). */
  close(): void {
    for (const s of [...this.sessions.values()]) s.close('the daemon stops');
  }
}
