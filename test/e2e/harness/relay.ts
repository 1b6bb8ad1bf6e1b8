// A TCP relay to etcd (or any TCP server) that a test can cut: every connection through it is
// dropped and new ones refused until it is restored, as a partition between a node and etcd would.
// In-process tests (cluster-watch, cluster-cache) point their etcd client at it.
import { createServer, connect, type Server, type Socket } from 'node:net';

/** A TCP relay to etcd that can be cut: every connection dropped, new ones refused, until restored. */
export class Relay {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private cut = false;
  port = 0;

  constructor(target: URL) {
    this.server = createServer((client) => {
      if (this.cut) return client.destroy();
      const upstream = connect(Number(target.port), target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => {
          this.sockets.delete(s);
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  listen(): Promise<void> {
    return new Promise((r) => this.server.listen(0, '127.0.0.1', () => {
      this.port = (this.server.address() as { port: number }).port;
      r();
    }));
  }

  sever(): void {
    this.cut = true;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.cut = false;
  }

  close(): Promise<void> {
    this.sever();
    return new Promise((r) => this.server.close(() => r()));
  }
}
