// A container's lifecycle: create, start, stop, restart, kill, wait, pause, unpause, rename,
// remove and prune. Each handler writes desired state into the store and waits for the container
// reconciler to report the observed result in status.
import * as z from 'zod';
import { conflict, EngineError, invalidArgument, isCode, notFound, notModified, unavailable } from '../../lib/errors.ts';
import { type ContainerSpec, isRunning, Containers, type ContainerResource as CR, findContainer } from '../../store/kinds/container.ts';
import type { App } from '../app.ts';
import { waitEndpointsPlugged } from '../networks/endpoints.ts';
import { apiVersion, filtersQuery, idParams, q } from '../request.ts';
import { gone, observed, settle, waitRemoved, waitUntil, writeAndWait, type WriteAndWaitOptions } from '../write-and-wait.ts';
import { createContainer } from './create.ts';
import { createBody } from '../../admission/containers/create-schema.ts';
import { removeLink } from '../../admission/containers/links.ts';
import { admitRename, checkRemovable, checkStartable, removeLevel, startLevel } from '../../admission/containers/lifecycle.ts';
import { parseFilters, pruneFilters, pruneMatches } from '../filters.ts';
import type { ContainerRouteDeps } from './routes.ts';


/** How long `docker kill` with SIGKILL waits for the container to go down before answering. */
const KILL_WAIT_MS = 5_000;

const stopQuery = z.looseObject({ t: q.atoi(), signal: q.str() });

