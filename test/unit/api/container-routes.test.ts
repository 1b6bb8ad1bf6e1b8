// The container routes through app.inject() on the real store: queries read as the reference reads
// them (flags as Go's BoolValue, first value of a repeated key, strconv's words for a bad number),
// refusals before anything is written, and the answers from the store's view.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { containerRoutes, type ContainerRouteDeps } from '../../../api/containers/routes.ts';
import type { ContainerOpsPort } from '../../../api/ports.ts';
import { notFound } from '../../../lib/errors.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { containerRecord } from '../container/fake-world.ts';
import { routeHarness, type RouteHarness } from './route-harness.ts';

const RUNNING = 'a'.repeat(64);
const CREATED = 'b'.repeat(64);
let h: RouteHarness;
const tops: string[] = [];

before(async () => {
  h = await routeHarness((store) => {
    const ops = {
      top: async (_id: string, args: string) => {
        tops.push(args);
        return { Titles: ['PID'], Processes: [['1']] };
      },
      changes: async () => [],
    } as unknown as ContainerOpsPort;
    const deps = {
      store,
      ops,
      logs: { read: async function* () {} },
      signals: { kill: async () => {} },
      resolveImage: (ref: string) => {
        throw notFound(`No such image: ${ref}`);
      },
      parseSignal: (s: string) => {
        if (!/^(SIG)?(KILL|TERM|\d+)$/.test(s)) throw Object.assign(new Error(`Invalid signal: ${s}`), { code: 'InvalidArgument' });
        return 9;
      },
      graphDriverData: () => ({}),
      sizeRw: async () => 0,
      waitTimeoutMs: 500,
    } as unknown as ContainerRouteDeps;
    return [containerRoutes(deps)];
  });
  const run = containerRecord(RUNNING, { spec: { name: '/web', desired: 'running' }, status: { phase: 'running', pid: 42 }, hostConfig: { LogConfig: { Type: 'json-file', Config: {} } } });
  h.store.create(Containers, RUNNING, run.spec, run.status);
  const made = containerRecord(CREATED, { spec: { name: '/idle' } });
  h.store.create(Containers, CREATED, made.spec, made.status);
});
after(() => h.close());

const names = (body: Array<{ Names: string[] }>) => body.map((c) => c.Names[0]).sort();

test('list: all and size are flags, limit is strconv.Atoi (a bad one is refused in its words)', async () => {
  assert.deepEqual(names((await h.app.inject('/containers/json')).json()), ['/web']);
  assert.deepEqual(names((await h.app.inject('/containers/json?all=1')).json()), ['/idle', '/web']);
  assert.deepEqual(names((await h.app.inject('/containers/json?all=off')).json()), ['/idle', '/web']);
  assert.deepEqual(names((await h.app.inject('/containers/json?all=0&all=1')).json()), ['/web']);
  assert.equal((await h.app.inject('/containers/json?all=1&limit=1')).json().length, 1);
  assert.equal((await h.app.inject('/containers/json?all=1&limit=')).json().length, 2);
  const bad = await h.app.inject('/v1.47/containers/json?limit=abc');
  assert.equal(bad.statusCode, 400);
  assert.deepEqual(bad.json(), { message: 'strconv.Atoi: parsing "abc": invalid syntax' });
});

test('inspect by name, id prefix; unknown is 404; the API version shapes the answer', async () => {
  assert.equal((await h.app.inject('/containers/web/json')).json().Id, RUNNING);
  assert.equal((await h.app.inject('/containers/bbbb/json')).json().Name, '/idle');
  const missing = await h.app.inject('/containers/nosuch/json');
  assert.equal(missing.statusCode, 404);
  assert.deepEqual(missing.json(), { message: 'No such container: nosuch' });
});

test('stop and restart read t before the lookup, as the reference does', async () => {
  const r = await h.app.inject({ method: 'POST', url: '/containers/nosuch/stop?t=abc' });
  assert.equal(r.statusCode, 400);
  assert.equal(r.json().message, 'strconv.Atoi: parsing "abc": invalid syntax');
  assert.equal((await h.app.inject({ method: 'POST', url: '/containers/nosuch/restart?t=x1' })).json().message, 'strconv.Atoi: parsing "x1": invalid syntax');
  assert.equal((await h.app.inject({ method: 'POST', url: '/containers/idle/stop?t=5' })).statusCode, 304);
});

test('kill: a bad signal is 400; a container without a task is 409', async () => {
  assert.equal((await h.app.inject({ method: 'POST', url: '/containers/web/kill?signal=FOO' })).statusCode, 400);
  const idle = await h.app.inject({ method: 'POST', url: '/containers/idle/kill' });
  assert.equal(idle.statusCode, 409);
});

test('logs: at least one stream; since and until are numbers (after the lookup); tail junk is every line', async () => {
  const none = await h.app.inject('/containers/web/logs');
  assert.equal(none.statusCode, 400);
  assert.equal(none.json().message, 'Bad parameters: you must choose at least one stream');
  assert.equal((await h.app.inject('/containers/nosuch/logs?stdout=1&since=abc')).statusCode, 404);
  const since = await h.app.inject('/containers/web/logs?stdout=1&since=abc');
  assert.equal(since.statusCode, 400);
  assert.equal(since.json().message, 'strconv.ParseInt: parsing "abc": invalid syntax');
  assert.equal((await h.app.inject('/containers/web/logs?stdout=1&tail=junk')).statusCode, 200);
  assert.equal((await h.app.inject('/containers/idle/logs?stdout=1')).statusCode, 501);
});

test('top: ps_args defaults to -ef (empty too); stats refuses stream and one-shot together', async () => {
  tops.length = 0;
  assert.equal((await h.app.inject('/containers/web/top')).statusCode, 200);
  await h.app.inject('/containers/web/top?ps_args=');
  await h.app.inject('/containers/web/top?ps_args=aux');
  assert.deepEqual(tops, ['-ef', '-ef', 'aux']);
  assert.equal((await h.app.inject('/containers/idle/top')).statusCode, 409);
  const both = await h.app.inject('/containers/web/stats?one-shot=1');
  assert.equal(both.statusCode, 400);
  assert.equal(both.json().message, 'cannot have stream=true and one-shot=true');
});

test('rename needs a name (the first of repeated ones); archive needs a path', async () => {
  assert.equal((await h.app.inject({ method: 'POST', url: '/containers/idle/rename' })).json().message, 'Neither old nor new names may be empty');
  assert.equal((await h.app.inject({ method: 'POST', url: '/containers/idle/rename?name=idle2&name=idle3' })).statusCode, 204);
  assert.equal(h.store.get(Containers, CREATED)?.spec.name, '/idle2');
  const cp = await h.app.inject('/containers/web/archive');
  assert.equal(cp.statusCode, 400);
  assert.equal(cp.json().message, 'bad parameter: path cannot be empty');
});

test('remove: force is a flag; a running container without it is 409 and stays', async () => {
  const r = await h.app.inject({ method: 'DELETE', url: '/containers/web?force=0' });
  assert.equal(r.statusCode, 409);
  assert.ok(h.store.get(Containers, RUNNING));
  assert.equal((await h.app.inject({ method: 'DELETE', url: '/containers/nosuch?force=1' })).statusCode, 404);
});
