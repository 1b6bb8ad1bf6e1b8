// POST /auth (check registry credentials) and GET /distribution/{name}/json (what a registry holds
// for a reference: its descriptor and platforms).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalidArgument, notFound } from '../../lib/errors.ts';
import { normalizeName } from '../../lib/reference.ts';
import { at, body, parseWith, str, struct } from '../go-json.ts';
import { decodeRegistryAuth, type DistributionPort, type RegistryAuth, type SearchResult } from './port.ts';

export interface AuthRouteDeps {
  distribution: Pick<DistributionPort, 'checkAuth' | 'inspectDistribution' | 'search'>;
}

/** `filters` of GET /images/search: stars=N, is-official=bool, is-automated=bool. */
function searchFilters(raw: string | undefined): (r: SearchResult) => boolean {
  if (!raw) return () => true;
  let f: Record<string, unknown>;
  try {
    f = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    throw invalidArgument('invalid filter: filters must be JSON');
  }
  const vals = (k: string): string[] => {
    const v = f[k];
    if (v === undefined) return [];
    if (Array.isArray(v)) return v.map(String);
    if (v && typeof v === 'object') return Object.keys(v);
    throw invalidArgument(`invalid filter '${k}'`);
  };
  for (const k of Object.keys(f)) if (!['stars', 'is-official', 'is-automated'].includes(k)) throw invalidArgument(`invalid filter '${k}'`);
  const bool = (k: string): boolean | undefined => {
    const v = vals(k).at(-1);
    if (v === undefined) return undefined;
    if (!['true', 'false', '1', '0'].includes(v)) throw invalidArgument(`invalid filter '${k}=${v}'`);
    return v === 'true' || v === '1';
  };
  const starsText = vals('stars').at(-1);
  const stars = starsText === undefined ? 0 : Number(starsText);
  if (!Number.isInteger(stars)) throw invalidArgument(`invalid filter 'stars=${starsText}'`);
  const official = bool('is-official');
  const automated = bool('is-automated');
  return (r) => r.star_count >= stars && (official === undefined || r.is_official === official) && (automated === undefined || r.is_automated === automated);
}

const AUTH_FIELDS = ['username', 'password', 'auth', 'email', 'serveraddress', 'identitytoken', 'registrytoken'] as const;
const ac = at('AuthConfig', '');
/** A types.AuthConfig as the reference's decoder reads it: the JSON names, in any case. */
const authSchema = struct(body('AuthConfig'), 'types.AuthConfig', Object.fromEntries(AUTH_FIELDS.map((k) => [k, str(ac(k))])) as Record<(typeof AUTH_FIELDS)[number], ReturnType<typeof str>>);

/** The credentials given; empty ones are left out. */
function authBody(input: unknown): RegistryAuth {
  const b = parseWith(authSchema, input);
  const out: RegistryAuth = {};
  for (const k of AUTH_FIELDS) {
    const v = b[k];
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

    app.get('/images/search', async (req: FastifyRequest<{ Querystring: Record<string, string | undefined> }>) => {
      const term = req.query.term ?? '';
      if (!term) throw invalidArgument('term is required');
      const limitText = req.query.limit;
      const limit = limitText === undefined || limitText === '' ? 25 : Number(limitText);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalidArgument('limit must be between 1 and 100');
      const keep = searchFilters(req.query.filters);
      const results = await deps.distribution.search(term, limit, decodeRegistryAuth(req.headers['x-registry-auth']));
      return results.filter(keep);
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
