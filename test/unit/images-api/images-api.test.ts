// The rest of the image API against the real store: history, prune, commit, delete with
// layers and parents, disk usage and the image events the routes record.
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { CommitRequest, ImageCommitPort } from '../../../api/images/commit.ts';
import { chainOf } from '../../../api/images/layers.ts';
import { imageRoutes, type ImageEventsPort } from '../../../api/images/routes.ts';
import type { ImageArchivePort, LoadedImage } from '../../../api/ports.ts';
import { systemRoutes } from '../../../api/system/routes.ts';
import { invalidArgument } from '../../../lib/errors.ts';
import { type ContainerSpec, type ContainerStatus, Containers } from '../../../store/kinds/container.ts';
import type { WatchEvent } from '../../../store/types.ts';

import type { Store } from '../../../store/store.ts';
import { imageReconciler, routeHarness } from '../api/route-harness.ts';
import { containerRecord } from '../container/fake-world.ts';
import { References } from '../../../store/kinds/reference.ts';
import { Images } from '../../../store/kinds/image.ts';
import { loose } from '../store/test-kind.ts';

const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

interface ImageOpts {
  tags?: string[];
  labels?: Record<string, string>;
  layers?: string[];
  history?: Array<Record<string, unknown>>;
  created?: string;
}

function makeImage(seed: string, o: ImageOpts = {}): LoadedImage {
  const diffIds = (o.layers ?? [seed]).map((l) => sha(`layer-${l}`));
  const created = o.created ?? '2024-01-01T00:00:00Z';
  const rawConfig = JSON.stringify({
    architecture: 'amd64', os: 'linux', created,
    config: { Cmd: ['sh'], Labels: o.labels ?? null },
    rootfs: { type: 'layers', diff_ids: diffIds },
    history: o.history ?? diffIds.map((_, i) => ({ created, created_by: `ADD ${seed} ${i}` })),
  });
  const chain = chainOf(diffIds);
  return { id: sha(rawConfig), rawConfig, diffIds, chainId: chain.at(-1) ?? null, size: diffIds.length * 100, repoTags: o.tags ?? [] };
}

class FakeLayers {
  readonly driverName = 'overlay2';
  readonly sizes = new Map<string, number>();
  add(img: LoadedImage, size = 100): void {
    for (const c of chainOf(img.diffIds)) if (!this.sizes.has(c)) this.sizes.set(c, size);
  }
  get(chainId: string): { size: number } | undefined {
    const size = this.sizes.get(chainId);
    return size === undefined ? undefined : { size };
  }
}

class FakeArchive implements ImageArchivePort {
  async load(body: Readable): Promise<LoadedImage[]> {
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(Buffer.from(c));
    return JSON.parse(Buffer.concat(chunks).toString()) as LoadedImage[];
  }
  async importRootfs(): Promise<LoadedImage> {
    throw invalidArgument('not in these tests');
  }
  save(): Readable {
    return Readable.from([Buffer.from('tar')]);
  }
}

class FakeCommit implements ImageCommitPort {
  requests: CommitRequest[] = [];
  /** Phase of the committed container while the commit ran. */
  phases: string[] = [];
  store?: Store;
  next?: LoadedImage;
  async commit(req: CommitRequest): Promise<LoadedImage> {
    this.requests.push(req);
    this.phases.push(this.store?.get(Containers, req.containerId)?.status.phase ?? '');
    if (!this.next) throw new Error('no image prepared');
    return this.next;
  }
}

type Ev = { kind: 'image' | 'container'; action: string; id: string; attrs: Record<string, string> };
class FakeEvents implements ImageEventsPort {
  events: Ev[] = [];
  image(action: string, id: string, name: string, extra: Record<string, string> = {}): void {
    this.events.push({ kind: 'image', action, id, attrs: { ...(name ? { name } : {}), ...extra } });
  }
  container(action: string, c: { name: string }, extra: Record<string, string> = {}): void {
    this.events.push({ kind: 'container', action, id: c.name, attrs: extra });
  }
  actions(): string[] {
    return this.events.map((e) => `${e.kind}:${e.action}`);
  }
}

