// Image routes. Reads come from the store; load/import/commit write image records (desired
// present) and wait for the image reconciler to mark them ready; tags are 'reference' records;
// delete and prune untag and mark images removed in one transaction each, then wait for the
// reconciler to drop them. Image events are recorded once each change is committed.
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import type { App } from '../app.ts';
import { EngineError, invalidArgument, notFound, notImplemented, unavailable } from '../../lib/errors.ts';
import { familiarName, familiarRepository, formatReference, parseReference, repositoryName, withTag } from '../../lib/reference.ts';
import { Containers, type ContainerResource } from '../../store/kinds/container.ts';

import type { ImageArchivePort, LoadedImage, SaveImage, SavePlatform } from '../ports.ts';
import type { Platform } from '../../lib/platform.ts';
import { manifestSummaries, pickPlatform, platformQuery, siblingsOf } from './platforms.ts';
import { runJsonLines, type JsonLinesWriter } from '../streams.ts';
import { apiVersion, filtersQuery, q, requireApiVersion, restParams } from '../request.ts';
import { commitQuery, parseCommit, withPaused, type CommitQuery, type ImageCommitPort } from './commit.ts';
import { deleteImage, type DeleteResult } from './delete.ts';
import { imageHistory } from './history.ts';
import type { LayerSizes } from './layers.ts';
import { listImages } from './list.ts';
import { parseImagePruneFilters, pruneGuard, pruneImages } from './prune.ts';
import { findImage, imageIdOf, resolveImage, shownImageId, type ImageResource } from './resolve.ts';
import { ensureImageRecord, setImageTag } from './records.ts';
import type { ImageStore } from './store.ts';
import { inspectView, type GraphDriverInfo } from './views.ts';
import { References } from '../../store/kinds/reference.ts';
import { Images } from '../../store/kinds/image.ts';
import { waitRemoved } from '../write-and-wait.ts';

/** Where image events go (the events recorder): ids and names as the reference daemon logs them. */
export interface ImageEventsPort {
  image(action: string, id: string, name: string, extra?: Record<string, string>): void;
  container(action: string, c: ContainerResource, extra?: Record<string, string>): void;
}

/** A route handler another area plugs in (pull, push); `name` is the image named in the path. */
export type ImageStreamHandler = (req: FastifyRequest, reply: FastifyReply, name?: string) => Promise<void>;

export interface ImageRouteDeps {
  store: ImageStore;
  archive: ImageArchivePort;
  /** How long a handler waits for the image reconciler. */
  waitTimeoutMs?: number;
  /** Storage driver name and data for inspect's GraphDriver (wins over the two below). */
  graphDriver?: (image: ImageResource) => GraphDriverInfo;
  /** Storage driver data of an image (GraphDriver.Data). */
  graphDriverData?: (imageId: string) => Record<string, string>;
  /** The layer store: the driver name for GraphDriver.Name, layer sizes for history, shared size and prune. */
  layers?: { driverName: string } & LayerSizes;
  /** POST /commit; 501 until provided. */
  commit?: ImageCommitPort;
  /** Image events; none are recorded until provided. */
  events?: ImageEventsPort;
  /** POST /images/create?fromImage=... (pull); answered with an in-band error until provided. */
  pull?: ImageStreamHandler;
  /** POST /images/{name}/push; 501 until provided. */
  push?: ImageStreamHandler;
}

/** POST /images/create: the union of the pull's and the import's keys (the pull handler reads its own). */
const createQuery = z.looseObject({ fromImage: q.str(), fromSrc: q.str(), repo: q.str(), tag: q.str(), message: q.str(), changes: q.list(), platform: q.str() });
type CreateQuery = z.output<typeof createQuery>;
/** POST /images/{name}/tag and /push: `tag` is the push's, `repo` and `tag` the tag's. */
const repoTagQuery = z.looseObject({ repo: q.str(), tag: q.str() });

const DEFAULT_GRAPH_DRIVER: GraphDriverInfo = { Name: 'overlay2', Data: null };

/** `/images/<name>/<action>` with a greedy name: split the known trailing action off. */
export function splitImagePath(path: string, actions: readonly string[]): { name: string; action: string } | undefined {
  const i = path.lastIndexOf('/');
  if (i <= 0) return undefined;
  const action = path.slice(i + 1);
  if (!actions.includes(action)) return undefined;
  return { name: path.slice(0, i), action };
}

