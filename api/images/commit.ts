// POST /commit: a new image from a container's read-write layer on top of the container's image.
// The layer work and the image config are the driver's (ImageCommitPort, filled by cmd); this
// module validates the request, pauses a running container around the commit, and records the
// image, its tag and the container's `commit` event.
import type { FastifyRequest } from 'fastify';
import * as z from 'zod';
import { conflict, invalidArgument } from '../../lib/errors.ts';
import { type ContainerSpec, Containers, type ContainerResource as CR, findContainer } from '../../store/kinds/container.ts';

import type { CommitRequest } from '../../lib/ports/images.ts';
import { parseCreateBody } from '../../admission/containers/create-schema.ts';
import { boolValue, first, q } from '../request.ts';
import { noSuchImage } from './resolve.ts';
import type { ImageStore } from './store.ts';
import { Images } from '../../store/kinds/image.ts';
import { settle } from '../write-and-wait.ts';

export type { CommitRequest, ImageCommitPort } from '../../lib/ports/images.ts';


/**
 * POST /commit's query. `pause` is BoolValue except that absent or empty is true (the
 * reference's `FormValue("pause") == ""` check, every API version this daemon serves).
 */
export const commitQuery = z.looseObject({
  container: q.str(),
  repo: q.str(),
  tag: q.str(),
  author: q.str(),
  comment: q.str(),
  changes: q.list(),
  pause: z.preprocess((v) => {
    const s = first(v);
    return s === undefined || s === '' ? true : boolValue(s);
  }, z.boolean()),
});
export type CommitQuery = z.output<typeof commitQuery>;

export interface ParsedCommit {
  container: CR;
  pause: boolean;
  request: CommitRequest;
}

/** Keys of the create-request wrapper that are not part of Config. */
const NOT_CONFIG = new Set(['hostconfig', 'networkingconfig']);

/** The body is a container Config (the create wrapper's embedded part); `{}` and null mean none. */
function bodyConfig(req: FastifyRequest): Record<string, unknown> | null {
  const body = req.body;
  if (body === undefined || body === null) {
    const ct = req.headers['content-type'];
    const len = Number(req.headers['content-length'] ?? 0);
    if (ct && len > 0 && !/^application\/json\b/i.test(ct)) {
      throw invalidArgument(`unsupported Content-Type header (${ct}): must be 'application/json'`);
    }
    return null;
  }
  // The reference decodes it as a create body (ContainerConfigWrapper): the same types, the same messages.
  parseCreateBody(body);
  const entries = Object.entries(body as Record<string, unknown>).filter(([k]) => !NOT_CONFIG.has(k.toLowerCase()));
  return entries.length ? Object.fromEntries(entries) : null;
}

/** Read and check the request the way the reference daemon does before touching anything. */
export function parseCommit(store: ImageStore, req: FastifyRequest, query: CommitQuery): ParsedCommit {
  const config = bodyConfig(req);
  const c = findContainer(store, query.container ?? '');
  if (c.status.phase === 'dead') throw conflict(`You cannot commit container ${c.name} which is Dead`);
  if (c.spec.desired === 'removed' || c.status.phase === 'removing') throw conflict(`You cannot commit container ${c.name} which is being removed`);
  const img = c.spec.imageId ? store.get(Images, c.spec.imageId) : undefined;
  if (c.spec.imageId && !img) throw noSuchImage(c.spec.imageId);
  return {
    container: c,
    pause: query.pause,
    request: {
      containerId: c.name,
      parent: img ? { rawConfig: img.spec.rawConfig, diffIds: img.spec.diffIds, chainId: img.spec.chainId, size: img.spec.size } : null,
      config,
      containerConfig: c.spec.config as Record<string, unknown>,
      changes: query.changes,
      author: query.author ?? '',
      comment: query.comment ?? '',
    },
  };
}

/**
 * Run `fn` with the container paused when it is running; afterwards it goes back to where it was
 * asked to be (unless someone changed that meanwhile).
 */
export async function withPaused<T>(store: ImageStore, c: CR, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  if (c.status.phase !== 'running') return fn();
  const before = c.spec.desired;
  const setDesired = async (from: ContainerSpec['desired'], to: ContainerSpec['desired']) => {
    let gen = 0;
    try {
      gen = store.updateSpec(Containers, c.name, (s) => (s.desired === from ? { ...s, desired: to } : s)).generation;
    } catch {
      return; // gone meanwhile
    }
    await settle(store, Containers, c.name, (r) => !r || r.status.observedGeneration >= gen, { timeoutMs });
  };
  await setDesired(before, 'paused');
  try {
    return await fn();
  } finally {
    await setDesired('paused', before);
  }
}