/** Image reconciler plus a container reconciler that follows desired paused/running. */
function fakeReconcilers(): (store: Store, ev: WatchEvent) => void {
  const images = imageReconciler();
  return (store, ev) => {
    images(store, ev);
    if (ev.kind !== Containers.name) return;
    const c = store.get(Containers, ev.name);
    if (!c || c.status.observedGeneration >= c.generation) return;
    let phase = c.status.phase;
    if (c.spec.desired === 'paused' && phase === 'running') phase = 'paused';
    if (c.spec.desired === 'running' && phase === 'paused') phase = 'running';
    store.updateStatus(Containers, c.name, (s) => ({ ...s, phase, observedGeneration: c.generation }));
  };
}

/** The image and system routes on a fresh real store, closed when the test ends. */
async function setup(t: TestContext, opts: { commit?: boolean } = {}) {
  const layers = new FakeLayers();
  const events = new FakeEvents();
  const commit = new FakeCommit();
  const h = await routeHarness(
    (store) => [
      imageRoutes({ store, archive: new FakeArchive(), waitTimeoutMs: 2000, layers, events, commit: opts.commit === false ? undefined : commit }),
      systemRoutes({
        store,
        info: { info: async () => ({}), components: async () => [] },
        versionInfo: { version: '0.1.0', apiVersion: '1.47', minApiVersion: '1.24', gitCommit: 'x' },
        experimental: false,
        layers,
        sizeRw: async () => 7,
      }),
    ],
    { react: fakeReconcilers() },
  );
  t.after(() => h.close());
  const { store, app } = h;
  commit.store = store;
  const load = async (...images: LoadedImage[]) => {
    for (const i of images) layers.add(i);
    const r = await app.inject({ method: 'POST', url: '/images/load', headers: { 'content-type': 'application/x-tar' }, payload: JSON.stringify(images) });
    assert.equal(r.statusCode, 200);
    assert.doesNotMatch(r.body, /error/);
  };
  return { store, app, layers, events, commit, load };
}

function addContainer(store: Store, id: string, imageId: string, phase: ContainerStatus['phase'], extra: Partial<ContainerSpec> = {}): void {
  const { config, hostConfig, ...spec } = extra;
  const r = containerRecord(id, {
    spec: { imageId, name: `/${id.slice(0, 4)}`, desired: phase === 'running' ? 'running' : 'stopped', ...spec },
    config: { Image: 'busybox', Cmd: ['sh'], Labels: {}, ...config },
    hostConfig,
    status: { phase, observedGeneration: 1 },
  });
  store.create(Containers, id, r.spec, r.status);
}

const prune = (app: Awaited<ReturnType<typeof setup>>['app'], filters?: unknown) =>
  app.inject({ method: 'POST', url: `/v1.47/images/prune${filters ? `?filters=${encodeURIComponent(JSON.stringify(filters))}` : ''}` });

