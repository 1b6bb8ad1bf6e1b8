// A swarm manager's own endpoint on its listen address (the reference's port 2377): HTTPS with the
// node's certificate from the swarm's CA, client certificates asked for but not required (a node
// that joins has none yet), each request told who its peer is when the peer's certificate is one of
// this swarm's (a chain to its root, the cluster id in its subject). Node-to-node calls need that
// identity. A node that joins has no certificate yet: it reads the root CA (GET /v1/ca) and checks it
// against the digest in its join token, then asks for its certificate with the token (POST
// /v1/join, answered by the manager's admission, cmd/swarm/admission.ts). Every node listens (a
// worker when it can: its listen address may be taken), so a manager reads the log of a task it
// runs (GET /v1/tasks/<id>/logs, a manager's certificate only), and a manager gives the node a task
// is on that task's secrets and configs (GET /v1/tasks/<id>/secrets/<sid>, .../configs/<cid>: the
// peer's certificate must name the task's node). Refusals travel as
// {code, message}: the joining daemon answers its client with the same. A listen address in use
// refuses the init or join that asked for it, in the reference's words (a 400 here; dockerd: 500).
import type { TLSSocket } from 'node:tls';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { EngineError, failedPrecondition } from '../../lib/errors.ts';
import { nodeIdentity, type NodeIdentity } from './ca.ts';
import type { LogReadOptions } from '../../lib/ports/logs.ts';
import { joinHostPort } from '../../lib/host-port.ts';

export interface SwarmListenerOptions {
  host: string;
  port: number;
  tls: { caPem: string; certPem: string; keyPem: string };
  /** This node, as GET /v1/node answers it to a peer of the swarm. */
  self: { nodeId: string; clusterId: string; role: 'manager' | 'worker' };
  log: Logger;
  /** A join's admission: the body as sent, the caller's address; refusals are EngineErrors. */
  admit?: (body: unknown, remoteAddress: string) => Promise<unknown>;
  /** A node of the swarm whose spec now says manager asks for its place: its id from its certificate. */
  promote?: (nodeId: string, body: unknown) => Promise<unknown>;
  /** A node of the swarm that gave up its join (or left) asks to be forgotten: its id from its certificate. */
  forget?: (nodeId: string) => Promise<void>;
  /**
   * A secret's or config's data for a task, asked by the node the task is on (a manager's: it holds
   * the data key); refusals are EngineErrors (PermissionDenied: not that node's task, or not its secret).
   */
  taskObject?: (nodeId: string, taskId: string, kind: 'secret' | 'config', id: string) => Promise<Buffer>;
  /** The log of a task this node runs, asked by a manager of the swarm (`docker service logs`), as JSON lines. */
  taskLogs?: (taskId: string, o: LogReadOptions, signal: AbortSignal) => AsyncIterable<string>;
}

/** The statuses a refusal travels with (the joining daemon reads the code from the body). */
const STATUS: Partial<Record<string, number>> = { InvalidArgument: 400, FailedPrecondition: 400, PermissionDenied: 403, NotFound: 404, Conflict: 409, Unavailable: 503 };

/** The peer of a request when its certificate is this swarm's, else undefined. */
export function swarmPeer(req: FastifyRequest, clusterId: string): NodeIdentity | undefined {
  const socket = req.raw.socket as TLSSocket;
  if (!socket.authorized) return undefined;
  const cert = socket.getPeerX509Certificate();
  const id = cert ? nodeIdentity(cert) : undefined;
  return id && id.clusterId === clusterId ? id : undefined;
}

export class SwarmListener {
  private readonly opts: SwarmListenerOptions;
  private app: FastifyInstance | null = null;

  constructor(opts: SwarmListenerOptions) {
    this.opts = opts;
  }

