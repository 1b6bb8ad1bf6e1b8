// POST /images/create?fromImage=&tag=&platform=: pull from a registry, streaming the CLI's
// progress lines; the image record is written only once the pull is verified (its layers held
// until then), and the tag moves only after the image reconciler reports the image ready.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { EngineError, internal, invalidArgument, isCode } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { familiarName, formatReference, isDigest, parseReference, repositoryName, withTag, type Reference } from '../../lib/reference.ts';
import type { ImageSpec, ImageStatus, ReferenceSpec, ReferenceStatus } from '../../store/types.ts';
import { KIND } from '../../store/types.ts';
import { runJsonLines } from '../streams.ts';
import { decodeRegistryAuth, type DistributionPort, type DistributionStore, type PulledImage } from './port.ts';

export interface PullDeps {
  distribution: DistributionPort;
  store: DistributionStore;
  /** How long to wait for the image reconciler (default 120 s). */
  waitTimeoutMs?: number;
  /** An image event (pull: actor the familiar reference, name its repository). */
  onEvent?: (action: string, id: string, name: string) => void;
}

type Req = FastifyRequest<{ Querystring: Record<string, string | string[] | undefined> }>;

function q(req: Req, key: string): string | undefined {
  const v = (req.query ?? {})[key];
  return Array.isArray(v) ? v[v.length - 1] : v;
}

/** fromImage + tag as the reference daemon combines them; a tag that is a digest pins the digest. */
export function pullReference(fromImage: string, tag: string | undefined): Reference {
  const ref = parseReference(fromImage);
  if (!tag) return ref;
  if (isDigest(tag)) return { domain: ref.domain, path: ref.path, digest: tag };
  return withTag(ref, tag);
}

export function pullHandler(deps: PullDeps): (req: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const { distribution, store } = deps;
  const timeoutMs = deps.waitTimeoutMs ?? 120_000;

  /** Write or update the image and its reference; true when something the user sees changed. */
  async function record(pulled: PulledImage, ref: Reference, signal: AbortSignal): Promise<boolean> {
    let changed = false;
    let img = store.get<ImageSpec, ImageStatus>(KIND.image, pulled.id);
    if (img && img.spec.desired === 'removed') {
      await store.waitFor<ImageSpec, ImageStatus>(KIND.image, pulled.id, (r) => !r, { timeoutMs, signal });
      img = undefined;
    }
    if (!img) {
      const spec: ImageSpec = {
        id: pulled.id, rawConfig: pulled.rawConfig, diffIds: pulled.diffIds, chainId: pulled.chainId, size: pulled.size,
        repoDigests: [pulled.repoDigest], parent: '', loadedAt: rfc3339Nano(), desired: 'present',
      };
      try {
        store.create<ImageSpec, ImageStatus>(KIND.image, pulled.id, spec, { observedGeneration: 0, phase: 'pending', error: '' });
        changed = true;
      } catch (err) {
        if (!isCode(err, 'AlreadyExists')) throw err;
      }
    }
    const current = store.get<ImageSpec, ImageStatus>(KIND.image, pulled.id);
    if (current && !current.spec.repoDigests.includes(pulled.repoDigest)) {
      store.updateSpec<ImageSpec, ImageStatus>(KIND.image, pulled.id, (s) => ({ ...s, repoDigests: s.repoDigests.includes(pulled.repoDigest) ? s.repoDigests : [...s.repoDigests, pulled.repoDigest] }));
      if (ref.digest) changed = true;
    }
    const ready = await store.waitFor<ImageSpec, ImageStatus>(KIND.image, pulled.id, (r) => !r || r.status.phase === 'ready' || r.status.phase === 'failed', { timeoutMs, signal });
    if (!ready) throw internal(`image ${pulled.id} disappeared while it was being registered`);
    if (ready.status.phase === 'failed') throw internal(ready.status.error || `image ${pulled.id} could not be registered`);
    if (ref.tag !== undefined) {
      const name = formatReference({ domain: ref.domain, path: ref.path, tag: ref.tag });
      const existing = store.get<ReferenceSpec, ReferenceStatus>(KIND.reference, name);
      if (!existing) {
        try {
          store.create<ReferenceSpec, ReferenceStatus>(KIND.reference, name, { imageId: pulled.id }, {});
        } catch (err) {
          if (!isCode(err, 'AlreadyExists')) throw err;
          store.updateSpec<ReferenceSpec, ReferenceStatus>(KIND.reference, name, () => ({ imageId: pulled.id }));
        }
        changed = true;
      } else if (existing.spec.imageId !== pulled.id) {
        store.updateSpec<ReferenceSpec, ReferenceStatus>(KIND.reference, name, () => ({ imageId: pulled.id }));
        changed = true;
      }
    }
    return changed;
  }

  return async (request, reply) => {
    const req = request as Req;
    const fromImage = q(req, 'fromImage');
    if (!fromImage) throw invalidArgument('fromImage or fromSrc is required');
    const ref = pullReference(fromImage, q(req, 'tag'));
    const platform = q(req, 'platform') || undefined;
    if (platform !== undefined && !/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+){0,2}$/.test(platform)) {
      throw invalidArgument(`"${platform}": unknown operating system or architecture: invalid argument`);
    }
    const auth = decodeRegistryAuth(req.headers['x-registry-auth']);
    await runJsonLines(reply, async (out) => {
      const all = ref.tag === undefined && ref.digest === undefined;
      const refs = all
        ? (await distribution.listTags(repositoryName(ref), auth, out.signal)).map((t) => ({ ...ref, tag: t }))
        : [ref];
      let anyChanged = false;
      for (const r of refs) {
        // The layers stay held until the image record names them: an image removal running
        // meanwhile must not take a layer this pull found already there.
        const pulled = await distribution.pull(formatReference(r), { auth, platform, holdLayers: true, signal: out.signal, onProgress: (m) => out.write(m) });
        let changed: boolean;
        try {
          changed = await record(pulled, r, out.signal);
        } finally {
          pulled.release?.();
        }
        anyChanged ||= changed;
        deps.onEvent?.('pull', familiarName(formatReference(r)), familiarName(repositoryName(r)));
        if (!all) out.status(`Status: ${changed ? 'Downloaded newer image for' : 'Image is up to date for'} ${familiarName(formatReference(r))}`);
      }
      if (all) {
        if (!refs.length) throw new EngineError('NotFound', `repository ${familiarName(repositoryName(ref))} not found: does not exist or no pull access`);
        out.status(`Status: ${anyChanged ? 'Downloaded newer image for' : 'Image is up to date for'} ${familiarName(repositoryName(ref))}`);
      }
    }, { errorsBeforeStartAsHttp: true });
  };
}