describe('image history', () => {
  test('newest first, layer sizes, empty layers, parents named, missing below', async (t) => {
    const { app, store, load, layers } = await setup(t);
    const created = '2024-01-01T00:00:00Z';
    const base = makeImage('base', {
      tags: ['docker.io/library/base:1'],
      layers: ['a', 'b'],
      history: [
        { created, created_by: 'ADD a' },
        { created, created_by: 'ENV X=1', empty_layer: true },
        { created: '2024-01-02T00:00:00Z', created_by: 'RUN b', comment: 'two' },
      ],
    });
    await load(base);
    const [, second] = chainOf(base.diffIds);
    layers.sizes.set(second, 55);
    const h = (await app.inject('/v1.47/images/base:1/history')).json();
    assert.deepEqual(h, [
      { Id: base.id, Created: Date.parse('2024-01-02T00:00:00Z') / 1000, CreatedBy: 'RUN b', Tags: ['base:1'], Size: 55, Comment: 'two' },
      { Id: '<missing>', Created: Date.parse(created) / 1000, CreatedBy: 'ENV X=1', Tags: null, Size: 0, Comment: '' },
      { Id: '<missing>', Created: Date.parse(created) / 1000, CreatedBy: 'ADD a', Tags: null, Size: 100, Comment: '' },
    ]);

    // A child whose parent is in the store names the parent's entry too.
    const child = makeImage('child', { layers: ['a', 'b', 'c'], history: [{ created, created_by: 'ADD a' }, { created, created_by: 'RUN b' }, { created, created_by: 'sh' }] });
    layers.add(child);
    store.create(Images, child.id, {
      id: child.id, rawConfig: child.rawConfig, diffIds: child.diffIds, chainId: child.chainId, size: 300,
      repoDigests: [], parent: base.id, loadedAt: created, desired: 'present',
    }, { observedGeneration: 1, phase: 'ready', error: '' });
    const hc = (await app.inject(`/images/${child.id}/history`)).json();
    assert.deepEqual(hc.map((e: { Id: string }) => e.Id), [child.id, base.id, '<missing>']);
    assert.equal(hc[0].Tags, null);
    assert.deepEqual(hc[1].Tags, ['base:1']);

    const none = makeImage('nohistory', { history: [] });
    await load(none);
    assert.deepEqual((await app.inject(`/images/${none.id}/history`)).json(), []);
    assert.equal((await app.inject('/images/nosuch/history')).statusCode, 404);
  });
});

