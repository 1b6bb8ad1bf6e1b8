// POST /build (the classic builder), POST /build/prune and /build/cancel. The query is checked
// before any output (a 400 then); from there on progress, the image ID and any failure travel
// in the JSON-lines stream, as the reference writes them: `stream` lines, `aux` with the ID, and
// an errorDetail carrying a failed RUN's exit code (the CLI exits with it).
import { shortId } from '../../lib/ids.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import type { App } from '../app.ts';
import type { BuildBackend, BuilderPort, BuildOutput } from '../../lib/ports/build.ts';
import { invalidArgument } from '../../lib/errors.ts';
import { familiarName } from '../../lib/reference.ts';
import { toHttpError } from '../errors.ts';
import { setImageTag } from '../images/records.ts';
import { apiVersion, first, q, strconvError } from '../request.ts';
import type { ImageStore } from '../images/store.ts';
import { jsonLines, type JsonMessage } from '../streams.ts';
import { buildkitProgress } from './buildkit-progress.ts';
import { buildQuery, parseBuildRequest, type BuildQuery } from './options.ts';
import { shownImageId } from '../images/resolve.ts';

export interface BuildRouteDeps<S extends BuildSessionLike = BuildSessionLike> {
  store: ImageStore;
  builder: BuilderPort;
  /** The backend for one build (its own pulls carry the request's credentials). */
  backend: (req: FastifyRequest, session: S | undefined) => BuildBackend;
  experimental: boolean;
  events?: { image(action: string, id: string, name: string): void };
  /** Hears of each build and of its failure (the builder's metrics, when served). */
  counted?: { buildTriggered(): void; buildFailed(err: unknown, canceled: boolean): void };
  /** The open BuildKit sessions (POST /session): a build's `session=` one ends, the build is canceled. */
  sessions?: { get(id: string): S | undefined };
}

/** keep-storage of POST /build/prune: strconv.Atoi, its error wrapped in the reference's words (a 400 here). */
const keepStorage = z.preprocess(first, z.string().optional()).transform((v, ctx): number | undefined => {
  if (v === undefined || v === '') return undefined;
  if (/^[+-]?\d+$/.test(v)) return Number(v);
  ctx.addIssue({ code: 'custom', message: `keep-storage is in bytes and expects an integer, got ${v}: ${strconvError('Atoi', v)}`, input: v });
  return z.NEVER;
});

/** What a build needs of its BuildKit session here: it ends when the session does. */
export interface BuildSessionLike {
  readonly signal: AbortSignal;
}

export function buildRoutes<S extends BuildSessionLike>(deps: BuildRouteDeps<S>) {
  async function build(req: FastifyRequest, reply: FastifyReply, query: BuildQuery): Promise<void> {
    const { options, tags, quiet, buildkit } = parseBuildRequest(query, apiVersion(req), deps.experimental);
    const w = jsonLines(reply);
    const held: JsonMessage[] = [];
    // Quiet builds keep their output back: it is shown only when the build fails.
    const write = (m: JsonMessage) => (quiet ? held.push(m) : w.write(m));
    // version=2: the same builder, its progress told as BuildKit's trace messages.
    const bk = buildkit ? buildkitProgress(write) : undefined;
    // Image ids as clients see them (the target digest with the supervisor's snapshotter).
    const shown = (id: string) => shownImageId(deps.store, id);
    const out: BuildOutput = bk?.out ?? {
      stream: (text) => write({ stream: text }),
      aux: (value) => {
        const id = (value as { ID?: unknown }).ID;
        write({ aux: typeof id === 'string' ? { ...(value as object), ID: shown(id) } : value });
      },
      progress: (line) => write(line as JsonMessage),
    };
    deps.counted?.buildTriggered();
    // The client gone, or the session it named closed (BuildKit cancels a build whose session ends).
    const session = query.session ? deps.sessions?.get(query.session) : undefined;
    const signal = session ? AbortSignal.any([w.signal, session.signal]) : w.signal;
    try {
      const id = await deps.builder.build(req.raw, options, deps.backend(req, session), out, signal);
      if (!bk) out.stream(`Successfully built ${shortId(shown(id))}\n`);
      for (const tag of tags) {
        setImageTag(deps.store, tag, id);
        deps.events?.image('tag', shown(id), familiarName(tag));
        if (!bk) out.stream(`Successfully tagged ${familiarName(tag)}\n`);
      }
      bk?.done(shown(id));
      if (quiet) w.write({ stream: `${shown(id)}\n` });
    } catch (err) {
      deps.counted?.buildFailed(err, w.closed);
      if (w.closed) return;
      const { status, message } = toHttpError(err);
      bk?.failed(message);
      if (quiet) for (const m of held) w.write(m);
      if (status >= 500) req.log.error({ err }, 'build failed');
      const code = (err as { exitCode?: unknown }).exitCode;
      w.write({ errorDetail: { ...(typeof code === 'number' ? { code } : {}), message }, error: message });
    } finally {
      w.end();
    }
  }

  return async function register(app: App): Promise<void> {
    // The context tar is the body, streamed from req.raw: no body schema.
    app.post('/build', { schema: { querystring: buildQuery } }, (req, reply) => build(req, reply, req.query));
    // Only the classic builder: it keeps no cache besides images, so there is nothing to prune.
    app.post('/build/prune', { schema: { querystring: z.looseObject({ 'keep-storage': keepStorage }) } }, async () => {
      return { CachesDeleted: null, SpaceReclaimed: 0 };
    });
    app.post('/build/cancel', { schema: { querystring: z.looseObject({ id: q.str() }) } }, async (req, reply) => {
      if (!req.query.id) throw invalidArgument('build ID not provided');
      reply.code(200).send();
    });
  };
}
