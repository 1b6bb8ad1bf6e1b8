// Container routes: each handler validates, writes desired state into the store, and waits for
// the container reconciler to report the observed result in status.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { conflict, EngineError, invalidArgument, isCode, notFound, notImplemented, notModified, unavailable } from '../../lib/errors.ts';
import type { ContainerSpec, ContainerStatus, ImageSpec, ImageStatus, Resource } from '../../store/types.ts';
import { containerByName, KIND } from '../../store/types.ts';
import type { ContainerLogReader, ContainerSignalPort } from '../ports.ts';
import { createContainer } from './create.ts';
import type { CreateDefaults } from './create-request.ts';
import { inspectView, summaryView } from './views.ts';
import { listContainers } from './list.ts';
import { endpointsOfContainer } from '../../store/endpoint-types.ts';
import { waitEndpointsPlugged } from '../networks/endpoints.ts';
import { bridgeNetworkTest, networkNameResolver } from '../networks/views.ts';
import { streamLogs } from './logs.ts';
import type { ApiStore } from './store.ts';
import type { ImageStore } from '../images/store.ts';
import { removeLink } from './links.ts';
import { VOLUME_KIND, type VolumeSpec, type VolumeStatus } from '../../store/volume-types.ts';

type CR = Resource<ContainerSpec, ContainerStatus>;

export interface ContainerRouteDeps {
  /** With transaction: a container and the volumes it creates are written together. */
  store: ImageStore;
  logs: ContainerLogReader;
  defaults: CreateDefaults;
  /** Resolves an image reference or id to its record; NotFound `No such image: ...` otherwise. */
  resolveImage: (ref: string) => Resource<ImageSpec, ImageStatus>;
  /** Validates a signal name/number (InvalidArgument). */
  parseSignal: (sig: string) => number;
  graphDriverData: (id: string) => Record<string, string>;
  sizeRw: (id: string) => Promise<number>;
  /** One-off signals to a container's task (`docker kill`): NotFound when it has none. */
  signals: ContainerSignalPort;
  /** Events only the API sees (a kill's signal). */
  events?: { container(action: string, c: CR, extra?: Record<string, string>): void };
  /** How long a handler waits for the reconciler before answering 503/500. */
  waitTimeoutMs?: number;
}

type Req = FastifyRequest<{ Params: Record<string, string>; Querystring: Record<string, string | string[] | undefined> }>;

export function apiVersionOf(req: FastifyRequest): number {
  const v = (req as unknown as { apiVersion?: string }).apiVersion;
  if (!v) return 1.47;
  const [maj, min] = v.split('.').map(Number);
  return maj + (min ?? 0) / 100;
}

function q(req: Req, key: string): string | undefined {
  const v = req.query[key];
  return Array.isArray(v) ? v[v.length - 1] : v;
}

export function qBool(req: Req, key: string, dflt = false): boolean {
  const v = q(req, key);
  if (v === undefined) return dflt;
  return !['', '0', 'no', 'false', 'none'].includes(v.trim().toLowerCase());
}