describe('image prune', () => {
  test('default: dangling images only; in use and tagged stay; events and reclaimed space', async (t) => {
    const { app, store, load, events, layers } = await setup(t);
    const tagged = makeImage('tagged', { tags: ['docker.io/library/tagged:latest'] });
    const dangling = makeImage('dangling');
    const used = makeImage('used');
    await load(tagged, dangling, used);
    layers.sizes.set(chainOf(dangling.diffIds)[0], 4096);
    addContainer(store, 'c'.repeat(64), used.id, 'exited');
    events.events.length = 0;

    const r = await prune(app);
    assert.equal(r.statusCode, 200);
    assert.deepEqual(r.json(), {
      ImagesDeleted: [{ Deleted: dangling.id }, { Deleted: chainOf(dangling.diffIds)[0] }],
      SpaceReclaimed: 4096,
    });
    assert.equal(store.get(Images, dangling.id), undefined);
    assert.ok(store.get(Images, tagged.id));
    assert.ok(store.get(Images, used.id));
    assert.deepEqual(events.events, [{ kind: 'image', action: 'prune', id: '', attrs: { reclaimed: '4096' } }]);

    const again = await prune(app, { dangling: ['true'] });
    assert.deepEqual(again.json(), { ImagesDeleted: null, SpaceReclaimed: 0 });
  });

  test('dangling=false removes every unused image, untagging first; shared layers stay', async (t) => {
    const { app, store, load, events } = await setup(t);
    const a = makeImage('a', { tags: ['docker.io/library/a:1', 'docker.io/library/a:2'], layers: ['shared', 'a'] });
    const b = makeImage('b', { tags: ['docker.io/library/b:latest'], layers: ['shared', 'b'] });
    const used = makeImage('used', { tags: ['docker.io/library/used:latest'] });
    await load(a, b, used);
    addContainer(store, 'd'.repeat(64), used.id, 'running');
    events.events.length = 0;

    const r = await prune(app, { dangling: { false: true } });
    assert.equal(r.statusCode, 200);
    const body = r.json();
    const deleted = body.ImagesDeleted.filter((x: object) => 'Deleted' in x).map((x: { Deleted: string }) => x.Deleted);
    const untagged = body.ImagesDeleted.filter((x: object) => 'Untagged' in x).map((x: { Untagged: string }) => x.Untagged);
    assert.deepEqual(untagged.sort(), ['a:1', 'a:2', 'b:latest']);
    const [shared] = chainOf(a.diffIds);
    assert.ok(deleted.includes(a.id) && deleted.includes(b.id));
    assert.ok(deleted.includes(shared), 'the shared layer goes with the second image');
    assert.equal(deleted.filter((d: string) => d === shared).length, 1);
    assert.equal(body.SpaceReclaimed, 300);
    assert.ok(store.get(Images, used.id));
    assert.equal(store.list(References).length, 1);
    assert.deepEqual(events.actions().sort(), ['image:prune', 'image:untag', 'image:untag', 'image:untag']);
    assert.equal(events.events.find((e) => e.action === 'untag')!.attrs.name.startsWith('sha256:'), true);
  });

  test('label, label! and until filters; bad filters are 400; minimum API version', async (t) => {
    const { app, store, load } = await setup(t);
    const old = makeImage('old', { labels: { keep: 'no', team: 'x' }, created: '2020-01-01T00:00:00Z' });
    const fresh = makeImage('fresh', { labels: { keep: 'no' }, created: new Date().toISOString() });
    const keep = makeImage('keep', { labels: { keep: 'yes' }, created: '2020-01-01T00:00:00Z' });
    await load(old, fresh, keep);
    const r = await prune(app, { label: ['keep=no'], until: ['24h'] });
    assert.deepEqual(r.json().ImagesDeleted, [{ Deleted: old.id }, { Deleted: chainOf(old.diffIds)[0] }]);
    const notKeep = await prune(app, { 'label!': ['keep=yes'] });
    assert.deepEqual(notKeep.json().ImagesDeleted.map((x: { Deleted: string }) => x.Deleted), [fresh.id, chainOf(fresh.diffIds)[0]]);
    assert.ok(store.get(Images, keep.id));

    const bad = await prune(app, { nope: ['x'] });
    assert.equal(bad.statusCode, 400);
    assert.deepEqual(bad.json(), { message: "invalid filter 'nope'" });
    assert.deepEqual((await prune(app, { dangling: ['maybe'] })).json(), { message: "invalid filter 'dangling=maybe'" });
    assert.equal((await prune(app, { until: ['1h', '2h'] })).statusCode, 400);
    const v124 = await app.inject({ method: 'POST', url: '/v1.24/images/prune' });
    assert.equal(v124.statusCode, 400);
    assert.equal(v124.json().message, 'POST /v1.24/images/prune requires minimum API version 1.25');
  });

  test('an untagged parent goes with its last child; intermediate images are not pruned alone', async (t) => {
    const { app, store, load } = await setup(t);
    const parent = makeImage('parent');
    await load(parent);
    const child = makeImage('child', { layers: ['parent', 'child'], tags: ['docker.io/library/child:latest'] });
    await load(child);
    store.updateSpec(Images, child.id, (s) => ({ ...s, parent: parent.id }));
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual((await prune(app)).json().ImagesDeleted, null);
    const all = (await prune(app, { dangling: ['false'] })).json().ImagesDeleted;
    assert.deepEqual(all.filter((x: object) => !('Deleted' in x && x.Deleted !== child.id && x.Deleted !== parent.id)), [
      { Untagged: 'child:latest' }, { Deleted: child.id }, { Deleted: parent.id },
    ]);
    assert.equal(store.list(Images).length, 0);
  });
});

