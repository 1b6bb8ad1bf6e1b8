// --cluster-store etcd://HOST:PORT[,HOST:PORT] and --cluster-store-opt, read as the daemon takes
// them: the etcd endpoints (https when a CA is given), the TLS files, and the lease TTL of the
// node's record (discovery.ttl, seconds, default 15), and the self-fencing margin (fence.margin,
// seconds, default TTL/5 up to 2 s: reconcilers/node/self-fence.ts). A malformed URL or an unknown
// option refuses the start with the reason.
import { invalidArgument } from '../errors.ts';

export interface ClusterStore {
  endpoints: string[];
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  ttlSeconds: number;
  /** How long before the lease could expire at etcd a cut-off node has killed its cluster containers. */
  fenceMarginSeconds: number;
  /**
   * A deadline for each unary call (not the streams: watches, keep-alives): a call sent to an
   * endpoint that went away fails instead of waiting, and the client turns to another endpoint.
   */
  callTimeoutMs?: number;
}

export const DEFAULT_DISCOVERY_TTL = 15;
const OPTS = new Set(['kv.cacertfile', 'kv.certfile', 'kv.keyfile', 'discovery.ttl', 'fence.margin']);

export function parseClusterStore(url: string, opts: Record<string, string> = {}): ClusterStore {
  const bad = (why: string) => invalidArgument(`invalid --cluster-store ${JSON.stringify(url)}: ${why}`);
  const m = /^etcd:\/\/(.+)$/.exec(url);
  if (!m) throw bad('expected etcd://HOST:PORT[,HOST:PORT]');
  for (const k of Object.keys(opts)) {
    if (!OPTS.has(k)) throw invalidArgument(`invalid --cluster-store-opt ${k}: expected kv.cacertfile, kv.certfile, kv.keyfile, discovery.ttl or fence.margin`);
  }
  const tls = opts['kv.cacertfile'] || opts['kv.certfile'] || opts['kv.keyfile'] ? { caFile: opts['kv.cacertfile'], certFile: opts['kv.certfile'], keyFile: opts['kv.keyfile'] } : undefined;
  if (tls && !!tls.certFile !== !!tls.keyFile) throw invalidArgument('invalid --cluster-store-opt: kv.certfile and kv.keyfile go together');
  const endpoints = m[1]!.split(',').map((hp) => {
    const h = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(hp.trim());
    if (!h || Number(h[2]) < 1 || Number(h[2]) > 65535) throw bad(`${JSON.stringify(hp)} is not HOST:PORT`);
    return `${tls ? 'https' : 'http'}://${h[1]}:${h[2]}`;
  });
  let ttlSeconds = DEFAULT_DISCOVERY_TTL;
  if (opts['discovery.ttl'] !== undefined) {
    const t = opts['discovery.ttl'].replace(/s$/, '');
    if (!/^\d+$/.test(t) || Number(t) < 2) throw invalidArgument(`invalid --cluster-store-opt discovery.ttl=${opts['discovery.ttl']}: expected whole seconds, at least 2`);
    ttlSeconds = Number(t);
  }
  let fenceMarginSeconds = Math.min(2, ttlSeconds / 5);
  if (opts['fence.margin'] !== undefined) {
    const t = opts['fence.margin'].replace(/s$/, '');
    fenceMarginSeconds = /^\d+(\.\d+)?$/.test(t) ? Number(t) : NaN;
  }
  const why = checkFenceMargin(ttlSeconds, fenceMarginSeconds, opts['fence.margin']);
  if (why) throw invalidArgument(why);
  return { endpoints, ...(tls ? { tls } : {}), ttlSeconds, fenceMarginSeconds };
}

/**
 * The refusal of a fence margin that leaves no time to stop: fencing starts at TTL/2 without a
 * renewal and must have killed the node's cluster containers by TTL - margin.
 */
export function checkFenceMargin(ttlS: number, marginS: number, given: string | number = marginS): string | undefined {
  if (!(marginS >= 0)) return `invalid --cluster-store-opt fence.margin=${given}: expected seconds, at least 0`;
  if (marginS >= ttlS / 2) return `invalid --cluster-store-opt fence.margin=${given}: the fence margin (${marginS}s) must be less than half the lease TTL (discovery.ttl=${ttlS}s): a node cut off from etcd starts stopping its containers at TTL/2 and must have killed them by TTL - margin`;
  return undefined;
}