  async start(): Promise<void> {
    const { host, port, tls, self } = this.opts;
    const app = Fastify({ https: { key: tls.keyPem, cert: tls.certPem, ca: tls.caPem, requestCert: true, rejectUnauthorized: false }, logger: false });
    app.get('/v1/node', async (req, reply) => {
      if (!swarmPeer(req, self.clusterId)) return reply.code(401).send({ message: 'a certificate of this swarm is required' });
      return { NodeID: self.nodeId, ClusterID: self.clusterId, Role: self.role };
    });
    app.get('/v1/ca', async () => ({ RootCA: tls.caPem }));
    const answer = async (reply: FastifyReply, what: string, fn: () => Promise<unknown>) => {
      try {
        return (await fn()) ?? {};
      } catch (err) {
        if (err instanceof EngineError) return reply.code(STATUS[err.code] ?? 500).send({ code: err.code, message: err.message });
        this.opts.log.warn({ err: err instanceof Error ? err.message : String(err) }, `a ${what} failed`);
        return reply.code(500).send({ code: 'Internal', message: `the ${what} failed on the manager: ${err instanceof Error ? err.message : String(err)}` });
      }
    };
    app.post('/v1/join', { bodyLimit: 64 * 1024 }, async (req, reply) => {
      const admit = this.opts.admit;
      if (!admit) return reply.code(503).send({ code: 'Unavailable', message: 'this node does not admit nodes' });
      return answer(reply, 'join', () => admit(req.body, req.ip));
    });
    app.post('/v1/promote', { bodyLimit: 64 * 1024 }, async (req, reply) => {
      const peer = swarmPeer(req, self.clusterId);
      if (!peer) return reply.code(401).send({ code: 'Unauthorized', message: 'a certificate of this swarm is required' });
      const promote = this.opts.promote;
      if (!promote) return reply.code(503).send({ code: 'Unavailable', message: 'this node does not admit nodes' });
      return answer(reply, 'promotion', () => promote(peer.nodeId, req.body));
    });
    app.post('/v1/forget', async (req, reply) => {
      const peer = swarmPeer(req, self.clusterId);
      if (!peer) return reply.code(401).send({ code: 'Unauthorized', message: 'a certificate of this swarm is required' });
      const forget = this.opts.forget;
      if (!forget) return reply.code(503).send({ code: 'Unavailable', message: 'this node does not admit nodes' });
      return answer(reply, 'leave', () => forget(peer.nodeId));
    });
    app.get('/v1/tasks/:id/:kind/:oid', async (req, reply) => {
      const peer = swarmPeer(req, self.clusterId);
      if (!peer) return reply.code(401).send({ code: 'Unauthorized', message: 'a certificate of this swarm is required' });
      const { id, kind, oid } = req.params as { id: string; kind: string; oid: string };
      if (kind !== 'secrets' && kind !== 'configs') return reply.code(404).send({ message: 'page not found' });
      const get = this.opts.taskObject;
      if (!get) return reply.code(503).send({ code: 'Unavailable', message: 'this node gives no secrets: ask a manager' });
      const data = await answer(reply, `${kind.slice(0, -1)} read`, () => get(peer.nodeId, id, kind === 'secrets' ? 'secret' : 'config', oid));
      if (!Buffer.isBuffer(data)) return data;
      return reply.code(200).header('Content-Type', 'application/octet-stream').header('Cache-Control', 'no-store').send(data);
    });
    app.get('/v1/tasks/:id/logs', async (req, reply) => {
      const peer = swarmPeer(req, self.clusterId);
      if (!peer || peer.role !== 'swarm-manager') return reply.code(403).send({ code: 'PermissionDenied', message: 'a manager of this swarm asks for a task\'s log' });
      const logs = this.opts.taskLogs;
      if (!logs) return reply.code(503).send({ code: 'Unavailable', message: 'this node serves no task logs' });
      const q = req.query as Record<string, string | undefined>;
      const num = (v: string | undefined, d: number) => (v !== undefined && Number.isFinite(Number(v)) ? Number(v) : d);
      const o: LogReadOptions = { stdout: q['stdout'] === '1', stderr: q['stderr'] === '1', follow: q['follow'] === '1', since: num(q['since'], 0), until: num(q['until'], 0), tail: num(q['tail'], -1) };
      const id = (req.params as { id: string }).id;
      reply.hijack();
      const res = reply.raw;
      const ac = new AbortController();
      res.on('close', () => ac.abort());
      res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
      res.flushHeaders();
      try {
        for await (const line of logs(id, o, ac.signal)) if (!res.write(line)) await new Promise((r) => res.once('drain', r));
      } catch (err) {
        if (!ac.signal.aborted) this.opts.log.warn({ task: id, err: err instanceof Error ? err.message : String(err) }, 'a task\'s log could not be read');
      }
      res.end();
    });
    app.setNotFoundHandler(async (_req, reply) => reply.code(404).send({ message: 'page not found' }));
    try {
      await app.listen({ host, port });
    } catch (err) {
      await app.close().catch(() => {});
      const code = (err as NodeJS.ErrnoException).code;
      const addr = joinHostPort(host, port);
      if (code === 'EADDRINUSE') throw failedPrecondition(`manager stopped: failed to listen on remote API address: listen tcp ${addr}: bind: address already in use`);
      if (code === 'EADDRNOTAVAIL') throw failedPrecondition(`manager stopped: failed to listen on remote API address: listen tcp ${addr}: bind: cannot assign requested address`);
      throw err;
    }
    this.app = app;
    this.opts.log.debug({ addr: `${host}:${port}` }, 'swarm listener serving');
  }

  /** The port it listens on (the one asked for, or the kernel's for port 0). */
  get port(): number {
    const a = this.app?.server.address();
    return a && typeof a === 'object' ? a.port : 0;
  }

  async stop(): Promise<void> {
    const app = this.app;
    this.app = null;
    await app?.close();
  }
}