export function imageRoutes(deps: ImageRouteDeps) {
  const { store, archive } = deps;
  const timeoutMs = deps.waitTimeoutMs ?? 120_000;
  const onePrune = pruneGuard();
  const imageEvent = (action: string, id: string, name: string) => deps.events?.image(action, id, name);
  const graphDriver = (img: ImageResource): GraphDriverInfo => {
    if (deps.graphDriver) return deps.graphDriver(img);
    const data = deps.graphDriverData?.(img.name);
    return { Name: deps.layers?.driverName ?? DEFAULT_GRAPH_DRIVER.Name, Data: data && Object.keys(data).length ? data : null };
  };

  const ensureImage = (li: LoadedImage, signal: AbortSignal, parent = '') => ensureImageRecord(store, li, { signal, parent, timeoutMs });
  const setTag = (fullName: string, imageId: string) => setImageTag(store, fullName, imageId);

  async function load(req: FastifyRequest, reply: FastifyReply, query: { quiet: boolean; platform?: string[] }): Promise<void> {
    const platform = platformQuery(query.platform, apiVersion(req));
    await runJsonLines(reply, async (out) => {
      out.begin();
      const progress = query.quiet ? undefined : (msg: string) => out.write(progressLine(msg));
      const loaded = await archive.load(req.raw, out.signal, progress, platform);
      for (const li of loaded) {
        const shown = imageIdOf(await ensureImage(li, out.signal));
        if (li.repoTags.length === 0) {
          out.stream(`Loaded image ID: ${shown}\n`);
          imageEvent('load', shown, shown);
          continue;
        }
        for (const tag of li.repoTags) {
          const previous = setTag(tag, li.id);
          if (previous) out.stream(`The image ${familiarName(tag)} already exists, renaming the old one with ID ${shownImageId(store, previous)} to empty string\n`);
          out.stream(`Loaded image: ${familiarName(tag)}\n`);
        }
        imageEvent('load', shown, shown);
      }
    });
  }

  async function importRootfs(req: FastifyRequest, reply: FastifyReply, query: CreateQuery): Promise<void> {
    if (query.fromSrc !== '-') throw notImplemented('importing from a URL is not supported');
    const target = repoTagReference(query.repo ?? '', query.tag ?? '');
    await runJsonLines(
      reply,
      async (out) => {
        const opts = { changes: query.changes, message: query.message ?? '', platform: query.platform || undefined };
        const li = await archive.importRootfs(req.raw, opts, out.signal);
        const shown = imageIdOf(await ensureImage(li, out.signal));
        if (target) tagImage(target, li.id);
        imageEvent('import', shown, shown);
        out.status(shown);
      },
      { errorsBeforeStartAsHttp: true },
    );
  }

  async function save(reply: FastifyReply, names: string[], platform?: Platform): Promise<void> {
    const images = collectForSave(store, names, platform);
    const abort = new AbortController();
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    const body = archive.save(images, abort.signal);
    body.once('end', () => {
      for (const img of images) imageEvent('save', img.id, img.id);
    });
    reply.header('content-type', 'application/x-tar');
    await reply.send(body);
  }

  function inspect(req: FastifyRequest, name: string, manifests: boolean): Record<string, unknown> {
    const img = resolveImage(store, name);
    const version = apiVersion(req);
    const view = inspectView(store, img, { apiVersion: version, graphDriver: graphDriver(img) });
    // API 1.48: the image's target as a descriptor, and with manifests=1 its manifests (the feature only).
    if (version >= 1.48 && img.status.descriptor) view.Descriptor = img.status.descriptor;
    if (version >= 1.48 && manifests && img.status.target) view.Manifests = manifestSummaries(store, siblingsOf(store, img));
    return view;
  }

  function history(req: FastifyRequest, name: string, platforms: string[] | undefined): unknown[] {
    const platform = platformQuery(platforms, apiVersion(req));
    const img = resolveImage(store, name);
    return imageHistory(store, platform ? pickPlatform(store, img, name, platform) : img, deps.layers);
  }

  /** Point a tag at an image and record it, as the reference daemon's TagImage does. */
  function tagImage(fullName: string, imageId: string): void {
    setTag(fullName, imageId);
    imageEvent('tag', shownImageId(store, imageId), familiarName(fullName));
  }

  async function tag(reply: FastifyReply, name: string, query: z.output<typeof repoTagQuery>): Promise<void> {
    const target = repoTagReference(query.repo ?? '', query.tag ?? '');
    if (!target) throw invalidArgument('repository name must have at least one component');
    if (familiarRepository(target) === 'sha256') throw invalidArgument('refusing to create an ambiguous tag using digest algorithm as name');
    let img: ImageResource;
    try {
      img = resolveImage(store, name);
    } catch (err) {
      if (err instanceof EngineError && err.code === 'InvalidArgument') throw notFound(err.message);
      throw err;
    }
    tagImage(target, img.name);
    reply.code(201).send();
  }

  /** Untag events for what a delete did; the `delete` events follow from the records going away. */
  function deleteEvents(r: DeleteResult): void {
    for (const rec of r.records) if ('Untagged' in rec) imageEvent('untag', r.imageId, r.imageId);
  }

  async function removed(ids: string[]): Promise<void> {
    for (const id of ids) {
      await waitRemoved(store, Images, id, { timeoutMs });
      if (store.get(Images, id)) throw unavailable(`timed out waiting for image ${id} to be removed`);
    }
  }

  async function remove(name: string, opts: { force: boolean; noprune: boolean }): Promise<unknown[]> {
    const r = deleteImage(store, name, { force: opts.force, prune: !opts.noprune, layers: deps.layers });
    deleteEvents(r);
    await removed(r.removed);
    return r.records;
  }

  async function prune(req: FastifyRequest, filters: string | undefined): Promise<unknown> {
    requireApiVersion(req, '1.25');
    const sel = parseImagePruneFilters(filters ?? '');
    return onePrune(async () => {
      const r = pruneImages(store, sel, deps.layers);
      for (const d of r.deletes) deleteEvents(d);
      await removed(r.removed);
      deps.events?.image('prune', '', '', { reclaimed: String(r.reclaimed) });
      return { ImagesDeleted: r.records.length ? r.records : null, SpaceReclaimed: r.reclaimed };
    });
  }

  async function commit(req: FastifyRequest, reply: FastifyReply, query: CommitQuery): Promise<void> {
    if (!deps.commit) throw notImplemented('committing containers is not supported');
    const committer = deps.commit;
    // The reference is checked before anything happens to the container.
    const target = repoTagReference(query.repo ?? '', query.tag ?? '');
    const { container, pause, request } = parseCommit(store, req, query);
    const abort = new AbortController();
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    const run = () => committer.commit(request, abort.signal);
    const li = pause ? await withPaused(store, container, timeoutMs, run) : await run();
    const img = await ensureImage(li, abort.signal, container.spec.imageId);
    if (target) tagImage(target, img.name);
    const current = store.get(Containers, container.name) ?? container;
    deps.events?.container('commit', current, { comment: request.comment, imageID: imageIdOf(img), imageRef: target ? familiarName(target) : '' });
    reply.code(201).send({ Id: imageIdOf(img) });
  }

  return async function register(app: App): Promise<void> {
    const listQuery = z.looseObject({ all: q.bool(), filters: q.str(), digests: q.bool(), 'shared-size': q.bool(), manifests: q.bool() });
    app.get('/images/json', { schema: { querystring: listQuery } }, async (req) => {
      const version = apiVersion(req);
      return listImages(store, {
        all: req.query.all,
        filters: req.query.filters ?? '',
        digests: req.query.digests,
        sharedSize: version >= 1.42 && req.query['shared-size'],
        manifests: req.query.manifests,
        apiVersion: version,
        layers: deps.layers,
      });
    });

    app.post('/images/load', { schema: { querystring: z.looseObject({ quiet: q.bool(true), platform: q.list() }) } }, (req, reply) => load(req, reply, req.query));
    app.post('/images/prune', { schema: { querystring: filtersQuery } }, (req) => prune(req, req.query.filters));
    app.post('/commit', { schema: { querystring: commitQuery } }, (req, reply) => commit(req, reply, req.query));

    app.post('/images/create', { schema: { querystring: createQuery } }, async (req, reply) => {
      if (req.query.fromImage) {
        if (deps.pull) return deps.pull(req, reply);
        return pullNotImplemented(reply);
      }
      if (req.query.fromSrc === undefined) throw invalidArgument('fromImage or fromSrc is required');
      return importRootfs(req, reply, req.query);
    });

    app.get('/images/get', { schema: { querystring: z.looseObject({ names: q.list(), platform: q.list() }) } }, async (req, reply) => {
      await save(reply, req.query.names, platformQuery(req.query.platform, apiVersion(req)));
    });

    const imageGetQuery = z.looseObject({ manifests: q.bool(), platform: q.list() });
    app.get('/images/*', { schema: { params: restParams, querystring: imageGetQuery } }, async (req, reply) => {
      const split = splitImagePath(req.params['*'], ['json', 'history', 'get']);
      if (!split) throw pageNotFound();
      switch (split.action) {
        case 'json':
          return inspect(req, split.name, req.query.manifests);
        case 'history':
          return history(req, split.name, req.query.platform);
        default:
          return save(reply, [split.name], platformQuery(req.query.platform, apiVersion(req)));
      }
    });

    app.post('/images/*', { schema: { params: restParams, querystring: repoTagQuery } }, async (req, reply) => {
      const split = splitImagePath(req.params['*'], ['tag', 'push']);
      if (!split) throw pageNotFound();
      if (split.action === 'tag') return tag(reply, split.name, req.query);
      if (deps.push) return deps.push(req, reply, split.name);
      throw notImplemented('pushing images is not supported yet');
    });

    const deleteQuery = z.looseObject({ force: q.bool(), noprune: q.bool() });
    app.delete('/images/*', { schema: { params: restParams, querystring: deleteQuery } }, async (req) => remove(req.params['*'], req.query));
  };
}

