// Image routes against the real store, a fake archive port and a fake image reconciler.
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { imageRoutes } from '../../../api/images/routes.ts';
import { resolveImage } from '../../../api/images/resolve.ts';
import type { ImageArchivePort, ImportOptions, LoadedImage, SaveImage } from '../../../api/ports.ts';
import { invalidArgument } from '../../../lib/errors.ts';
import type { Store } from '../../../store/store.ts';
import { type ContainerStatus, Containers } from '../../../store/kinds/container.ts';

import { containerRecord } from '../container/fake-world.ts';
import { imageReconciler, routeHarness } from './route-harness.ts';
import { References } from '../../../store/kinds/reference.ts';
import { Images } from '../../../store/kinds/image.ts';

function makeImage(seed: string, created: string, repoTags: string[] = [], labels: Record<string, string> = {}): LoadedImage {
  const diff = `sha256:${createHash('sha256').update(`layer-${seed}`).digest('hex')}`;
  const rawConfig = JSON.stringify({
    architecture: 'amd64', os: 'linux', created, author: 'tester',
    config: { Cmd: ['sh'], Env: ['PATH=/bin'], Labels: labels },
    rootfs: { type: 'layers', diff_ids: [diff] },
    history: [{ created, created_by: `ADD ${seed}` }],
  });
  return { id: `sha256:${createHash('sha256').update(rawConfig).digest('hex')}`, rawConfig, diffIds: [diff], chainId: diff, size: 1000, repoTags };
}

async function readAll(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks).toString();
}

class FakeArchive implements ImageArchivePort {
  imports: ImportOptions[] = [];
  saved: SaveImage[][] = [];
  async load(body: Readable, _signal: AbortSignal, onProgress?: (msg: string) => void): Promise<LoadedImage[]> {
    const text = await readAll(body);
    if (text === 'garbage') throw invalidArgument('archive/tar: invalid tar header');
    const images = JSON.parse(text) as LoadedImage[];
    for (const i of images) onProgress?.(`Loading layer ${i.diffIds[0].slice(7, 19)}`);
    return images;
  }
  async importRootfs(body: Readable, opts: ImportOptions): Promise<LoadedImage> {
    const text = await readAll(body);
    this.imports.push(opts);
    return makeImage(`import-${text}`, '2024-03-01T00:00:00Z');
  }
  save(images: SaveImage[]): Readable {
    this.saved.push(images);
    return Readable.from([Buffer.from(JSON.stringify(images.map((i) => ({ id: i.id, tags: i.repoTags }))))]);
  }
}

const BUSYBOX = makeImage('busybox', '2024-01-01T00:00:00Z', ['docker.io/library/busybox:latest'], { maintainer: 'bb' });
const ALPINE = makeImage('alpine', '2024-02-01T00:00:00Z', ['docker.io/library/alpine:3.19', 'docker.io/library/alpine:latest']);
const UNTAGGED = makeImage('untagged', '2023-06-01T00:00:00Z');

/** The image routes on a fresh real store, closed when the test ends. */
async function setup(t: TestContext, opts: { fail?: (id: string) => string | undefined } = {}) {
  const archive = new FakeArchive();
  const h = await routeHarness(
    (store) => [imageRoutes({ store, archive, waitTimeoutMs: 2000, layers: { driverName: 'overlay2' } })],
    { react: imageReconciler(opts) },
  );
  t.after(() => h.close());
  return { store: h.store, archive, app: h.app };
}

