// The distribution routes through app.inject() on the real store, with a fake registry port:
// /auth's body schema, /images/search's term and limit (strconv.Atoi, then the range), the
// pull's query read by its handler behind /images/create, and /distribution/{name}/json.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { authRoutes } from '../../../api/distribution/auth-routes.ts';
import type { RegistryAuth, SearchResult } from '../../../api/distribution/port.ts';
import { pullHandler } from '../../../api/distribution/pull-handler.ts';
import { imageRoutes } from '../../../api/images/routes.ts';
import type { ImageArchivePort } from '../../../api/ports.ts';
import { routeHarness, type RouteHarness } from './route-harness.ts';

let h: RouteHarness;
const searches: Array<[string, number]> = [];
const inspected: string[] = [];
const logins: RegistryAuth[] = [];

const results: SearchResult[] = [
  { name: 'a', description: '', star_count: 5, is_official: true, is_automated: false },
  { name: 'b', description: '', star_count: 1, is_official: false, is_automated: false },
];

before(async () => {
  const distribution = {
    checkAuth: async (_server: string, auth: RegistryAuth) => {
      logins.push(auth);
      return { Status: 'Login Succeeded' as const };
    },
    inspectDistribution: async (ref: string) => {
      inspected.push(ref);
      return { Descriptor: { mediaType: 'x', digest: 'sha256:0', size: 1 }, Platforms: [] };
    },
    search: async (term: string, limit: number) => {
      searches.push([term, limit]);
      return results;
    },
    listTags: async () => [],
  };
  h = await routeHarness((store) => [
    authRoutes({ distribution }),
    imageRoutes({
      store,
      archive: {} as ImageArchivePort,
      waitTimeoutMs: 500,
      pull: pullHandler({ distribution, store, jobs: { watch: () => () => {}, setCredentials: () => {} } }),
    }),
  ]);
});
after(() => h.close());

test('search: limit is strconv.Atoi, absent or empty 25, then 1..100', async () => {
  const bad = await h.app.inject('/images/search?term=x&limit=abc');
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().message, 'strconv.Atoi: parsing "abc": invalid syntax');
  const range = await h.app.inject('/images/search?term=x&limit=0');
  assert.equal(range.statusCode, 400);
  assert.equal(range.json().message, 'Limit 0 is outside the range of [1, 100]');
  assert.equal((await h.app.inject('/images/search?term=x&limit=101')).json().message, 'Limit 101 is outside the range of [1, 100]');
  assert.equal((await h.app.inject('/images/search')).json().message, 'term is required');
  searches.length = 0;
  await h.app.inject('/images/search?term=x&limit=');
  await h.app.inject('/images/search?term=first&term=second&limit=7&limit=abc');
  assert.deepEqual(searches, [['x', 25], ['first', 7]]);
  const filtered = await h.app.inject({ url: '/images/search', query: { term: 'x', filters: JSON.stringify({ 'is-official': ['true'] }) } });
  assert.deepEqual(filtered.json().map((r: SearchResult) => r.name), ['a']);
});

test('auth: the body schema refuses a wrong type with the decoder message', async () => {
  const bad = await h.app.inject({ method: 'POST', url: '/auth', headers: { 'content-type': 'application/json' }, payload: '{"username":5}' });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().message, 'json: cannot unmarshal number into Go struct field AuthConfig.username of type string');
  logins.length = 0;
  const ok = await h.app.inject({ method: 'POST', url: '/auth', headers: { 'content-type': 'application/json' }, payload: '{"Username":"u","password":"p"}' });
  assert.equal(ok.statusCode, 200);
  assert.deepEqual(logins, [{ username: 'u', password: 'p' }]);
});

test('pull: a bad platform is refused before any output; distribution/{name}/json takes the rest of the path', async () => {
  const plat = await h.app.inject({ method: 'POST', url: '/images/create?fromImage=busybox&platform=bo%20gus' });
  assert.equal(plat.statusCode, 400);
  assert.equal(plat.json().message, '"bo gus": unknown operating system or architecture: invalid argument');
  const d = await h.app.inject('/distribution/reg.example:5000/team/app:1/json');
  assert.equal(d.statusCode, 200, d.body);
  assert.deepEqual(inspected, ['reg.example:5000/team/app:1']);
  assert.equal((await h.app.inject('/distribution/app/other')).statusCode, 404);
});