function qInt(req: Req, key: string): number | undefined {
  const v = q(req, key);
  if (v === undefined || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw invalidArgument(`invalid value for ${key}: ${v}`);
  return Number(v);
}

/** Container lookup: full id, then name, then unique id prefix. */
export function findContainer(store: ApiStore, ref: string): CR {
  if (!ref) throw invalidArgument('invalid name or ID supplied: ""');
  const exact = store.get<ContainerSpec, ContainerStatus>(KIND.container, ref);
  if (exact) return exact;
  const byName = containerByName(store, ref);
  if (byName) return byName;
  if (/^[0-9a-f]+$/.test(ref)) {
    const matches = store.list<ContainerSpec, ContainerStatus>(KIND.container).filter((c) => c.name.startsWith(ref));
    if (matches.length === 1) return matches[0];
    if (matches.length > 1) throw invalidArgument(`multiple IDs found with provided prefix: ${ref}`);
  }
  throw notFound(`No such container: ${ref}`);
}

/** How long `docker kill` with SIGKILL waits for the container to go down before answering. */
const KILL_WAIT_MS = 5_000;

/** Has a task: running, paused or between restarts. */
export const isRunning = (s: ContainerStatus) => s.phase === 'running' || s.phase === 'paused' || s.phase === 'restarting';

export function containerRoutes(deps: ContainerRouteDeps) {
  const { store } = deps;
  const timeoutMs = deps.waitTimeoutMs ?? 120_000;

  function bump(id: string, fn: (s: ContainerSpec) => ContainerSpec): number {
    return store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, id, fn).generation;
  }

  /** Writes a spec asking for a new run; answers the run generation to wait for. */
  function bumpRun(id: string, fn: (s: ContainerSpec) => ContainerSpec): number {
    return store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, id, fn).spec.runGeneration;
  }

  /**
   * Waits until the reconciler has started (or failed to start) the run `want`. A wait that ends
   * first answers 503: the request is not known to have worked.
   */
  async function runStarted(id: string, want: number, waitMs: number | undefined): Promise<CR | undefined> {
    // The reconciler writes the run generation together with the start's outcome.
    const done = (r: CR | undefined) => !r || r.status.runGeneration >= want;
    const r = await store.waitFor<ContainerSpec, ContainerStatus>(KIND.container, id, done, { timeoutMs: waitMs });
    if (r && !done(r)) throw unavailable(`container ${id} did not start in time: it is still ${r.status.phase}`);
    return r;
  }

  return async function register(app: FastifyInstance): Promise<void> {
    app.post('/containers/create', async (req: Req, reply) => {
      const { id, warnings } = await createContainer({ store, resolveImage: deps.resolveImage, defaults: deps.defaults, timeoutMs }, req.body, {
        name: q(req, 'name'),
        platform: q(req, 'platform'),
      });
      reply.code(201).send({ Id: id, Warnings: warnings.length ? warnings : null });
    });

    app.get('/containers/json', async (req: Req) => {
      return listContainers(store, {
        all: qBool(req, 'all'),
        limit: qInt(req, 'limit') ?? -1,
        size: qBool(req, 'size'),
        filters: q(req, 'filters') ?? '',
        sizeRw: deps.sizeRw,
        findContainer: (ref) => findContainer(store, ref),
        resolveImageId: (ref) => deps.resolveImage(ref).name,
      });
    });

    app.get('/containers/:id/json', async (req: Req) => {
      const c = findContainer(store, req.params.id);
      const size = qBool(req, 'size') ? { rw: await deps.sizeRw(c.name), rootFs: 0 } : undefined;
      if (size) size.rootFs = size.rw + (store.get<ImageSpec, ImageStatus>(KIND.image, c.spec.imageId)?.spec.size ?? 0);
      return inspectView(c, {
        apiVersion: apiVersionOf(req),
        graphDriverData: deps.graphDriverData(c.name),
        size,
        volumeSource: (name) => store.get<VolumeSpec, VolumeStatus>(VOLUME_KIND, name)?.status.mountpoint ?? '',
        networkName: networkNameResolver(store),
        endpoints: endpointsOfContainer(store, c.name),
        isBridgeNetwork: bridgeNetworkTest(store),
      });
    });

    app.post('/containers/:id/start', async (req: Req, reply) => {
      const len = req.headers['content-length'];
      if ((len !== undefined && Number(len) > 7) || req.headers['transfer-encoding']) {
        if (req.body && typeof req.body === 'object' && Object.keys(req.body).length) {
          throw invalidArgument('starting container with non-empty request body was deprecated since API v1.22 and removed in v1.24');
        }
      }
      const c = findContainer(store, req.params.id);
      const s = c.status;
      if (s.phase === 'paused') throw conflict('cannot start a paused container, try unpause instead');
      if (s.phase === 'running') throw notModified();
      if (c.spec.desired === 'removed' || s.phase === 'removing') throw conflict(`container is marked for removal and cannot be started`);
      const want = bumpRun(c.name, (sp) => ({ ...sp, desired: 'running', runGeneration: sp.runGeneration + 1, manuallyStopped: false }));
      const r = await runStarted(c.name, want, timeoutMs);
      if (!r) throw notFound(`No such container: ${req.params.id}`);
      if (r.status.error && r.status.phase !== 'running') {
        const code = r.status.errorCode === 'InvalidArgument' ? 'InvalidArgument' : 'Internal';
        // As the reference daemon: an auto-remove container that cannot start is removed (`run --rm` waits for it).
        if (r.spec.hostConfig.AutoRemove) {
          store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, c.name, (sp) => ({ ...sp, desired: 'removed', remove: { force: true, volumes: true } }));
        }
        throw new EngineError(code, `failed to create task for container: ${r.status.error}`);
      }
      // Its other networks are plugged into the new run by the endpoint reconciler: answered once they are.
      await waitEndpointsPlugged(store, c.name, timeoutMs ?? 10_000);
      reply.code(204).send();
    });

    async function stopLike(req: Req, reply: FastifyReply, restart: boolean): Promise<void> {
      const c = findContainer(store, req.params.id);
      const t = qInt(req, 't');
      const signal = apiVersionOf(req) >= 1.42 ? q(req, 'signal') : undefined;
      if (signal) deps.parseSignal(signal);
      if (!restart && !isRunning(c.status)) throw notModified();
      const stopOptions = { signal: signal || undefined, timeout: t ?? null };
      // Long enough for the grace period, the SIGKILL after it and the teardown; none when the
      // grace period has no end (as the reference, the client decides how long to wait).
      const grace = t ?? c.spec.config.StopTimeout ?? 10;
      const wait = grace < 0 ? undefined : grace * 1000 + timeoutMs;
      if (restart) {
        const want = bumpRun(c.name, (sp) => ({ ...sp, desired: 'running', manuallyStopped: false, stopOptions, runGeneration: sp.runGeneration + 1 }));
        const r = await runStarted(c.name, want, wait);
        if (r?.status.error && r.status.phase !== 'running') {
          // A start refused for bad input is a 400 here too, as with start.
          const code = r.status.errorCode === 'InvalidArgument' ? 'InvalidArgument' : 'Internal';
          throw new EngineError(code, `Cannot restart container ${req.params.id}: ${r.status.error}`);
        }
        await waitEndpointsPlugged(store, c.name, timeoutMs);
      } else {
        bump(c.name, (sp) => ({ ...sp, desired: 'stopped', manuallyStopped: true, stopOptions }));
        const r = await store.waitFor<ContainerSpec, ContainerStatus>(KIND.container, c.name, (x) => !x || !isRunning(x.status), { timeoutMs: wait });
        if (r && isRunning(r.status)) throw unavailable(`container ${c.name} did not stop in time: it is still ${r.status.phase}`);
      }
      reply.code(204).send();
    }
    app.post('/containers/:id/stop', (req: Req, reply) => stopLike(req, reply, false));
    app.post('/containers/:id/restart', (req: Req, reply) => stopLike(req, reply, true));

    app.post('/containers/:id/kill', async (req: Req, reply) => {
      const c = findContainer(store, req.params.id);
      const sig = deps.parseSignal(q(req, 'signal') || 'SIGKILL');
      if (!isRunning(c.status)) throw conflict(`cannot kill container: ${req.params.id}: container ${c.name} is not running`);
      const exits = c.status.exitSeq;
      try {
        await deps.signals.kill(c.name, sig);
      } catch (err) {
        if (isCode(err, 'NotFound')) throw conflict(`cannot kill container: ${req.params.id}: container ${c.name} is not running`);
        throw err;
      }
      deps.events?.container('kill', c, { signal: String(sig) });
      // As the reference: a SIGKILL answers once the container is down (or after a short wait).
      if (sig === 9) await store.waitFor<ContainerSpec, ContainerStatus>(KIND.container, c.name, (x) => !x || x.status.exitSeq > exits, { timeoutMs: KILL_WAIT_MS });
      reply.code(204).send();
    });

    app.post('/containers/:id/wait', async (req: Req, reply) => {
      const c = findContainer(store, req.params.id);
      const condition = q(req, 'condition') || 'not-running';
      if (!['not-running', 'next-exit', 'removed'].includes(condition)) throw invalidArgument(`invalid condition: "${condition}"`);
      const startExitSeq = c.status.exitSeq;
      const abort = new AbortController();
      let waiting = true;
      // Only a client gone while waiting needs the abort (an answered one would pay an AbortError).
      reply.raw.on('close', () => {
        if (waiting) abort.abort();
      });
      const early = apiVersionOf(req) >= 1.3;
      reply.hijack();
      const res = reply.raw;
      if (early) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.flushHeaders();
      }
      let last: CR = c;
      const done = (r: CR | undefined): boolean => {
        if (!r) return true;
        last = r;
        if (condition === 'removed') return false;
        if (condition === 'next-exit') return r.status.exitSeq > startExitSeq && r.status.phase !== 'running';
        return !isRunning(r.status) || (r.status.phase === 'restarting' && false);
      };
      try {
        await store.waitFor<ContainerSpec, ContainerStatus>(KIND.container, c.name, done, { signal: abort.signal });
      } catch {
        res.destroy();
        return;
      } finally {
        waiting = false;
      }
      const body: Record<string, unknown> = { StatusCode: last.status.exitCode };
      if (last.status.error) body.Error = { Message: last.status.error };
      if (!early) res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(`${JSON.stringify(body)}\n`);
    });

    app.get('/containers/:id/logs', async (req: Req, reply) => {
      const c = findContainer(store, req.params.id);
      const stdout = qBool(req, 'stdout');
      const stderr = qBool(req, 'stderr');
      if (!stdout && !stderr) throw invalidArgument(`must specify at least one of 'stdout' or 'stderr'`);
      if (c.spec.hostConfig.LogConfig.Type === 'none') throw notImplemented('configured logging driver does not support reading');
      await streamLogs(req, reply, c, store, deps.logs, {
        stdout, stderr,
        follow: qBool(req, 'follow'),
        timestamps: qBool(req, 'timestamps'),
        details: qBool(req, 'details'),
        since: parseTime(q(req, 'since'), 'since'),
        until: parseTime(q(req, 'until'), 'until'),
        tail: parseTail(q(req, 'tail')),
        apiVersion: apiVersionOf(req),
      });
    });

    // A link's name has the parent's name in it: DELETE /containers/<parent>/<alias>?link=1.
    app.delete('/containers/:parent/:alias', async (req: Req, reply) => {
      const linkName = `${req.params.parent}/${req.params.alias}`;
      if (!qBool(req, 'link')) throw notFound(`No such container: ${linkName}`);
      removeLink(store, linkName, (ref) => findContainer(store, ref));
      reply.code(204).send();
    });

    app.delete('/containers/:id', async (req: Req, reply) => {
      const c = findContainer(store, req.params.id);
      const force = qBool(req, 'force');
      const volumes = qBool(req, 'v');
      if (qBool(req, 'link')) {
        removeLink(store, req.params.id, (ref) => findContainer(store, ref));
        return reply.code(204).send();
      }
      if (c.spec.desired === 'removed') throw conflict(`removal of container ${req.params.id} is already in progress`);
      if (!force && c.status.phase === 'paused') {
        throw conflict(`cannot remove container "${c.spec.name}": container is paused and must be unpaused first`);
      }
      if (!force && (c.status.phase === 'running' || c.status.phase === 'restarting')) {
        throw conflict(`cannot remove container "${c.spec.name}": container is running: stop the container before removing or force remove`);
      }
      store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, c.name, (sp) => ({ ...sp, desired: 'removed', remove: { force, volumes } }));
      const left = await store.waitFor(KIND.container, c.name, (r) => !r, { timeoutMs });
      if (left) throw unavailable(`removal of container ${c.name} did not finish in time`);
      reply.code(204).send();
    });
  };
}

function parseTime(v: string | undefined, name: string): number {
  if (v === undefined || v === '') return 0;
  if (!/^-?\d+(\.\d+)?$/.test(v)) throw invalidArgument(`invalid value for ${name}: ${v}`);
  return Number(v);
}

function parseTail(v: string | undefined): number {
  if (v === undefined || v === '' || v === 'all') return -1;
  return /^\d+$/.test(v) ? Number(v) : -1;
}