async function load(app: Awaited<ReturnType<typeof setup>>['app'], images: LoadedImage[] | string, query = '') {
  const r = await app.inject({
    method: 'POST', url: `/v1.47/images/load${query}`, headers: { 'content-type': 'application/x-tar' },
    payload: typeof images === 'string' ? images : JSON.stringify(images),
  });
  return { r, lines: r.body.split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

function addContainer(store: Store, id: string, imageId: string, phase: ContainerStatus['phase']): void {
  const r = containerRecord(id, { spec: { imageId, name: `/${id.slice(0, 4)}` }, status: { phase } });
  store.create(Containers, id, r.spec, r.status);
}

describe('image routes', () => {
  test('load creates ready images and tags, JSON-lines output', async (t) => {
    const { app, store } = await setup(t);
    const { r, lines } = await load(app, [BUSYBOX, UNTAGGED]);
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.deepEqual(lines, [{ stream: 'Loaded image: busybox:latest\n' }, { stream: `Loaded image ID: ${UNTAGGED.id}\n` }]);
    assert.equal(store.get(Images, BUSYBOX.id)?.status.phase, 'ready');
    assert.equal(store.get(References, 'docker.io/library/busybox:latest')?.spec.imageId, BUSYBOX.id);
    // loading the same archive again is idempotent
    const again = await load(app, [BUSYBOX]);
    assert.deepEqual(again.lines, [{ stream: 'Loaded image: busybox:latest\n' }]);
  });

  test('load moving a tag prints the rename line; quiet=0 shows progress', async (t) => {
    const { app } = await setup(t);
    await load(app, [BUSYBOX]);
    const other = makeImage('busybox-new', '2024-05-01T00:00:00Z', ['docker.io/library/busybox:latest']);
    const { lines } = await load(app, [other], '?quiet=0');
    assert.equal(lines[0].status, 'Loading layer');
    assert.deepEqual(lines.slice(1), [
      { stream: `The image busybox:latest already exists, renaming the old one with ID ${BUSYBOX.id} to empty string\n` },
      { stream: 'Loaded image: busybox:latest\n' },
    ]);
    const insp = (await app.inject('/images/busybox/json')).json();
    assert.equal(insp.Id, other.id);
  });

  test('load errors are in-band', async (t) => {
    const { app } = await setup(t);
    const { r, lines } = await load(app, 'garbage');
    assert.equal(r.statusCode, 200);
    assert.deepEqual(lines, [{ errorDetail: { message: 'archive/tar: invalid tar header' }, error: 'archive/tar: invalid tar header' }]);
    const failing = await setup(t, { fail: () => 'layer sha256:x is missing' });
    const f = await load(failing.app, [BUSYBOX]);
    assert.equal(f.lines.at(-1).error, 'layer sha256:x is missing');
  });

  test('list: newest first, familiar tags, version-gated fields, filters', async (t) => {
    const { app } = await setup(t);
    await load(app, [BUSYBOX, ALPINE, UNTAGGED]);
    const list = (await app.inject('/images/json')).json();
    assert.deepEqual(list.map((i: any) => i.Id), [ALPINE.id, BUSYBOX.id, UNTAGGED.id]);
    assert.deepEqual(list[0].RepoTags, ['alpine:3.19', 'alpine:latest']);
    assert.deepEqual(list[2].RepoTags, []);
    assert.equal(list[1].Created, Date.parse('2024-01-01T00:00:00Z') / 1000);
    assert.equal(list[1].Containers, -1);
    assert.equal(list[1].SharedSize, -1);
    assert.equal(list[1].Size, 1000);
    assert.deepEqual(list[1].Labels, { maintainer: 'bb' });
    assert.equal('VirtualSize' in list[1], false);
    const old = (await app.inject('/v1.41/images/json')).json();
    assert.equal(old[2].VirtualSize, 1000);
    assert.deepEqual(old[2].RepoTags, ['<none>:<none>']);
    assert.deepEqual(old[2].RepoDigests, ['<none>@<none>']);

    const q = (f: unknown) => `/images/json?filters=${encodeURIComponent(JSON.stringify(f))}`;
    assert.deepEqual((await app.inject(q({ dangling: { true: true } }))).json().map((i: any) => i.Id), [UNTAGGED.id]);
    assert.deepEqual((await app.inject(q({ dangling: ['false'] }))).json().length, 2);
    const ref = (await app.inject(q({ reference: { 'alpine:3*': true } }))).json();
    assert.deepEqual(ref.map((i: any) => i.RepoTags), [['alpine:3.19']]);
    assert.deepEqual((await app.inject(q({ reference: ['busybox'] }))).json().map((i: any) => i.Id), [BUSYBOX.id]);
    assert.deepEqual((await app.inject(q({ label: ['maintainer=bb'] }))).json().map((i: any) => i.Id), [BUSYBOX.id]);
    assert.deepEqual((await app.inject(q({ before: ['alpine:latest'] }))).json().map((i: any) => i.Id), [BUSYBOX.id, UNTAGGED.id]);
    assert.deepEqual((await app.inject(q({ since: ['busybox'] }))).json().map((i: any) => i.Id), [ALPINE.id]);
    const bad = await app.inject(q({ nope: ['x'] }));
    assert.equal(bad.statusCode, 400);
    assert.deepEqual(bad.json(), { message: "invalid filter 'nope'" });
    assert.equal((await app.inject(q({ dangling: ['maybe'] }))).statusCode, 400);
  });

  test('inspect by tag, id, bare hex, prefixes; 404 messages', async (t) => {
    const { app } = await setup(t);
    await load(app, [BUSYBOX]);
    const hex = BUSYBOX.id.slice(7);
    for (const name of ['busybox', 'busybox:latest', 'docker.io/library/busybox:latest', BUSYBOX.id, hex, hex.slice(0, 12), `sha256:${hex.slice(0, 8)}`]) {
      const r = await app.inject(`/v1.47/images/${name}/json`);
      assert.equal(r.statusCode, 200, name);
      assert.equal(r.json().Id, BUSYBOX.id, name);
    }
    const insp = (await app.inject('/images/busybox/json')).json();
    assert.deepEqual(insp.RepoTags, ['busybox:latest']);
    assert.deepEqual(insp.RepoDigests, []);
    assert.equal(insp.Created, '2024-01-01T00:00:00Z');
    assert.equal(insp.Author, 'tester');
    assert.deepEqual(insp.Config.Cmd, ['sh']);
    assert.equal(insp.Config.Tty, false);
    assert.equal(insp.Os, 'linux');
    assert.equal(insp.Architecture, 'amd64');
    assert.deepEqual(insp.RootFS, { Type: 'layers', Layers: BUSYBOX.diffIds });
    assert.deepEqual(insp.GraphDriver, { Name: 'overlay2', Data: null });
    assert.equal(typeof insp.Metadata.LastTagTime, 'string');
    assert.equal('ContainerConfig' in insp, false);
    assert.equal('VirtualSize' in insp, false);
    const old = (await app.inject('/v1.43/images/busybox/json')).json();
    assert.equal(old.VirtualSize, 1000);
    assert.equal(typeof old.ContainerConfig, 'object');
    assert.equal(old.Container, '');

    const nf = await app.inject('/images/nosuch/json');
    assert.equal(nf.statusCode, 404);
    assert.deepEqual(nf.json(), { message: 'No such image: nosuch:latest' });
    assert.deepEqual((await app.inject('/images/localhost:5000/a/b:1.0/json')).json(), { message: 'No such image: localhost:5000/a/b:1.0' });
    assert.equal((await app.inject('/images/busybox')).statusCode, 404);
    assert.equal((await app.inject('/images/UPPER/json')).statusCode, 400);
  });

  test('a digest reference resolves through repoDigests', async (t) => {
    const { app, store } = await setup(t);
    await load(app, [BUSYBOX]);
    const digest = `sha256:${'d'.repeat(64)}`;
    store.updateSpec(Images, BUSYBOX.id, (s) => ({ ...s, repoDigests: [`docker.io/library/busybox@${digest}`] }));
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(resolveImage(store, `busybox@${digest}`).name, BUSYBOX.id);
    const list = (await app.inject('/images/json')).json();
    assert.deepEqual(list[0].RepoDigests, [`busybox@${digest}`]);
  });

  test('tag', async (t) => {
    const { app } = await setup(t);
    await load(app, [BUSYBOX]);
    const r = await app.inject({ method: 'POST', url: '/v1.47/images/busybox/tag?repo=localhost:5000/team/bb&tag=1.0' });
    assert.equal(r.statusCode, 201);
    assert.equal(r.body, '');
    const insp = (await app.inject('/images/localhost:5000/team/bb:1.0/json')).json();
    assert.deepEqual(insp.RepoTags, ['busybox:latest', 'localhost:5000/team/bb:1.0']);
    const noTag = await app.inject({ method: 'POST', url: `/images/${BUSYBOX.id}/tag?repo=mine` });
    assert.equal(noTag.statusCode, 201);
    assert.equal((await app.inject('/images/mine:latest/json')).statusCode, 200);
    const badTag = await app.inject({ method: 'POST', url: '/images/busybox/tag?repo=x&tag=-bad' });
    assert.equal(badTag.statusCode, 400);
    const badRepo = await app.inject({ method: 'POST', url: '/images/busybox/tag?repo=Bad' });
    assert.equal(badRepo.statusCode, 400);
    assert.match(badRepo.json().message, /invalid reference format/);
    const missing = await app.inject({ method: 'POST', url: '/images/nosuch/tag?repo=x' });
    assert.equal(missing.statusCode, 404);
  });

  test('delete by tag with other tags only untags', async (t) => {
    const { app, store } = await setup(t);
    await load(app, [ALPINE]);
    const r = await app.inject({ method: 'DELETE', url: '/v1.47/images/alpine:3.19' });
    assert.equal(r.statusCode, 200);
    assert.deepEqual(r.json(), [{ Untagged: 'alpine:3.19' }]);
    assert.ok(store.get(Images, ALPINE.id));
    const last = await app.inject({ method: 'DELETE', url: '/images/alpine' });
    assert.deepEqual(last.json(), [{ Untagged: 'alpine:latest' }, { Deleted: ALPINE.id }]);
    assert.equal(store.get(Images, ALPINE.id), undefined);
    assert.equal((await app.inject('/images/alpine/json')).statusCode, 404);
  });

  test('delete by id with several tags needs force', async (t) => {
    const { app, store } = await setup(t);
    await load(app, [ALPINE]);
    await app.inject({ method: 'POST', url: '/images/alpine/tag?repo=other/repo&tag=x' });
    const short = ALPINE.id.slice(7, 19);
    const r = await app.inject({ method: 'DELETE', url: `/images/${short}` });
    assert.equal(r.statusCode, 409);
    assert.deepEqual(r.json(), { message: `conflict: unable to delete ${short} (must be forced) - image is referenced in multiple repositories` });
    const f = await app.inject({ method: 'DELETE', url: `/images/${short}?force=1` });
    assert.equal(f.statusCode, 200);
    assert.deepEqual(f.json(), [{ Untagged: 'alpine:3.19' }, { Untagged: 'alpine:latest' }, { Untagged: 'other/repo:x' }, { Deleted: ALPINE.id }]);
    assert.equal(store.list(References).length, 0);
  });

  test('delete by id with one repository untags and deletes', async (t) => {
    const { app } = await setup(t);
    await load(app, [ALPINE]);
    const r = await app.inject({ method: 'DELETE', url: `/images/${ALPINE.id}` });
    assert.deepEqual(r.json(), [{ Untagged: 'alpine:3.19' }, { Untagged: 'alpine:latest' }, { Deleted: ALPINE.id }]);
  });

  test('delete conflicts with containers', async (t) => {
    const { app, store } = await setup(t);
    await load(app, [BUSYBOX]);
    const short = BUSYBOX.id.slice(7, 19);
    const stoppedId = 'a'.repeat(64);
    addContainer(store, stoppedId, BUSYBOX.id, 'exited');
    const byName = await app.inject({ method: 'DELETE', url: '/images/busybox' });
    assert.equal(byName.statusCode, 409);
    assert.equal(byName.json().message, `conflict: unable to remove repository reference "busybox" (must force) - container aaaaaaaaaaaa is using its referenced image ${short}`);
    const byId = await app.inject({ method: 'DELETE', url: `/images/${BUSYBOX.id}` });
    assert.equal(byId.statusCode, 409);
    assert.equal(byId.json().message, `conflict: unable to delete ${short} (must be forced) - image is being used by stopped container aaaaaaaaaaaa`);

    store.delete(Containers, stoppedId);
    addContainer(store, 'b'.repeat(64), BUSYBOX.id, 'running');
    const running = await app.inject({ method: 'DELETE', url: `/images/${BUSYBOX.id}?force=1` });
    assert.equal(running.statusCode, 409);
    assert.equal(running.json().message, `conflict: unable to delete ${short} (cannot be forced) - image is being used by running container bbbbbbbbbbbb`);

    // With a second tag, removing one by name is a plain untag even while in use.
    await app.inject({ method: 'POST', url: '/images/busybox/tag?repo=bb2' });
    const untag = await app.inject({ method: 'DELETE', url: '/images/bb2' });
    assert.deepEqual(untag.json(), [{ Untagged: 'bb2:latest' }]);
    // Forced removal of the last tag of a used image untags only.
    const forced = await app.inject({ method: 'DELETE', url: '/images/busybox?force=1' });
    assert.deepEqual(forced.json(), [{ Untagged: 'busybox:latest' }]);
    assert.ok(store.get(Images, BUSYBOX.id));
    assert.equal((await app.inject({ method: 'DELETE', url: '/images/nosuch' })).statusCode, 404);
  });

  test('save one image or several', async (t) => {
    const { app, archive } = await setup(t);
    await load(app, [BUSYBOX, ALPINE]);
    const one = await app.inject('/v1.47/images/busybox/get');
    assert.equal(one.statusCode, 200);
    assert.equal(one.headers['content-type'], 'application/x-tar');
    assert.deepEqual(JSON.parse(one.body), [{ id: BUSYBOX.id, tags: ['docker.io/library/busybox:latest'] }]);
    const many = await app.inject('/images/get?names=busybox:latest&names=alpine');
    assert.deepEqual(JSON.parse(many.body), [
      { id: BUSYBOX.id, tags: ['docker.io/library/busybox:latest'] },
      { id: ALPINE.id, tags: ['docker.io/library/alpine:3.19', 'docker.io/library/alpine:latest'] },
    ]);
    const byId = await app.inject(`/images/get?names=${ALPINE.id}`);
    assert.deepEqual(JSON.parse(byId.body), [{ id: ALPINE.id, tags: [] }]);
    assert.equal(archive.saved.length, 3);
    const missing = await app.inject('/images/get?names=nosuch');
    assert.equal(missing.statusCode, 404);
  });

  test('import a rootfs with repo, tag, message and changes', async (t) => {
    const { app, archive } = await setup(t);
    const r = await app.inject({
      method: 'POST',
      url: '/v1.47/images/create?fromSrc=-&repo=engine-test/imported&tag=v1&message=hi&changes=CMD%20%5B%22echo%22%5D&changes=ENV%20A%3Db',
      headers: { 'content-type': 'application/x-tar' },
      payload: 'rootfs',
    });
    assert.equal(r.statusCode, 200);
    const lines = r.body.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const id = makeImage('import-rootfs', '2024-03-01T00:00:00Z').id;
    assert.deepEqual(lines, [{ status: id }]);
    assert.deepEqual(archive.imports[0], { changes: ['CMD ["echo"]', 'ENV A=b'], message: 'hi', platform: undefined });
    assert.equal((await app.inject('/images/engine-test/imported:v1/json')).json().Id, id);
    const bad = await app.inject({ method: 'POST', url: '/images/create?fromSrc=-&repo=Bad', payload: 'x', headers: { 'content-type': 'application/x-tar' } });
    assert.equal(bad.statusCode, 400);
  });

  test('pull is answered with an in-band error until implemented; push is 501', async (t) => {
    const { app } = await setup(t);
    const r = await app.inject({ method: 'POST', url: '/images/create?fromImage=docker.io/library/alpine&tag=latest' });
    assert.equal(r.statusCode, 200);
    assert.ok(JSON.parse(r.body.trim()).errorDetail.message);
    assert.equal((await app.inject({ method: 'POST', url: '/images/localhost:5000/a/b/push?tag=1' })).statusCode, 501);
  });

  test('history', async (t) => {
    const { app } = await setup(t);
    await load(app, [BUSYBOX]);
    const h = (await app.inject('/images/busybox/history')).json();
    assert.equal(h[0].Id, BUSYBOX.id);
    assert.deepEqual(h[0].Tags, ['busybox:latest']);
    assert.equal(h[0].CreatedBy, 'ADD busybox');
  });
});
