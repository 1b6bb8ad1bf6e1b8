// Volume routes: create, inspect, list, remove and prune. Handlers write the volume record and
// wait for the volume reconciler (which makes or removes the data) before answering, 503 when it
// does not finish in time. A volume some container names is in use and is never removed.
import * as z from 'zod';
import type { App } from '../app.ts';
import { conflict, EngineError, notFound, unavailable } from '../../lib/errors.ts';
import { ANONYMOUS_LABEL, Volumes, findVolume, liveVolumes } from '../../store/kinds/volume.ts';
import { invalidFilter, parseFilters, pruneFilters, pruneMatches, type Filters } from '../filters.ts';
import type { ApiStore } from '../containers/store.ts';
import { apiVersion, filtersQuery, nameParams, q, requireApiVersion } from '../request.ts';
import { gone, waitUntil, writeAndWait } from '../write-and-wait.ts';
import { admitVolume } from '../../admission/volumes/admit.ts';
import { volumeCreateBody } from '../../admission/volumes/create-schema.ts';
import { listVolumes, usersOf, volumesInUse, volumeView, type VolumeResource } from './views.ts';

export interface VolumeUsagePort {
  /** Bytes used by the volume's data (0 when unknown). */
  size(name: string): Promise<number>;
}

export interface VolumeRouteDeps {
  store: ApiStore;
  usage: VolumeUsagePort;
  /** How long a handler waits for the volume reconciler before answering 503. */
  waitTimeoutMs?: number;
  /** Whether this node is a swarm manager (cluster volumes' routes answer otherwise). */
  isManager?: () => boolean;
}

const SWARM_ONLY = 'This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.';

export function volumeRoutes(deps: VolumeRouteDeps) {
  const { store } = deps;
  const timeoutMs = deps.waitTimeoutMs ?? 60_000;

  async function waitReady(name: string, generation: number): Promise<VolumeResource> {
    const done = (x: VolumeResource) => x.status.observedGeneration >= generation && x.status.phase !== 'pending';
    const r = await waitUntil(store, Volumes, name, done, { timeoutMs, timedOut: () => unavailable(`volume ${name} was not created in time`) });
    if (!r) throw notFound(`get ${name}: no such volume`);
    if (r.status.phase === 'failed') {
      store.updateSpec(Volumes, name, (s) => ({ ...s, desired: 'removed' }));
      throw new EngineError('Internal', `create ${name}: ${r.status.error}`);
    }
    return r;
  }

  /** Marks the volume removed and waits until its data and record are gone. */
  async function remove(v: VolumeResource): Promise<void> {
    const users = usersOf(store, v.name);
    if (users.length) throw conflict(`remove ${v.name}: volume is in use - [${users.join(', ')}]`);
    await writeAndWait(store, Volumes, v.name, (s) => ({ ...s, desired: 'removed' }), gone, {
      timeoutMs,
      timedOut: () => unavailable(`removal of volume ${v.name} did not finish in time`),
    });
  }

  return async function register(app: App): Promise<void> {
    app.post('/volumes/create', { schema: { body: volumeCreateBody } }, async (req, reply) => {
      const body = req.body;
      if (body.ClusterVolumeSpec) throw unavailable(SWARM_ONLY);
      const { volume, created } = admitVolume(store, body);
      const r = created || volume.status.phase === 'pending' ? await waitReady(volume.name, volume.generation) : volume;
      reply.code(201);
      return volumeView(r);
    });

    app.get('/volumes', { schema: { querystring: filtersQuery } }, async (req) => {
      const vols = listVolumes(store, req.query.filters ?? '');
      return { Volumes: vols.map((v) => volumeView(v)), Warnings: [] };
    });

    app.get('/volumes/:name', { schema: { params: nameParams } }, async (req) => volumeView(findVolume(store, req.params.name)));

    // Updates only cluster volumes: a manager has none by that name (this daemon keeps none), as
    // the reference's cluster answers; anywhere else the swarm is what is missing.
    app.put('/volumes/:name', { schema: { params: nameParams } }, async (req) => {
      if (deps.isManager?.()) throw notFound(`volume ${req.params.name} not found`);
      throw unavailable(SWARM_ONLY);
    });

    app.delete('/volumes/:name', { schema: { params: nameParams, querystring: z.looseObject({ force: q.bool() }) } }, async (req, reply) => {
      const force = req.query.force;
      let v: VolumeResource;
      try {
        v = findVolume(store, req.params.name);
      } catch (err) {
        if (force) return reply.code(204).send();
        throw err;
      }
      await remove(v);
      reply.code(204).send();
    });

    app.post('/volumes/prune', { schema: { querystring: filtersQuery } }, async (req) => {
      requireApiVersion(req, '1.25');
      const f = parseFilters(req.query.filters, VOLUME_PRUNE_KEYS);
      const all = takeAll(f);
      const filters = pruneFilters(f);
      // From API 1.42 only anonymous volumes, unless all=true; before it, every unused one.
      const onlyAnonymous = apiVersion(req) >= 1.42 && !all;
      const used = volumesInUse(store);
      const candidates = liveVolumes(store).filter(
        (v) => !used.has(v.name) && (!onlyAnonymous || ANONYMOUS_LABEL in v.spec.labels) && pruneMatches(filters, v.spec.labels, Date.parse(v.spec.created)),
      );
      const deleted: string[] = [];
      let reclaimed = 0;
      for (const v of candidates) {
        try {
          const size = await deps.usage.size(v.name).catch(() => 0);
          await remove(v);
          deleted.push(v.name);
          reclaimed += size;
        } catch (err) {
          req.log.warn({ err, volume: v.name }, 'prune: volume not removed');
        }
      }
      return { VolumesDeleted: deleted.length ? deleted : null, SpaceReclaimed: reclaimed };
    });
  };
}

// Volume prune takes no `until` (the reference refuses it as an unknown key); `all` is its own.
const VOLUME_PRUNE_KEYS: ReadonlySet<string> = new Set(['all', 'label', 'label!']);

/** Takes the volume-only `all` filter out of the prune filters; the rest are the common ones. */
function takeAll(f: Filters): boolean {
  let all = false;
  for (const v of f.get('all') ?? []) {
    if (v === 'true' || v === '1') all = true;
    else if (v !== 'false' && v !== '0') throw invalidFilter(`all=${v}`);
  }
  f.delete('all');
  return all;
}
