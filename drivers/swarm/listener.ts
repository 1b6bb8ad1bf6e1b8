// A swarm manager's own endpoint on its listen address (the reference's port 2377): HTTPS with the
// node's certificate from the swarm's CA, client certificates asked for but not required (a node
// that joins has none yet), each request told who its peer is when the peer's certificate is one of
// this swarm's (a chain to its root, the cluster id in its subject). Node-to-node calls need that
// identity; joins ((5 of 21)) come with a join token instead. A listen address in use refuses the
// init or join that asked for it, in the reference's words (a 400 here; dockerd answers 500).
import type { TLSSocket } from 'node:tls';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { failedPrecondition } from '../../lib/errors.ts';
import { nodeIdentity, type NodeIdentity } from './ca.ts';

export interface SwarmListenerOptions {
  host: string;
  port: number;
  tls: { caPem: string; certPem: string; keyPem: string };
  /** This node, as GET /v1/node answers it to a peer of the swarm. */
  self: { nodeId: string; clusterId: string; role: 'manager' | 'worker' };
  log: Logger;
}

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
    app.setNotFoundHandler(async (_req, reply) => reply.code(404).send({ message: 'page not found' }));
    try {
      await app.listen({ host, port });
    } catch (err) {
      await app.close().catch(() => {});
      const code = (err as NodeJS.ErrnoException).code;
      const addr = `${host.includes(':') ? `[${host}]` : host}:${port}`;
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
