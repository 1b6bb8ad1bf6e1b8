// The rest of the container API: pause/unpause, rename, prune, top, stats, changes, export and
// the archive endpoints (`docker cp`).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { pipeline } from 'node:stream/promises';
import { conflict, invalidArgument, unavailable } from '../../lib/errors.ts';
import type { ContainerSpec, ContainerStatus, Resource } from '../../store/types.ts';
import { containerByName, KIND } from '../../store/types.ts';
import type { ContainerOpsPort, PathStat } from '../ports.ts';
import { normalizeName } from './names.ts';
import { findContainer } from './routes.ts';
import type { ApiStore } from './store.ts';
import { parsePruneFilters, pruneMatches } from './prune-filters.ts';

type CR = Resource<ContainerSpec, ContainerStatus>;
type Req = FastifyRequest<{ Params: Record<string, string>; Querystring: Record<string, string | undefined> }>;

export interface MoreRouteDeps {
  store: ApiStore;
  ops: ContainerOpsPort;
  /** Bytes of a container's read-write layer (what removing it gives back); 0 when unknown. */
  sizeRw?: (id: string) => Promise<number>;
  waitTimeoutMs?: number;
}

const truthy = (v: string | undefined) => v !== undefined && !['', '0', 'false', 'no', 'none'].includes(v.toLowerCase());
const isRunning = (c: CR) => c.status.phase === 'running' || c.status.phase === 'paused' || c.status.phase === 'restarting';

function statHeader(st: PathStat): string {
  return Buffer.from(JSON.stringify(st)).toString('base64');
}

