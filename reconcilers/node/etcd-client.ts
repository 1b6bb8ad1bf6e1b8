// The etcd3 client of a cluster store: its endpoints and TLS files, gRPC's reconnect back-off
// bounded (its own grows to 120 s: after a partition or an etcd restart a node would stay away, and
// its watches stale, that long), the watch's back-off bounded likewise. Loaded only with a cluster
// (and outside the daemon's bundle: etcd3 reads its .proto files at run time).
import { readFileSync } from 'node:fs';
import type { Etcd3 } from 'etcd3';
import type { ClusterStore } from '../../lib/cluster/store-url.ts';

/**
 * How soon the client makes its watch stream again after it broke: doubling from 100 ms up to 2 s.
 * (The client's default grows to 30 s: after etcd came back, failover would wait that long, and
 * its pending timer keeps a stopped daemon's process alive as long.)
 */
function watchBackoff(ms = 100): { duration: number; next(): ReturnType<typeof watchBackoff> } {
  return { duration: ms, next: () => watchBackoff(Math.min(2000, ms * 2)) };
}

export async function etcdClient(store: ClusterStore): Promise<Etcd3> {
  const { Etcd3 } = await import('etcd3');
  const tls = store.tls;
  return new Etcd3({
    hosts: store.endpoints,
    dialTimeout: 2000,
    faultHandling: { watchBackoff: watchBackoff() },
    grpcOptions: { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 2000 },
    ...(store.callTimeoutMs ? { defaultCallOptions: (ctx: { isStream: boolean }) => (ctx.isStream ? {} : { deadline: Date.now() + store.callTimeoutMs! }) } : {}),
    ...(tls
      ? {
          credentials: {
            rootCertificate: tls.caFile ? readFileSync(tls.caFile) : Buffer.alloc(0),
            ...(tls.certFile ? { certChain: readFileSync(tls.certFile) } : {}),
            ...(tls.keyFile ? { privateKey: readFileSync(tls.keyFile) } : {}),
          },
        }
      : {}),
  });
}
