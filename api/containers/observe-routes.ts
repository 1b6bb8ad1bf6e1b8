// Watching a container: its logs, its resource usage (stats) and its processes (top).
import * as z from 'zod';
import { conflict, invalidArgument, notImplemented } from '../../lib/errors.ts';
import { isRunning, Containers, findContainer } from '../../store/kinds/container.ts';
import type { App } from '../app.ts';
import { apiVersion, idParams, q, strconvError } from '../request.ts';
import { streamLogs } from './logs.ts';
import { logsQuery, logTail, logTime } from '../logs-query.ts';
import type { ContainerRouteDeps } from './routes.ts';

const ZERO_CPU = { cpu_usage: { total_usage: 0 }, throttling_data: { periods: 0, throttled_periods: 0, throttled_time: 0 } };
const NO_TIME = '0001-01-01T00:00:00Z';

export function observeRoutes(deps: ContainerRouteDeps) {
  const { store } = deps;
  return async function register(app: App): Promise<void> {
    app.get('/containers/:id/logs', { schema: { params: idParams, querystring: logsQuery } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      const { stdout, stderr, follow, timestamps, details } = req.query;
      if (!stdout && !stderr) throw invalidArgument('Bad parameters: you must choose at least one stream');
      const lc = c.spec.hostConfig.LogConfig;
      // A remote driver is read through its local cache, unless cache-disabled.
      const cacheOff = ['syslog', 'gelf', 'fluentd', 'journald'].includes(lc.Type) && /^(1|t|T|TRUE|true|True)$/.test(lc.Config?.['cache-disabled'] ?? '');
      if (lc.Type === 'none' || cacheOff) throw notImplemented('configured logging driver does not support reading');
      const since = logTime(req.query.since);
      const until = logTime(req.query.until);
      await streamLogs(reply, c, store, deps.logs, { stdout, stderr, follow, timestamps, details, since, until, tail: logTail(req.query.tail), apiVersion: apiVersion(req) });
    });

    app.get('/containers/:id/top', { schema: { params: idParams, querystring: z.looseObject({ ps_args: q.str() }) } }, async (req) => {
      const c = findContainer(store, req.params.id);
      if (!isRunning(c.status)) throw conflict(`Container ${c.name} is not running`);
      if (c.status.phase === 'restarting') throw conflict(`Container ${c.name} is restarting, wait until the container is running`);
      return deps.ops.top(c.name, req.query.ps_args || '-ef');
    });

    const statsQuery = z.looseObject({ stream: q.bool(true), 'one-shot': q.bool() });
    app.get('/containers/:id/stats', { schema: { params: idParams, querystring: statsQuery } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      const stream = req.query.stream;
      const oneShot = apiVersion(req) >= 1.41 && req.query['one-shot'];
      if (stream && oneShot) throw invalidArgument('cannot have stream=true and one-shot=true');
      const empty = {
        read: NO_TIME, preread: NO_TIME, pids_stats: {}, blkio_stats: {}, num_procs: 0, storage_stats: {},
        cpu_stats: ZERO_CPU, precpu_stats: ZERO_CPU, memory_stats: {}, name: c.spec.name, id: c.name,
      };
      const sample = async (prev: Record<string, unknown> | null) => {
        const cur = store.get(Containers, c.name);
        if (!cur || (cur.status.phase !== 'running' && cur.status.phase !== 'paused')) return { s: empty, raw: null };
        const s = await deps.ops.stats(c.name);
        const out = { ...s, preread: (prev?.read as string) ?? NO_TIME, precpu_stats: prev?.cpu_stats ?? ZERO_CPU, name: c.spec.name, id: c.name };
        return { s: out, raw: s };
      };
      if (!stream) {
        if (oneShot || !isRunning(c.status)) return (await sample(null)).s;
        const first = await sample(null);
        await new Promise((r) => setTimeout(r, 1000));
        return (await sample(first.raw)).s;
      }
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
      let closed = false;
      res.on('close', () => (closed = true));
      let prev: Record<string, unknown> | null = null;
      while (!closed) {
        const got: { s: unknown; raw: Record<string, unknown> | null } = await sample(prev).catch(() => ({ s: empty, raw: null }));
        prev = got.raw;
        res.write(JSON.stringify(got.s) + '\n');
        await new Promise((r) => setTimeout(r, 1000));
      }
    });
  };
}