describe('image delete with layers and parents', () => {
  test('rmi reports released layers and deletes untagged unused parents unless noprune', async (t) => {
    const { app, store, load, events } = await setup(t);
    const parent = makeImage('p', { layers: ['p'] });
    const child = makeImage('c', { layers: ['p', 'c'], tags: ['docker.io/library/c:latest'] });
    await load(parent, child);
    store.updateSpec(Images, child.id, (s) => ({ ...s, parent: parent.id }));
    await new Promise((r) => setTimeout(r, 10));
    const short = parent.id.slice(7, 19);
    const conflictRes = await app.inject({ method: 'DELETE', url: `/images/${parent.id}` });
    assert.equal(conflictRes.statusCode, 409);
    assert.equal(conflictRes.json().message, `conflict: unable to delete ${short} (cannot be forced) - image has dependent child images`);

    events.events.length = 0;
    const r = await app.inject({ method: 'DELETE', url: '/images/c' });
    const [pc, cc] = chainOf(child.diffIds);
    assert.deepEqual(r.json(), [{ Untagged: 'c:latest' }, { Deleted: child.id }, { Deleted: cc }, { Deleted: parent.id }, { Deleted: pc }]);
    assert.deepEqual(events.events, [{ kind: 'image', action: 'untag', id: child.id, attrs: { name: child.id } }]);
    assert.equal(store.list(Images).length, 0);

    const p2 = makeImage('p2');
    const c2 = makeImage('c2', { layers: ['p2', 'c2'], tags: ['docker.io/library/c2:latest'] });
    await load(p2, c2);
    store.updateSpec(Images, c2.id, (s) => ({ ...s, parent: p2.id }));
    await new Promise((r) => setTimeout(r, 10));
    const kept = await app.inject({ method: 'DELETE', url: '/images/c2?noprune=1' });
    assert.deepEqual(kept.json(), [{ Untagged: 'c2:latest' }, { Deleted: c2.id }, { Deleted: chainOf(c2.diffIds)[1] }]);
    assert.ok(store.get(Images, p2.id));
  });
});

