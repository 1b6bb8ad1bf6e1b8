// FROM (and COPY --from) of an image that is not here: pulled through the same pull records as
// `docker pull`, with the credentials the client sent for that registry in X-Registry-Config — or,
// for a build of a BuildKit session (`session=`, POST /session), the ones the session's client
// answers to moby.filesync.v1.Auth/Credentials for the registry's host — the progress lines inside
// the build's stream.
import type { FastifyRequest } from 'fastify';
import type { BuildBackend, BuildImage } from '../../lib/ports/build.ts';
import { notFound } from '../../lib/errors.ts';
import { familiarName, formatReference, parseReference, withTag } from '../../lib/reference.ts';
import { authConfigOf, type RegistryAuth } from '../distribution/port.ts';
import type { Puller } from '../distribution/pull-handler.ts';
import type { ImageStore } from '../images/store.ts';
import { asBuildImage } from './backend.ts';
import { findImage } from '../images/resolve.ts';

/** X-Registry-Config: base64url JSON of registry address -> AuthConfig; garbage means none. */
export function registryConfigs(req: FastifyRequest): Map<string, RegistryAuth> {
  const out = new Map<string, RegistryAuth>();
  const h = req.headers['x-registry-config'];
  const raw = Array.isArray(h) ? h[0] : h;
  if (!raw) return out;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64').toString('utf8'));
  } catch {
    return out;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return out;
  for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
    const auth = authConfigOf(value);
    if (auth) out.set(registryHost(key), auth);
  }
  return out;
}

/** `https://index.docker.io/v1/` -> docker.io; `http://127.0.0.1:5000/x` -> 127.0.0.1:5000. */
function registryHost(address: string): string {
  const host = address.replace(/^[a-z]+:\/\//i, '').split('/')[0] ?? '';
  return host === 'index.docker.io' || host === 'registry-1.docker.io' ? 'docker.io' : host;
}

/** A BuildKit session's credentials service (drivers/session/manager.ts). */
export interface SessionCredentials {
  credentials(host: string): Promise<{ username: string; secret: string } | undefined>;
}

/**
 * What a session's client answers for a registry host, as BuildKit reads it: a user and a secret
 * (a password), a secret alone (an identity token), nothing (anonymous). Docker Hub is asked for
 * by its registry's host, as BuildKit asks.
 */
async function sessionAuth(session: SessionCredentials, domain: string): Promise<RegistryAuth | undefined> {
  const c = await session.credentials(domain === 'docker.io' ? 'registry-1.docker.io' : domain);
  if (!c || (!c.username && !c.secret)) return undefined;
  return c.username ? { username: c.username, password: c.secret, serveraddress: domain } : { identitytoken: c.secret, serveraddress: domain };
}

export function buildPull(puller: Puller, store: ImageStore, req: FastifyRequest, session?: SessionCredentials): BuildBackend['pullImage'] {
  const configs = registryConfigs(req);
  return async (refText, platform, out, signal): Promise<BuildImage> => {
    const parsed = parseReference(refText);
    const ref = parsed.tag === undefined && parsed.digest === undefined ? withTag(parsed, 'latest') : parsed;
    const reference = formatReference(ref);
    const auth = configs.get(ref.domain) ?? (session ? await sessionAuth(session, ref.domain) : undefined);
    const changed = await puller.pullOne(ref, platform, auth, { write: (m) => out.progress(m as Record<string, unknown>), signal });
    out.progress({ status: `Status: ${changed ? 'Downloaded newer image for' : 'Image is up to date for'} ${familiarName(reference)}` });
    const img = findImage(store, reference);
    if (!img) throw notFound(`No such image: ${familiarName(reference)}`);
    return asBuildImage(img);
  };
}