export function moreContainerRoutes(deps: MoreRouteDeps) {
  const { store } = deps;
  const timeoutMs = deps.waitTimeoutMs ?? 60_000;

  async function setDesired(c: CR, desired: 'paused' | 'running'): Promise<CR | undefined> {
    const gen = store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, c.name, (s) => ({ ...s, desired })).generation;
    const r = await store.waitFor<ContainerSpec, ContainerStatus>(KIND.container, c.name, (x) => !x || x.status.observedGeneration >= gen, { timeoutMs });
    if (r && r.status.observedGeneration < gen) throw unavailable(`container ${c.name}: the change to ${desired} was not applied in time`);
    return r;
  }

  return async function register(app: FastifyInstance): Promise<void> {
    app.post('/containers/:id/pause', async (req: Req, reply: FastifyReply) => {
      const c = findContainer(store, req.params.id);
      if (c.status.phase === 'paused') throw conflict(`Container ${c.name} is already paused`);
      if (c.status.phase !== 'running') throw conflict(`Container ${c.name} is not running`);
      await setDesired(c, 'paused');
      reply.code(204).send();
    });

    app.post('/containers/:id/unpause', async (req: Req, reply: FastifyReply) => {
      const c = findContainer(store, req.params.id);
      if (c.status.phase !== 'paused') throw conflict(`Container ${c.name} is not paused`);
      await setDesired(c, 'running');
      reply.code(204).send();
    });

    app.post('/containers/:id/rename', async (req: Req, reply: FastifyReply) => {
      const c = findContainer(store, req.params.id);
      const raw = req.query.name;
      if (!raw) throw invalidArgument('Neither old nor new names may be empty');
      const name = normalizeName(raw);
      if (name === c.spec.name) throw invalidArgument(`Renaming a container with the same name as its current name`);
      const other = containerByName(store, name);
      if (other) throw conflict(`Error when allocating new name: Conflict. The container name "${name}" is already in use by container "${other.name}". You have to remove (or rename) that container to be able to reuse that name.`);
      store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, c.name, (s) => ({ ...s, name }));
      reply.code(204).send();
    });

    app.post('/containers/prune', async (req: Req) => {
      const filters = parsePruneFilters(req.query.filters);
      const victims = store
        .list<ContainerSpec, ContainerStatus>(KIND.container)
        .filter((c) => (c.status.phase === 'exited' || c.status.phase === 'created' || c.status.phase === 'dead') && c.spec.desired !== 'removed')
        .filter((c) => pruneMatches(filters, c.spec.config.Labels ?? {}, Date.parse(c.spec.created)));
      const deleted: string[] = [];
      // Measured before the layers go: what the removal gives back.
      const sizes = new Map(await Promise.all(victims.map(async (c) => [c.name, await (deps.sizeRw?.(c.name) ?? Promise.resolve(0)).catch(() => 0)] as const)));
      for (const c of victims) {
        try {
          store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, c.name, (s) => ({ ...s, desired: 'removed', remove: { force: false, volumes: false } }));
          deleted.push(c.name);
        } catch {
          // raced with another change; skip
        }
      }
      await Promise.all(deleted.map((id) => store.waitFor(KIND.container, id, (r) => !r, { timeoutMs })));
      const space = deleted.filter((id) => !store.get(KIND.container, id)).reduce((n, id) => n + (sizes.get(id) ?? 0), 0);
      return { ContainersDeleted: deleted.length ? deleted : null, SpaceReclaimed: space };
    });

    app.get('/containers/:id/top', async (req: Req) => {
      const c = findContainer(store, req.params.id);
      if (!isRunning(c)) throw conflict(`Container ${c.name} is not running`);
      if (c.status.phase === 'restarting') throw conflict(`Container ${c.name} is restarting, wait until the container is running`);
      return deps.ops.top(c.name, req.query.ps_args ?? '-ef');
    });

    app.get('/containers/:id/stats', async (req: Req, reply: FastifyReply) => {
      const c = findContainer(store, req.params.id);
      const stream = req.query.stream === undefined ? true : truthy(req.query.stream);
      const oneShot = truthy(req.query['one-shot']);
      const empty = {
        read: '0001-01-01T00:00:00Z', preread: '0001-01-01T00:00:00Z', pids_stats: {}, blkio_stats: {}, num_procs: 0, storage_stats: {},
        cpu_stats: { cpu_usage: { total_usage: 0 }, throttling_data: { periods: 0, throttled_periods: 0, throttled_time: 0 } },
        precpu_stats: { cpu_usage: { total_usage: 0 }, throttling_data: { periods: 0, throttled_periods: 0, throttled_time: 0 } },
        memory_stats: {}, name: c.spec.name, id: c.name,
      };
      const sample = async (prev: Record<string, unknown> | null) => {
        const cur = store.get<ContainerSpec, ContainerStatus>(KIND.container, c.name);
        if (!cur || cur.status.phase !== 'running' && cur.status.phase !== 'paused') return { s: empty, raw: null };
        const s = await deps.ops.stats(c.name);
        const out = {
          ...s,
          preread: (prev?.read as string) ?? '0001-01-01T00:00:00Z',
          precpu_stats: prev?.cpu_stats ?? { cpu_usage: { total_usage: 0 }, throttling_data: { periods: 0, throttled_periods: 0, throttled_time: 0 } },
          name: c.spec.name,
          id: c.name,
        };
        return { s: out, raw: s };
      };
      if (!stream) {
        if (oneShot || !isRunning(c)) return (await sample(null)).s;
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
        const s = got.s;
        res.write(JSON.stringify(s) + '\n');
        await new Promise((r) => setTimeout(r, 1000));
      }
    });

    app.get('/containers/:id/changes', async (req: Req) => {
      const c = findContainer(store, req.params.id);
      const ch = await deps.ops.changes(c.name);
      return ch.length ? ch : null;
    });

    app.get('/containers/:id/export', async (req: Req, reply: FastifyReply) => {
      const c = findContainer(store, req.params.id);
      const abort = new AbortController();
      const stream = await deps.ops.exportRootfs(c.name, abort.signal);
      reply.hijack();
      const res = reply.raw;
      res.on('close', () => abort.abort());
      res.writeHead(200, { 'Content-Type': 'application/x-tar' });
      await pipeline(stream, res).catch(() => res.destroy());
    });

    const archivePath = (req: Req) => {
      const p = req.query.path;
      if (!p) throw invalidArgument('bad parameter: path cannot be empty');
      return p;
    };

    app.head('/containers/:id/archive', async (req: Req, reply: FastifyReply) => {
      const c = findContainer(store, req.params.id);
      const st = await deps.ops.statPath(c.name, archivePath(req));
      reply.header('X-Docker-Container-Path-Stat', statHeader(st)).code(200).send();
    });

    app.get('/containers/:id/archive', async (req: Req, reply: FastifyReply) => {
      const c = findContainer(store, req.params.id);
      const abort = new AbortController();
      const { stat, stream } = await deps.ops.getArchive(c.name, archivePath(req), abort.signal);
      reply.hijack();
      const res = reply.raw;
      res.on('close', () => abort.abort());
      res.writeHead(200, { 'Content-Type': 'application/x-tar', 'X-Docker-Container-Path-Stat': statHeader(stat) });
      await pipeline(stream, res).catch(() => res.destroy());
    });

    app.put('/containers/:id/archive', { bodyLimit: 1 << 30 }, async (req: Req, reply: FastifyReply) => {
      const c = findContainer(store, req.params.id);
      if (c.spec.hostConfig.ReadonlyRootfs) throw conflict('container rootfs is marked read-only');
      const abort = new AbortController();
      req.raw.on('close', () => {
        if (!req.raw.complete) abort.abort();
      });
      await deps.ops.putArchive(
        c.name,
        archivePath(req),
        req.raw,
        { noOverwriteDirNonDir: truthy(req.query.noOverwriteDirNonDir), copyUIDGID: truthy(req.query.copyUIDGID) },
        abort.signal,
      );
      reply.code(200).type('text/plain').send('');
    });
  };
}