describe('commit', () => {
  const committed = makeImage('committed', { layers: ['base', 'rw'] });

  test('pauses a running container, records the image with its parent, tags it, answers 201', async (t) => {
    const { app, store, load, commit, events } = await setup(t);
    const base = makeImage('base', { tags: ['docker.io/library/busybox:latest'] });
    await load(base);
    const id = 'e'.repeat(64);
    addContainer(store, id, base.id, 'running');
    commit.next = committed;
    events.events.length = 0;
    const r = await app.inject({
      method: 'POST',
      url: `/v1.47/commit?container=${id.slice(0, 6)}&repo=mine/app&tag=v2&comment=hello&author=me&changes=${encodeURIComponent('CMD ["echo","x"]')}&changes=ENV%20A%3Db`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ Env: ['X=1'], HostConfig: {} }),
    });
    assert.equal(r.statusCode, 201, r.body);
    assert.deepEqual(r.json(), { Id: committed.id });
    assert.deepEqual(commit.phases, ['paused']);
    const req = commit.requests[0];
    assert.equal(req.containerId, id);
    assert.deepEqual(req.changes, ['CMD ["echo","x"]', 'ENV A=b']);
    assert.deepEqual(req.config, { Env: ['X=1'] });
    assert.equal(req.author, 'me');
    assert.equal(req.comment, 'hello');
    assert.equal(req.parent?.rawConfig, base.rawConfig);
    assert.equal(store.get(Containers, id)?.status.phase, 'running');
    const img = store.get(Images, committed.id)!;
    assert.equal(img.spec.parent, base.id);
    assert.equal((await app.inject('/images/mine/app:v2/json')).json().Id, committed.id);
    assert.deepEqual(events.events.filter((e) => e.action === 'tag' || e.action === 'commit'), [
      { kind: 'image', action: 'tag', id: committed.id, attrs: { name: 'mine/app:v2' } },
      { kind: 'container', action: 'commit', id, attrs: { comment: 'hello', imageID: committed.id, imageRef: 'mine/app:v2' } },
    ]);
  });

  test('pause=0 and stopped containers are committed as they are; no body means the container config', async (t) => {
    const { app, store, load, commit } = await setup(t);
    const base = makeImage('base');
    await load(base);
    addContainer(store, 'f'.repeat(64), base.id, 'running');
    addContainer(store, '1'.repeat(64), base.id, 'exited');
    commit.next = committed;
    const r = await app.inject({ method: 'POST', url: `/commit?container=${'f'.repeat(64)}&pause=0` });
    assert.equal(r.statusCode, 201);
    const s = await app.inject({ method: 'POST', url: `/commit?container=${'1'.repeat(12)}` });
    assert.equal(s.statusCode, 201);
    assert.deepEqual(commit.phases, ['running', 'exited']);
    assert.equal(commit.requests[0].config, null);
  });

  test('errors: missing container, bad reference, dead container, wrong content type, no committer', async (t) => {
    const { app, store, load, commit } = await setup(t);
    const base = makeImage('base');
    await load(base);
    const nf = await app.inject({ method: 'POST', url: '/commit?container=nosuch' });
    assert.equal(nf.statusCode, 404);
    assert.deepEqual(nf.json(), { message: 'No such container: nosuch' });
    assert.equal((await app.inject({ method: 'POST', url: '/commit' })).statusCode, 400);
    addContainer(store, '2'.repeat(64), base.id, 'running');
    const bad = await app.inject({ method: 'POST', url: `/commit?container=${'2'.repeat(64)}&repo=Bad` });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().message, /invalid reference format/);
    addContainer(store, '3'.repeat(64), base.id, 'dead');
    const dead = await app.inject({ method: 'POST', url: `/commit?container=${'3'.repeat(64)}` });
    assert.equal(dead.statusCode, 409);
    assert.equal(dead.json().message, `You cannot commit container ${'3'.repeat(64)} which is Dead`);
    const ct = await app.inject({ method: 'POST', url: `/commit?container=${'2'.repeat(64)}`, headers: { 'content-type': 'text/plain' }, payload: 'x' });
    assert.equal(ct.statusCode, 400);
    assert.equal(ct.json().message, "unsupported Content-Type header (text/plain): must be 'application/json'");
    // The body is a create body to the reference's decoder: the same type errors, before anything is paused.
    for (const [payload, message] of [
      [{ Env: 5 }, 'json: cannot unmarshal number into Go struct field ContainerConfigWrapper.Env of type []string'],
      [{ Labels: { a: 1 } }, 'json: cannot unmarshal number into Go struct field ContainerConfigWrapper.Labels of type string'],
      [[1], 'json: cannot unmarshal array into Go value of type runconfig.ContainerConfigWrapper'],
    ] as const) {
      const r = await app.inject({ method: 'POST', url: `/commit?container=${'2'.repeat(64)}`, payload: payload as object });
      assert.equal(r.statusCode, 400, JSON.stringify(payload));
      assert.equal(r.json().message, message);
    }
    assert.equal(commit.requests.length, 0);
    const none = await setup(t, { commit: false });
    assert.equal((await none.app.inject({ method: 'POST', url: '/commit?container=x' })).statusCode, 501);
  });

  test('a failing commit still unpauses the container', async (t) => {
    const { app, store, load } = await setup(t);
    const base = makeImage('base');
    await load(base);
    const id = '4'.repeat(64);
    addContainer(store, id, base.id, 'running');
    const r = await app.inject({ method: 'POST', url: `/commit?container=${id}` });
    assert.equal(r.statusCode, 500);
    assert.equal(store.get(Containers, id)?.status.phase, 'running');
    assert.equal(store.get(Containers, id)?.spec.desired, 'running');
  });
});

describe('events recorded by image routes', () => {
  test('load, tag, save', async (t) => {
    const { app, load, events } = await setup(t);
    const img = makeImage('ev', { tags: ['docker.io/library/ev:latest'] });
    await load(img);
    await app.inject({ method: 'POST', url: '/images/ev/tag?repo=other&tag=1' });
    const saved = await app.inject('/images/get?names=ev&names=other:1');
    assert.equal(saved.statusCode, 200);
    assert.deepEqual(events.events, [
      { kind: 'image', action: 'load', id: img.id, attrs: { name: img.id } },
      { kind: 'image', action: 'tag', id: img.id, attrs: { name: 'other:1' } },
      { kind: 'image', action: 'save', id: img.id, attrs: { name: img.id } },
    ]);
  });
});

