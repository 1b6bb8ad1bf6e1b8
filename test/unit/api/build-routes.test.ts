// The build routes through app.inject() on the real store: POST /build's query checked by the
// route's schema and the handler before any output (a status then, with the reference's message),
// the options the builder is given, and /build/prune and /build/cancel.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildRoutes } from '../../../api/builder/routes.ts';
import type { BuildBackend, BuildOptions } from '../../../lib/ports/build.ts';
import { routeHarness, type RouteHarness } from './route-harness.ts';

let h: RouteHarness;
const given: BuildOptions[] = [];
const ID = `sha256:${'b'.repeat(64)}`;

before(async () => {
  h = await routeHarness((store) => [
    buildRoutes({
      store,
      experimental: false,
      backend: () => ({}) as BuildBackend,
      builder: {
        async build(context, opts, _backend, out) {
          context.resume();
          given.push(opts);
          out.stream('Step 1/1 : FROM scratch\n');
          return ID;
        },
      },
    }),
  ]);
});
after(() => h.close());

const build = (qs: string) => h.app.inject({ method: 'POST', url: `/build${qs}`, headers: { 'content-type': 'application/x-tar' }, payload: 'tar' });

test('refusals before any output carry a status and the reference message', async () => {
  const cases: Array<[string, number, string | RegExp]> = [
    ['?shmsize=abc', 400, 'strconv.ParseInt: parsing "abc": invalid syntax'],
    ['?buildargs=%7Bbad', 400, /^error reading build args: /],
    ['?labels=%5B1%5D', 400, 'error reading labels: json: cannot unmarshal array into the expected type'],
    ['?ulimits=%7B', 400, /^error reading ulimit settings: /],
    ['?squash=1', 400, 'squash is only supported with experimental mode'],
    ['?securityopt=seccomp%3Dunconfined', 400, 'The daemon on this platform does not support setting security options on build'],
    ['?isolation=hyperv', 400, 'Unsupported isolation: "hyperv"'],
    ['?version=3', 400, 'invalid version 3'],
    ['?t=app%40sha256%3A' + 'a'.repeat(64), 400, 'build tag cannot contain a digest'],
  ];
  for (const [qs, status, message] of cases) {
    const r = await build(qs);
    assert.equal(r.statusCode, status, qs);
    if (typeof message === 'string') assert.equal(r.json().message, message, qs);
    else assert.match(r.json().message, message, qs);
  }
  assert.equal(given.length, 0);
});

test('the builder gets the options as the reference reads them', async () => {
  given.length = 0;
  const r = await build('?t=app&t=&t=reg:5000/x:v2&memory=abc&cpushares=12&rm=&dockerfile=a.Dockerfile&dockerfile=b&extrahosts=h:1.2.3.4&extrahosts=g:5.6.7.8');
  assert.equal(r.statusCode, 200, r.body);
  assert.match(r.body, /Successfully built bbbbbbbbbbbb/);
  assert.match(r.body, /Successfully tagged app:latest/);
  assert.match(r.body, /Successfully tagged reg:5000\/x:v2/);
  const [o] = given;
  assert.equal(o.dockerfile, 'a.Dockerfile');
  assert.equal(o.remove, true);
  // memory=abc is Int64ValueOrZero: 0, the build goes on.
  assert.deepEqual(o.hostConfig, { CpuShares: 12, ExtraHosts: ['h:1.2.3.4', 'g:5.6.7.8'] });
  given.length = 0;
  await build('?rm=0&q=1');
  assert.equal(given[0].remove, false);
});

test('build/prune: keep-storage is strconv.Atoi in the reference words; build/cancel needs an id', async () => {
  const bad = await h.app.inject({ method: 'POST', url: '/build/prune?keep-storage=abc' });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().message, 'keep-storage is in bytes and expects an integer, got abc: strconv.Atoi: parsing "abc": invalid syntax');
  const ok = await h.app.inject({ method: 'POST', url: '/build/prune?keep-storage=1024' });
  assert.deepEqual(ok.json(), { CachesDeleted: null, SpaceReclaimed: 0 });
  const none = await h.app.inject({ method: 'POST', url: '/build/cancel?id=' });
  assert.equal(none.statusCode, 400);
  assert.equal(none.json().message, 'build ID not provided');
  assert.equal((await h.app.inject({ method: 'POST', url: '/build/cancel?id=x' })).statusCode, 200);
});