function pageNotFound(): Error {
  return notFound('page not found');
}

/** Until the distribution area exists: the CLI shows the in-band error and fails the pull. */
async function pullNotImplemented(reply: FastifyReply): Promise<void> {
  await runJsonLines(reply, async () => {
    throw notImplemented('pulling images is not supported by this daemon yet');
  });
}

/** `repo`/`tag` query pair → full normalised `name:tag` (moby's RepoTagReference); undefined when repo is empty. */
export function repoTagReference(repo: string, tag: string): string | undefined {
  if (!repo) return undefined;
  const ref = parseReference(repo);
  if (ref.digest) throw invalidArgument('cannot import digest reference');
  if (tag) return formatReference(withTag(ref, tag));
  return formatReference({ ...ref, tag: ref.tag ?? 'latest' });
}

/** The images and tags `docker save` names select, the way the reference daemon picks them. */
export function collectForSave(store: ImageStore, names: string[], platform?: Platform): SaveImage[] {
  const byId = new Map<string, SaveImage>();
  const saved = (img: ImageResource): SavePlatform => ({ id: img.name, rawConfig: img.spec.rawConfig, diffIds: img.spec.diffIds, chainId: img.spec.chainId });
  const add = (found: ImageResource, tag: string | undefined, name: string) => {
    // API 1.48's platform picks one of a multi-platform image; without it the image is saved whole.
    const img = platform ? pickPlatform(store, found, name, platform) : found;
    let e = byId.get(img.name);
    if (!e) {
      const others = platform ? [] : siblingsOf(store, img).slice(1);
      e = { ...saved(img), repoTags: [], ...(others.length ? { platforms: others.map(saved) } : {}) };
      byId.set(img.name, e);
    }
    if (tag && !e.repoTags.includes(tag)) e.repoTags.push(tag);
  };
  for (const name of names) {
    const hex = name.startsWith('sha256:') ? name.slice(7) : name;
    if (/^[a-f0-9]+$/.test(hex) && (name.startsWith('sha256:') || hex.length === 64)) {
      add(resolveImage(store, name), undefined, name);
      continue;
    }
    const ref = parseReference(name);
    if (ref.tag === undefined && ref.digest === undefined) {
      // A bare repository name saves every tag of that repository.
      const repo = repositoryName(ref);
      const tags = store.list(References).filter((r) => {
        try {
          return repositoryName(parseReference(r.name)) === repo;
        } catch {
          return false;
        }
      });
      let any = false;
      for (const t of tags) {
        const img = findImage(store, t.spec.imageId);
        if (img) {
          add(img, t.name, name);
          any = true;
        }
      }
      if (!any) add(resolveImage(store, name), undefined, name);
      continue;
    }
    const img = resolveImage(store, name);
    add(img, ref.digest ? undefined : formatReference(ref), name);
  }
  return [...byId.values()];
}

/** Driver progress text → a JSON-lines message ("Loading layer 0123456789ab" is drawn per layer). */
function progressLine(msg: string): Parameters<JsonLinesWriter['write']>[0] {
  const m = /^(.*?)\s+([0-9a-f]{12})$/.exec(msg);
  if (m) return { status: m[1], progressDetail: {}, id: m[2] };
  return { stream: msg.endsWith('\n') ? msg : `${msg}\n` };
}
