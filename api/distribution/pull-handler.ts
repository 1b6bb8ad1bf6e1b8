// POST /images/create?fromImage=&tag=&platform=: a pull record (desired state) per reference,
// converged by the pull reconciler; this route writes it and streams the CLI's progress lines
// from the reconciler's reports until the record says done or failed.
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { EngineError, errorCode, invalidArgument } from '../../lib/errors.ts';
import { familiarName, formatReference, isDigest, parseReference, repositoryName, withTag, type Reference } from '../../lib/reference.ts';
import { askPull, pullName, Pulls } from '../../store/kinds/pull.ts';
import { parseQuery, q } from '../request.ts';
import { runJsonLines, type JsonMessage } from '../streams.ts';
import { decodeRegistryAuth, type DistributionPort, type DistributionStore, type PullJobsPort, type RegistryAuth } from './port.ts';
import { settle, waitRemoved } from '../write-and-wait.ts';

export interface PullDeps {
  distribution: Pick<DistributionPort, 'listTags'>;
  store: DistributionStore;
  /** The pull reconciler's progress lines and credentials (cmd wires it). */
  jobs: PullJobsPort;
  /** An image event (pull: actor the familiar reference, name its repository). */
  onEvent?: (action: string, id: string, name: string) => void;
  /** Shared with the builder's FROM pulls, so waiters are counted together. */
  puller?: Puller;
}

/** The pull's keys of POST /images/create (each the first value, as Go's Form.Get). */
export const pullQuery = z.looseObject({ fromImage: q.str(), tag: q.str(), platform: q.str() });

/** fromImage + tag as the reference daemon combines them; a tag that is a digest pins the digest. */
export function pullReference(fromImage: string, tag: string | undefined): Reference {
  const ref = parseReference(fromImage);
  if (!tag) return ref;
  if (isDigest(tag)) return { domain: ref.domain, path: ref.path, digest: tag };
  return withTag(ref, tag);
}

/** Where one pull's progress goes, and the signal of whoever waits for it. */
export interface PullOutput {
  write(msg: JsonMessage): void;
  signal: AbortSignal;
}

/**
 * One reference pulled as desired state: writes (or asks again for) the pull record, passes the
 * reconciler's progress lines on, and answers whether anything new arrived. A waiter that goes
 * away cancels the pull unless another one waits on it too; a daemon that dies leaves it wanted,
 * and the next start runs it.
 */
export interface Puller {
  pullOne(ref: Reference, platform: string, auth: RegistryAuth | undefined, out: PullOutput): Promise<boolean>;
}

export function createPuller(deps: Pick<PullDeps, 'store' | 'jobs'>): Puller {
  const { store, jobs } = deps;
  /** Requests waiting per pull record, so the last one to go away cancels it. */
  const waiting = new Map<string, number>();

  /** Writes the wish; answers the generation whose outcome answers this request. */
  async function ask(name: string, reference: string, platform: string, signal: AbortSignal): Promise<number> {
    const cur = store.get(Pulls, name);
    if (cur?.spec.desired === 'removed') await waitRemoved(store, Pulls, name, { signal });
    return askPull(store, reference, platform);
  }

  async function pullOne(ref: Reference, platform: string, auth: RegistryAuth | undefined, out: PullOutput): Promise<boolean> {
    const reference = formatReference(ref);
    const name = pullName(reference, platform);
    jobs.setCredentials(name, auth);
    const unwatch = jobs.watch(name, (m) => out.write(m));
    waiting.set(name, (waiting.get(name) ?? 0) + 1);
    try {
      const gen = await ask(name, reference, platform, out.signal);
      const r = await settle(
        store,
        Pulls,
        name,
        (x) => !x || (x.status.observedGeneration >= gen && (x.status.phase === 'done' || x.status.phase === 'failed')),
        { signal: out.signal },
      );
      if (!r) throw new EngineError('Canceled', `pull of ${familiarName(reference)} was canceled`);
      if (r.status.phase === 'failed') throw new EngineError(errorCode({ code: r.status.errorCode }), r.status.error);
      return r.status.changed;
    } catch (err) {
      const last = (waiting.get(name) ?? 0) <= 1;
      if (out.signal.aborted && last && store.get(Pulls, name)) {
        store.updateSpec(Pulls, name, (s) => ({ ...s, desired: 'removed' }));
      }
      throw err;
    } finally {
      unwatch();
      const n = (waiting.get(name) ?? 1) - 1;
      if (n > 0) waiting.set(name, n);
      else waiting.delete(name);
    }
  }

  return { pullOne };
}

/** POST /images/create?fromImage=: the pull of one tag, or of every tag of a repository. */
export function pullHandler(deps: PullDeps): (req: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const { distribution } = deps;
  const { pullOne } = deps.puller ?? createPuller(deps);
  return async (req, reply) => {
    // Also registered alone (tests) and reached from the images routes: the query is read here.
    const query = parseQuery(pullQuery, req.query);
    const fromImage = query.fromImage;
    if (!fromImage) throw invalidArgument('fromImage or fromSrc is required');
    const ref = pullReference(fromImage, query.tag);
    const platform = query.platform || '';
    if (platform && !/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+){0,2}$/.test(platform)) {
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
        const changed = await pullOne(r, platform, auth, out);
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
