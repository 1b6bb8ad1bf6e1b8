// POST /auth (check registry credentials) and GET /distribution/{name}/json (what a registry holds
// for a reference: its descriptor and platforms).
import * as z from 'zod';
import type { App } from '../app.ts';
import { invalidArgument, notFound } from '../../lib/errors.ts';
import { normalizeName } from '../../lib/reference.ts';
import { at, body, goBody, str, struct } from '../../lib/go-json.ts';
import { q, restParams } from '../request.ts';
import { invalidFilter, parseFilters } from '../filters.ts';
import { decodeRegistryAuth, type DistributionPort, type RegistryAuth, type SearchResult } from './port.ts';

export interface AuthRouteDeps {
  distribution: Pick<DistributionPort, 'checkAuth' | 'inspectDistribution' | 'search'>;
}

const SEARCH_KEYS: ReadonlySet<string> = new Set(['stars', 'is-official', 'is-automated']);

/** `filters` of GET /images/search: stars=N, is-official=bool, is-automated=bool. */
function searchFilters(raw: string | undefined): (r: SearchResult) => boolean {
  const f = parseFilters(raw, SEARCH_KEYS);
  const bool = (k: string): boolean | undefined => {
    const v = f.get(k)?.at(-1);
    if (v === undefined) return undefined;
    if (!['true', 'false', '1', '0'].includes(v)) throw invalidFilter(`${k}=${v}`);
    return v === 'true' || v === '1';
  };
  const starsText = f.get('stars')?.at(-1);
  const stars = starsText === undefined ? 0 : Number(starsText);
  if (!Number.isInteger(stars)) throw invalidFilter(`stars=${starsText}`);
  const official = bool('is-official');
  const automated = bool('is-automated');
  return (r) => r.star_count >= stars && (official === undefined || r.is_official === official) && (automated === undefined || r.is_automated === automated);
}

const AUTH_FIELDS = ['username', 'password', 'auth', 'email', 'serveraddress', 'identitytoken', 'registrytoken'] as const;
const ac = at('AuthConfig', '');
/** A types.AuthConfig as the reference's decoder reads it: the JSON names, in any case. */
const authSchema = struct(body('AuthConfig'), 'types.AuthConfig', Object.fromEntries(AUTH_FIELDS.map((k) => [k, str(ac(k))])) as Record<(typeof AUTH_FIELDS)[number], ReturnType<typeof str>>);

const authBody = goBody(authSchema);

/** The credentials given; empty ones are left out. */
function credentials(b: z.output<typeof authBody>): RegistryAuth {
  const out: RegistryAuth = {};
  for (const k of AUTH_FIELDS) {
    const v = b[k];
    if (v) out[k] = v;
  }
  return out;
}

export function authRoutes(deps: AuthRouteDeps) {
  return async function register(app: App): Promise<void> {
    app.post('/auth', { schema: { body: authBody } }, async (req) => {
      const auth = credentials(req.body);
      const res = await deps.distribution.checkAuth(auth.serveraddress ?? '', auth);
      return { IdentityToken: res.IdentityToken ?? '', Status: res.Status };
    });

    // limit: strconv.Atoi (a bad one refused in Go's words), absent or empty 25, then the range check.
    const searchQuery = z.looseObject({ term: q.str(), limit: q.atoi(), filters: q.str() });
    app.get('/images/search', { schema: { querystring: searchQuery } }, async (req) => {
      const term = req.query.term ?? '';
      if (!term) throw invalidArgument('term is required');
      const limit = req.query.limit ?? 25;
      if (limit < 1 || limit > 100) throw invalidArgument(`Limit ${limit} is outside the range of [1, 100]`);
      const keep = searchFilters(req.query.filters);
      const results = await deps.distribution.search(term, limit, decodeRegistryAuth(req.headers['x-registry-auth']));
      return results.filter(keep);
    });

    app.get('/distribution/*', { schema: { params: restParams } }, async (req) => {
      const path = req.params['*'];
      if (!path.endsWith('/json')) throw notFound(`page not found`);
      const name = decodeURIComponent(path.slice(0, -'/json'.length));
      const ref = normalizeName(name);
      return deps.distribution.inspectDistribution(ref, decodeRegistryAuth(req.headers['x-registry-auth']));
    });
  };
}