export function lifecycleRoutes(deps: ContainerRouteDeps) {
  const { store } = deps;
  const timeoutMs = deps.waitTimeoutMs ?? 120_000;

  /** Writes the container's spec and waits for the reconciler: see api/write-and-wait.ts. */
  const write = (id: string, mutate: (s: ContainerSpec) => ContainerSpec, done: (r: CR, written: CR) => boolean, o: WriteAndWaitOptions<CR>) =>
    writeAndWait(store, Containers, id, mutate, done, o);

  /**
   * `mutate`, refused with a 409 if the container is being removed: the check runs in the same
   * store write as the change, so a request that raced a removal cannot bring the container back.
   */
  const unlessRemoved = (refusal: string, mutate: (s: ContainerSpec) => ContainerSpec) => (s: ContainerSpec): ContainerSpec => {
    if (s.desired === 'removed') throw conflict(refusal);
    return mutate(s);
  };

  /** The reconciler has started (or failed to start) the run the spec asks for: it writes the run generation with the outcome. */
  const runStarted = (r: CR) => r.status.runGeneration >= r.spec.runGeneration;
  const notStarted = (r: CR) => unavailable(`container ${r.name} did not start in time: it is still ${r.status.phase}`);

  /**
   * A stop (or a restart's stop) under way: the reconciler decides its grace period and records
   * when it ends (status.stopDeadline; -1: no end, as `t=-1` asks). Once the first wait has seen that
   * deadline instead of `done`, this waits for `done` until the deadline, plus the kill and teardown.
   */
  async function throughStop(r: CR | undefined, done: (r: CR) => boolean, timedOut: (r: CR) => Error): Promise<CR | undefined> {
    if (!r || done(r)) return r;
    const end = r.status.stopDeadline ?? null;
    const timeout = end === null ? timeoutMs : end < 0 ? undefined : Math.max(0, end - Date.now()) + timeoutMs;
    return waitUntil(store, Containers, r.name, done, { timeoutMs: timeout, timedOut });
  }
  const stopping = (r: CR) => r.status.stopDeadline != null;

  /** Pause and unpause: the desired level, answered once the reconciler has observed it. */
  async function setDesired(c: CR, desired: 'paused' | 'running'): Promise<void> {
    const refusal = `Container ${c.name} is marked for removal and cannot be ${desired === 'paused' ? 'paused' : 'unpaused'}`;
    await write(c.name, unlessRemoved(refusal, (s) => ({ ...s, desired })), observed, { timeoutMs, timedOut: () => unavailable(`container ${c.name}: the change to ${desired} was not applied in time`) });
  }

  return async function register(app: App): Promise<void> {
    app.post('/containers/create', { schema: { querystring: z.looseObject({ name: q.str(), platform: q.str() }), body: createBody } }, async (req, reply) => {
      const { id, warnings } = await createContainer({ store, resolveImage: deps.resolveImage, defaults: deps.defaults, timeoutMs, ...(deps.swarmAttach ? { attach: deps.swarmAttach } : {}) }, req.body, {
        name: req.query.name,
        platform: req.query.platform,
      });
      reply.code(201).send({ Id: id, Warnings: warnings.length ? warnings : null });
    });

    app.post('/containers/:id/start', { schema: { params: idParams } }, async (req, reply) => {
      const len = req.headers['content-length'];
      if ((len !== undefined && Number(len) > 7) || req.headers['transfer-encoding']) {
        if (req.body && typeof req.body === 'object' && Object.keys(req.body).length) {
          throw invalidArgument('starting container with non-empty request body was deprecated since API v1.22 and removed in v1.24');
        }
      }
      const c = findContainer(store, req.params.id);
      checkStartable(c);
      const r = await write(c.name, startLevel, runStarted, { timeoutMs, timedOut: notStarted });
      if (!r) throw notFound(`No such container: ${req.params.id}`);
      if (r.status.error && r.status.phase !== 'running') {
        const code = r.status.errorCode === 'InvalidArgument' ? 'InvalidArgument' : 'Internal';
        // As the reference daemon: an auto-remove container that cannot start is removed (`run --rm` waits for it).
        if (r.spec.hostConfig.AutoRemove) {
          store.updateSpec(Containers, c.name, (sp) => ({ ...sp, desired: 'removed', remove: { force: true, volumes: true } }));
        }
        throw new EngineError(code, `failed to create task for container: ${r.status.error}`);
      }
      // Its other networks are plugged into the new run by the endpoint reconciler: answered once they are.
      await waitEndpointsPlugged(store, c.name, timeoutMs ?? 10_000);
      reply.code(204).send();
    });

    for (const restart of [false, true]) {
      app.post(`/containers/:id/${restart ? 'restart' : 'stop'}`, { schema: { params: idParams, querystring: stopQuery } }, async (req, reply) => {
        const c = findContainer(store, req.params.id);
        const t = req.query.t;
        const signal = apiVersion(req) >= 1.42 ? req.query.signal : undefined;
        if (signal) deps.parseSignal(signal);
        if (!restart && !isRunning(c.status)) throw notModified();
        const stopOptions = { signal: signal || undefined, timeout: t ?? null };
        if (restart) {
          const mutate = (sp: ContainerSpec): ContainerSpec => ({ ...sp, desired: 'running', manuallyStopped: false, stopOptions, runGeneration: sp.runGeneration + 1 });
          const refusal = `Cannot restart container ${req.params.id}: container is marked for removal and cannot be started`;
          const first = await write(c.name, unlessRemoved(refusal, mutate), (r) => runStarted(r) || stopping(r), { timeoutMs, timedOut: notStarted });
          const r = await throughStop(first, runStarted, notStarted);
          if (r?.status.error && r.status.phase !== 'running') {
            // A start refused for bad input is a 400 here too, as with start.
            const code = r.status.errorCode === 'InvalidArgument' ? 'InvalidArgument' : 'Internal';
            throw new EngineError(code, `Cannot restart container ${req.params.id}: ${r.status.error}`);
          }
          await waitEndpointsPlugged(store, c.name, timeoutMs);
        } else {
          const stopped = (r: CR) => !isRunning(r.status);
          const notStopped = (r: CR) => unavailable(`container ${r.name} did not stop in time: it is still ${r.status.phase}`);
          if (c.spec.desired === 'removed') {
            // Being removed: the removal stops it; answered once it has.
            await waitUntil(store, Containers, c.name, stopped, { timeoutMs, timedOut: notStopped });
          } else {
            const first = await write(c.name, (sp) => ({ ...sp, desired: 'stopped', manuallyStopped: true, stopOptions }), (r) => stopped(r) || stopping(r), { timeoutMs, timedOut: notStopped });
            await throughStop(first, stopped, notStopped);
          }
        }
        reply.code(204).send();
      });
    }

    app.post('/containers/:id/kill', { schema: { params: idParams, querystring: z.looseObject({ signal: q.str() }) } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      const sig = deps.parseSignal(req.query.signal || 'SIGKILL');
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
      if (sig === 9) await settle(store, Containers, c.name, (x) => !x || x.status.exitSeq > exits, { timeoutMs: KILL_WAIT_MS });
      reply.code(204).send();
    });

    app.post('/containers/:id/wait', { schema: { params: idParams, querystring: z.looseObject({ condition: q.str() }) } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      const condition = req.query.condition || 'not-running';
      if (!['not-running', 'next-exit', 'removed'].includes(condition)) throw invalidArgument(`invalid condition: "${condition}"`);
      const startExitSeq = c.status.exitSeq;
      const abort = new AbortController();
      let waiting = true;
      // Only a client gone while waiting needs the abort (an answered one would pay an AbortError).
      reply.raw.on('close', () => {
        if (waiting) abort.abort();
      });
      const early = apiVersion(req) >= 1.3;
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
        // As the reference: an exit ends the wait also when the policy restarts the container (it is
        // `restarting`, which counts as running for everything else).
        return !isRunning(r.status) || r.status.exitSeq > startExitSeq;
      };
      try {
        await settle(store, Containers, c.name, done, { signal: abort.signal });
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

    app.post('/containers/:id/pause', { schema: { params: idParams } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      if (c.status.phase === 'paused') throw conflict(`Container ${c.name} is already paused`);
      if (c.status.phase !== 'running') throw conflict(`Container ${c.name} is not running`);
      await setDesired(c, 'paused');
      reply.code(204).send();
    });

    app.post('/containers/:id/unpause', { schema: { params: idParams } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      if (c.status.phase !== 'paused') throw conflict(`Container ${c.name} is not paused`);
      await setDesired(c, 'running');
      reply.code(204).send();
    });

    app.post('/containers/:id/rename', { schema: { params: idParams, querystring: z.looseObject({ name: q.str() }) } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      const name = admitRename(store, c, req.query.name);
      store.updateSpec(Containers, c.name, (s) => ({ ...s, name }));
      reply.code(204).send();
    });

    const removeQuery = z.looseObject({ force: q.bool(), v: q.bool(), link: q.bool() });

    // A link's name has the parent's name in it: DELETE /containers/<parent>/<alias>?link=1.
    app.delete('/containers/:parent/:alias', { schema: { params: z.object({ parent: z.string(), alias: z.string() }), querystring: removeQuery } }, async (req, reply) => {
      const linkName = `${req.params.parent}/${req.params.alias}`;
      if (!req.query.link) throw notFound(`No such container: ${linkName}`);
      removeLink(store, linkName, (ref) => findContainer(store, ref));
      reply.code(204).send();
    });

    app.delete('/containers/:id', { schema: { params: idParams, querystring: removeQuery } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      const { force, v: volumes } = req.query;
      if (req.query.link) {
        removeLink(store, req.params.id, (ref) => findContainer(store, ref));
        return reply.code(204).send();
      }
      checkRemovable(c, req.params.id, force);
      await write(c.name, removeLevel({ force, volumes }), gone, { timeoutMs, timedOut: () => unavailable(`removal of container ${c.name} did not finish in time`) });
      reply.code(204).send();
    });

    app.post('/containers/prune', { schema: { querystring: filtersQuery } }, async (req) => {
      const filters = pruneFilters(parseFilters(req.query.filters));
      const victims = store
        .list(Containers)
        .filter((c) => (c.status.phase === 'exited' || c.status.phase === 'created' || c.status.phase === 'dead') && c.spec.desired !== 'removed')
        .filter((c) => pruneMatches(filters, c.spec.config.Labels ?? {}, Date.parse(c.spec.created)));
      const deleted: string[] = [];
      // Measured before the layers go: what the removal gives back.
      const sizes = new Map(await Promise.all(victims.map(async (c) => [c.name, await deps.sizeRw(c.name).catch(() => 0)] as const)));
      for (const c of victims) {
        try {
          store.updateSpec(Containers, c.name, (s) => ({ ...s, desired: 'removed', remove: { force: false, volumes: false } }));
          deleted.push(c.name);
        } catch {
          // raced with another change; skip
        }
      }
      await Promise.all(deleted.map((id) => waitRemoved(store, Containers, id, { timeoutMs })));
      const space = deleted.filter((id) => !store.get(Containers, id)).reduce((n, id) => n + (sizes.get(id) ?? 0), 0);
      return { ContainersDeleted: deleted.length ? deleted : null, SpaceReclaimed: space };
    });
  };
}