describe('disk usage', () => {
  test('distinct layer bytes, shared sizes, container counts and sizes', async (t) => {
    const { app, store, load } = await setup(t);
    const a = makeImage('a', { layers: ['shared', 'a'], tags: ['docker.io/library/a:latest'] });
    const b = makeImage('b', { layers: ['shared', 'b'], created: '2025-01-01T00:00:00Z' });
    await load(a, b);
    addContainer(store, '5'.repeat(64), a.id, 'exited', { created: '2024-01-01T00:00:00Z', path: 'sh', args: [], hostConfig: { NetworkMode: 'none' } } as unknown as Partial<ContainerSpec>);
    const df = (await app.inject('/v1.47/system/df')).json();
    assert.equal(df.LayersSize, 300);
    assert.deepEqual(df.Images.map((i: { Id: string }) => i.Id), [b.id, a.id]);
    assert.equal(df.Images[1].Containers, 1);
    assert.equal(df.Images[1].SharedSize, 100);
    assert.equal(df.Images[1].Size, 200);
    assert.deepEqual(df.Images[1].RepoTags, ['a:latest']);
    assert.equal(df.Images[0].Containers, 0);
    assert.equal(df.Containers.length, 1);
    assert.equal(df.Containers[0].SizeRw, 7);
    assert.equal(df.Containers[0].SizeRootFs, 7 + 200);
    assert.deepEqual(df.BuildCache, []);
    const list = (await app.inject('/images/json?shared-size=1')).json();
    assert.deepEqual(list.map((i: { SharedSize: number }) => i.SharedSize), [100, 100]);
  });
});

describe('events recorder for images', () => {
  test('image() adds the image labels; tags are not derived from the store; deletes are', async (t) => {
    const { EventRecorder } = await import('../../../api/events/recorder.ts');
    const h = await routeHarness(() => [], { react: imageReconciler() });
    t.after(() => h.close());
    const store = h.store;
    let watcher: ((ev: import('../../../store/types.ts').WatchEvent) => void) | undefined;
    const rec = new EventRecorder({
      list: (k) => store.list(k),
      get: (k, n) => store.get(k, n),
      watch: ((_kind: unknown, fn: NonNullable<typeof watcher>) => {
        watcher = fn;
        return () => {};
      }) as import('../../../api/events/recorder.ts').EventStore['watch'],
    });
    const img = makeImage('labelled', { labels: { team: 'x' } });
    store.create(Images, img.id, {
      id: img.id, rawConfig: img.rawConfig, diffIds: img.diffIds, chainId: img.chainId, size: 1, repoDigests: [], parent: '', loadedAt: '', desired: 'present',
    }, { observedGeneration: 1, phase: 'ready', error: '' });
    store.create(References, 'docker.io/library/labelled:latest', { imageId: img.id }, {});
    const seen: Array<{ Action: string; Actor: { ID: string; Attributes: Record<string, string> } }> = [];
    rec.subscribe((e) => seen.push(e));
    const r = store.get(References, 'docker.io/library/labelled:latest')!;
    watcher!({ type: 'put', revision: 1, kind: References.name, name: r.name, resource: r });
    rec.image('tag', img.id, 'labelled:latest');
    rec.image('pull', 'labelled:latest', 'labelled');
    watcher!({ type: 'delete', revision: 2, kind: Images.name, name: img.id, resource: store.get(loose(Images), img.id)! });
    assert.deepEqual(seen.map((e) => [e.Action, e.Actor.ID, e.Actor.Attributes]), [
      ['tag', img.id, { team: 'x', name: 'labelled:latest' }],
      ['pull', 'labelled:latest', { team: 'x', name: 'labelled' }],
      ['delete', img.id, { name: img.id }],
    ]);
  });
});
