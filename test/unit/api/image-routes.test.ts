// The image routes through app.inject() on the real store: queries as the reference reads them
// (first value of a repeated key, BoolValue flags, every `names`), the `*` routes' rest of the
// path, and the answers.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { chainOf } from '../../../api/images/layers.ts';
import { imageRoutes } from '../../../api/images/routes.ts';
import type { ImageArchivePort, LoadedImage, SaveImage } from '../../../api/ports.ts';
import { invalidArgument } from '../../../lib/errors.ts';
import { Images } from '../../../store/kinds/image.ts';
import { routeHarness, type RouteHarness } from './route-harness.ts';

const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

function makeImage(seed: string, tags: string[] = []): LoadedImage {
  const diffIds = [sha(`layer-${seed}`)];
  const rawConfig = JSON.stringify({ architecture: 'amd64', os: 'linux', created: '2024-01-01T00:00:00Z', config: { Cmd: ['sh'] }, rootfs: { type: 'layers', diff_ids: diffIds } });
  return { id: sha(rawConfig), rawConfig, diffIds, chainId: chainOf(diffIds).at(-1) ?? null, size: 100, repoTags: tags };
}

const saved: string[][] = [];
const archive: ImageArchivePort = {
  async load(body: Readable): Promise<LoadedImage[]> {
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(Buffer.from(c));
    return JSON.parse(Buffer.concat(chunks).toString()) as LoadedImage[];
  },
  async importRootfs(): Promise<LoadedImage> {
    throw invalidArgument('not in these tests');
  },
  save(images: SaveImage[]): Readable {
    saved.push(images.map((i) => i.id));
    return Readable.from([Buffer.from('tar')]);
  },
};

let h: RouteHarness;
const a = makeImage('a', ['docker.io/library/alpha:1']);
const b = makeImage('b', ['docker.io/library/beta:1']);

before(async () => {
  h = await routeHarness((store) => [imageRoutes({ store, archive, waitTimeoutMs: 2000, layers: { driverName: 'overlay2', get: () => ({ size: 100 }) } })], {
    // The image reconciler's observable behaviour: pending becomes ready, removed goes away.
    react(store, ev) {
      if (ev.kind !== Images.name) return;
      const r = store.get(Images, ev.name);
      if (!r) return;
      if (r.spec.desired === 'removed') store.delete(Images, r.name);
      else if (r.status.observedGeneration < r.generation) {
        store.updateStatus(Images, r.name, (s) => ({ ...s, phase: 'ready', error: '', observedGeneration: r.generation }));
      }
    },
  });
  const r = await h.app.inject({ method: 'POST', url: '/images/load', headers: { 'content-type': 'application/x-tar' }, payload: JSON.stringify([a, b]) });
  assert.equal(r.statusCode, 200, r.body);
  assert.doesNotMatch(r.body, /error/);
});
after(() => h.close());

const tagsOf = (body: Array<{ RepoTags: string[] }>) => body.flatMap((i) => i.RepoTags).sort();

test('images/json: filters (first value) and all', async () => {
  const all = await h.app.inject({ url: '/images/json?all=1' });
  assert.equal(all.statusCode, 200);
  assert.deepEqual(tagsOf(all.json()), ['alpha:1', 'beta:1']);
  const one = await h.app.inject({ url: '/images/json', query: { filters: [JSON.stringify({ reference: ['alpha'] }), JSON.stringify({ reference: ['beta'] })] } });
  assert.deepEqual(tagsOf(one.json()), ['alpha:1']);
  const unknown = await h.app.inject({ url: '/images/json', query: { filters: JSON.stringify({ nope: ['x'] }) } });
  assert.equal(unknown.statusCode, 400);
});

test('load: quiet defaults to true; ?quiet= is false (BoolValueOrDefault)', async () => {
  const post = (qs: string) => h.app.inject({ method: 'POST', url: `/images/load${qs}`, headers: { 'content-type': 'application/x-tar' }, payload: JSON.stringify([a]) });
  assert.equal((await post('')).statusCode, 200);
  assert.equal((await post('?quiet=')).statusCode, 200);
});

test("tag reads repo and tag (first values); the image is the rest of the path", async () => {
  const r = await h.app.inject({ method: 'POST', url: '/images/alpha:1/tag?repo=reg.example:5000/team/app&repo=other&tag=v2' });
  assert.equal(r.statusCode, 201, r.body);
  const inspect = await h.app.inject('/images/reg.example:5000/team/app:v2/json');
  assert.equal(inspect.statusCode, 200);
  assert.equal(inspect.json().Id, a.id);
  const noRepo = await h.app.inject({ method: 'POST', url: '/images/alpha:1/tag?tag=x' });
  assert.equal(noRepo.statusCode, 400);
  assert.equal(noRepo.json().message, 'repository name must have at least one component');
  const missing = await h.app.inject({ method: 'POST', url: '/images/nosuch:1/tag?repo=x' });
  assert.equal(missing.statusCode, 404);
  assert.equal((await h.app.inject({ method: 'POST', url: '/images/alpha:1/bogus' })).statusCode, 404);
});

test('images/get takes every names value', async () => {
  saved.length = 0;
  const r = await h.app.inject({ url: '/images/get?names=alpha:1&names=beta:1' });
  assert.equal(r.statusCode, 200);
  assert.deepEqual(saved, [[a.id, b.id]]);
  const missing = await h.app.inject({ url: '/images/get?names=alpha:1&names=nosuch' });
  assert.equal(missing.statusCode, 404);
});

test('delete: force and noprune are BoolValues; the name is the rest of the path', async () => {
  const c = makeImage('c', ['docker.io/library/gamma:1', 'docker.io/library/delta:1', 'docker.io/library/epsilon:1']);
  await h.app.inject({ method: 'POST', url: '/images/load', headers: { 'content-type': 'application/x-tar' }, payload: JSON.stringify([c]) });
  // Tags in several repositories: without force, removing by ID is a conflict; `force=0&force=1` is the first value, false.
  const conflict = await h.app.inject({ method: 'DELETE', url: `/images/${c.id}?force=0&force=1` });
  assert.equal(conflict.statusCode, 409, conflict.body);
  const untag = await h.app.inject({ method: 'DELETE', url: '/images/gamma:1?noprune=yes' });
  assert.equal(untag.statusCode, 200);
  assert.deepEqual(untag.json(), [{ Untagged: 'gamma:1' }]);
  const forced = await h.app.inject({ method: 'DELETE', url: `/images/${c.id}?force=on` });
  assert.equal(forced.statusCode, 200, forced.body);
  assert.ok(forced.json().some((r: Record<string, string>) => r.Deleted === c.id));
  assert.equal((await h.app.inject({ method: 'DELETE', url: '/images/nosuch:9' })).statusCode, 404);
});

test('prune needs API 1.25; create needs fromImage or fromSrc', async () => {
  const old = await h.app.inject({ method: 'POST', url: '/v1.24/images/prune' });
  assert.equal(old.statusCode, 400);
  assert.equal(old.json().message, 'POST /v1.24/images/prune requires minimum API version 1.25');
  const none = await h.app.inject({ method: 'POST', url: '/images/create?tag=x' });
  assert.equal(none.statusCode, 400);
  assert.equal(none.json().message, 'fromImage or fromSrc is required');
  const url = await h.app.inject({ method: 'POST', url: '/images/create?fromSrc=http://example.com/x.tar' });
  assert.equal(url.statusCode, 501);
});

test('commit: 501 without a committer', async () => {
  const r = await h.app.inject({ method: 'POST', url: '/commit?container=x' });
  assert.equal(r.statusCode, 501);
});
