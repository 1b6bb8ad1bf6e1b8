// POST /auth (check registry credentials) and GET /distribution/{name}/json (what a registry holds
// for a reference: its descriptor and platforms).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalidArgument, notFound } from '../../lib/errors.ts';
import { normalizeName } from '../../lib/reference.ts';
import { decodeRegistryAuth, type DistributionPort, type RegistryAuth } from './port.ts';

export interface AuthRouteDeps {
  distribution: Pick<DistributionPort, 'checkAuth' | 'inspectDistribution'>;
}

function authBody(body: unknown): RegistryAuth {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw invalidArgument('invalid auth configuration');
  const out: RegistryAuth = {};
  for (const k of ['username', 'password', 'auth', 'email', 'serveraddress', 'identitytoken', 'registrytoken'] as const) {
    const v = (body as Record<string, unknown>)[k];
    if (v !== undefined && v !== null && typeof v !== 'string') throw invalidArgument(`invalid auth configuration: ${k} must be a string`);
    if (v) out[k] = v;
  }
  return out;
}

export function authRoutes(deps: AuthRouteDeps) {
  return async function register(app: FastifyInstance): Promise<void> {
    app.post('/auth', async (req) => {
      const auth = authBody(req.body);
      const res = await deps.distribution.checkAuth(auth.serveraddress ?? '', auth);
      return { IdentityToken: res.IdentityToken ?? '', Status: res.Status };
    });

    app.get('/distribution/*', async (req: FastifyRequest<{ Params: Record<string, string> }>) => {
      const path = req.params['*'] ?? '';
      if (!path.endsWith('/json')) throw notFound(`page not found`);
      const name = decodeURIComponent(path.slice(0, -'/json'.length));
      const ref = normalizeName(name);
      return deps.distribution.inspectDistribution(ref, decodeRegistryAuth(req.headers['x-registry-auth']));
    });
  };
}
