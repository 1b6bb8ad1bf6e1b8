// POST /images/{name}/push?tag=: push one tag, or every tag of the repository when none is given,
// streaming the CLI's progress lines; the pushed digest is recorded in the image's repoDigests.
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { notFound } from '../../lib/errors.ts';
import { familiarName, familiarRepository, formatReference, parseReference, repositoryName, withTag, type Reference } from '../../lib/reference.ts';

import { parseQuery, q } from '../request.ts';
import { runJsonLines } from '../streams.ts';
import { decodeRegistryAuth, type DistributionPort, type DistributionStore } from './port.ts';
import { References } from '../../store/kinds/reference.ts';
import { Images } from '../../store/kinds/image.ts';

export interface PushDeps {
  distribution: DistributionPort;
  store: DistributionStore;
  /** An image event (push: actor the familiar reference, name its repository). */
  onEvent?: (action: string, id: string, name: string) => void;
}

/** The push's path (`/images/{name}/push` as `:name` or the `*` rest) and query. */
const pushParams = z.looseObject({ name: z.string().optional(), '*': z.string().optional() });
export const pushQuery = z.looseObject({ tag: q.str() });

/** The image name from the route: `:name` when the router captured it, else the wildcard minus `/push`. */
function nameParam(params: unknown): string {
  const p = parseQuery(pushParams, params);
  if (p.name) return decodeURIComponent(p.name);
  return decodeURIComponent((p['*'] ?? '').replace(/\/push$/, ''));
}

export function pushHandler(deps: PushDeps): (req: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const { distribution, store } = deps;
  return async (req, reply) => {
    // Also registered alone (tests) and reached from the images routes: path and query are read here.
    const { tag } = parseQuery(pushQuery, req.query);
    let ref: Reference = parseReference(nameParam(req.params));
    if (tag) ref = withTag(ref, tag);
    const repo = repositoryName(ref);
    const targets = ref.tag !== undefined
      ? [formatReference({ domain: ref.domain, path: ref.path, tag: ref.tag })]
      : store.list(References).map((r) => r.name).filter((n) => n.startsWith(`${repo}:`)).sort();
    const images = targets.map((name) => {
      const r = store.get(References, name);
      const img = r && store.get(Images, r.spec.imageId);
      return img && img.spec.desired === 'present' && img.status.phase === 'ready' ? { name, img } : undefined;
    });
    if (!images.length || images.some((i) => !i)) {
      throw notFound(`An image does not exist locally with the tag: ${familiarRepository(repo)}`);
    }
    const auth = decodeRegistryAuth(req.headers['x-registry-auth']);
    await runJsonLines(reply, async (out) => {
      for (const t of images) {
        const { name, img } = t!;
        const res = await distribution.push(name, { rawConfig: img.spec.rawConfig, diffIds: img.spec.diffIds, chainId: img.spec.chainId }, {
          auth, signal: out.signal, onProgress: (m) => out.write(m),
        });
        deps.onEvent?.('push', familiarName(name), familiarRepository(repo));
        const repoDigest = `${repo}@${res.digest}`;
        if (!store.get(Images, img.name)?.spec.repoDigests.includes(repoDigest)) {
          store.updateSpec(Images, img.name, (s) => ({ ...s, repoDigests: s.repoDigests.includes(repoDigest) ? s.repoDigests : [...s.repoDigests, repoDigest] }));
        }
      }
    }, { errorsBeforeStartAsHttp: true });
  };
}
