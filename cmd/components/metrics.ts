// The daemon's metrics: one prom-client registry, passed down to what records (the controllers'
// families, prom-client's process collectors), served at GET /metrics on --metrics-addr. As the
// reference, the address needs experimental mode, and a start that cannot listen on it fails.
import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { component } from './registry.ts';
import { ControllerFamilies } from '../../controllers/metrics.ts';
import { invalidArgument } from '../../lib/errors.ts';
import { registerEngineCounters, type EngineCounters } from '../engine-metrics.ts';
import type { DaemonEnv } from './env.ts';

export interface Metrics {
  readonly registry: Registry;
  /** Only while /metrics is served: unserved, nothing on the reconcile and request paths records. */
  readonly controllers: ControllerFamilies | undefined;
  /** The reference's health-check and builder counters, likewise only while served. */
  readonly engine: EngineCounters | undefined;
  readonly server: Server | null;
}

/** HOST:PORT ("[::1]:9323", "127.0.0.1:9323", ":9323"); InvalidArgument when malformed. */
export function parseMetricsAddr(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535) throw invalidArgument(`invalid metrics address ${JSON.stringify(addr)}: expected HOST:PORT`);
  return { host: m[1] ?? m[2] ?? '', port };
}

function listen(registry: Registry, host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('404 page not found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
      (err: unknown) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${err instanceof Error ? err.message : String(err)}\n`),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host || undefined, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

export function metricsComponent({ cfg, log }: DaemonEnv) {
  return component({
    id: 'metrics',
    requires: [],
    init: async () => {
      const registry = new Registry();
      if (!cfg.metricsAddr) return { registry, controllers: undefined, engine: undefined, server: null };
      if (!cfg.experimental) throw invalidArgument('metrics-addr is only supported when experimental is enabled');
      // Only when served: the process collectors sample the event loop and the heap all along.
      collectDefaultMetrics({ register: registry });
      const controllers = new ControllerFamilies(registry);
      const engine = registerEngineCounters(registry);
      const { host, port } = parseMetricsAddr(cfg.metricsAddr);
      let server: Server;
      try {
        server = await listen(registry, host, port);
      } catch (err) {
        throw invalidArgument(`failed to start metrics server: ${err instanceof Error ? err.message : String(err)}`, err);
      }
      log.info({ addr: cfg.metricsAddr }, 'metrics API listening');
      return { registry, controllers, engine, server };
    },
    close: ({ server }) =>
      new Promise<void>((resolve) => {
        if (!server) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}
