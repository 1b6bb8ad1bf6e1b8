// The commit driver: config merge, the empty-diff check, and the image a commit produces on an
// in-memory layer store.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import pino from 'pino';
import { commitContainer, emptyTar, mergeConfig, withoutMountPoints } from '../../../drivers/image/commit.ts';
import { FakeLayerStore } from '../image/fake-layer-store.ts';
import { digest, makeTar, readTar } from '../image/tar-helpers.ts';

class RWLayers extends FakeLayerStore {
  rw = new Map<string, Buffer>();
  override hasRW(id?: string): boolean {
    return this.rw.has(id ?? '');
  }
  tarRW(id: string): Readable {
    return Readable.from([this.rw.get(id)!], { objectMode: false });
  }
}

const log = pino({ level: 'silent' });
const platform = { os: 'linux', architecture: 'amd64' };

describe('commit driver', () => {
  test('mergeConfig fills what the new config leaves unset, env and labels key by key', () => {
    const base = {
      User: 'u', Env: ['A=1', 'B=2'], Labels: { x: '1', y: '2' }, Cmd: ['sh'], Entrypoint: ['/init'], WorkingDir: '/w',
      ExposedPorts: { '80/tcp': {} }, Volumes: { '/v': {} }, StopSignal: 'SIGINT',
    };
    const m = mergeConfig({ Env: ['B=3'], Labels: { y: 'n' }, Cmd: ['echo'], ExposedPorts: { '81/tcp': {} } }, base);
    assert.deepEqual(m.Env, ['B=3', 'A=1']);
    assert.deepEqual(m.Labels, { y: 'n', x: '1' });
    assert.deepEqual(m.Cmd, ['echo']);
    assert.deepEqual(m.Entrypoint, ['/init']);
    assert.deepEqual(m.ExposedPorts, { '81/tcp': {}, '80/tcp': {} });
    assert.equal(m.User, 'u');
    assert.equal(m.WorkingDir, '/w');
    assert.deepEqual(m.Volumes, { '/v': {} });
    assert.equal(m.StopSignal, 'SIGINT');
    // An entrypoint of its own keeps the new config's (possibly empty) Cmd.
    const e = mergeConfig({ Entrypoint: ['/x'], Cmd: null }, base);
    assert.equal(e.Cmd, null);
    assert.deepEqual(e.Entrypoint, ['/x']);
  });

  test('emptyTar tells an archive without entries and gives the bytes back otherwise', async () => {
    const none = await emptyTar(Readable.from([Buffer.alloc(1024)]));
    assert.equal(none.empty, true);
    const tar = await makeTar([{ name: 'a.txt', data: 'hi' }]);
    const some = await emptyTar(Readable.from([tar.subarray(0, 100), tar.subarray(100)]));
    assert.equal(some.empty, false);
    const files = await readTar(some.stream);
    assert.equal(files.get('a.txt')?.toString(), 'hi');
  });

  test('the runtime mount-point placeholders are left out of the diff', async () => {
    const only = await makeTar([{ name: 'etc/', dir: true }, { name: 'etc/hostname', data: '' }, { name: 'etc/hosts', data: '' }, { name: 'etc/resolv.conf', data: '' }]);
    const none = await emptyTar(Readable.from(withoutMountPoints(Readable.from([only])), { objectMode: false }));
    assert.equal(none.empty, true);
    const mixed = await makeTar([
      { name: 'etc/', dir: true }, { name: 'etc/hosts', data: '' }, { name: 'etc/passwd', data: 'root:x:0:0' }, { name: 'etc/resolv.conf', data: 'nameserver 1.1.1.1' },
      { name: 'tmp/', dir: true }, { name: 'tmp/a', data: 'a' },
    ]);
    const files = await readTar(withoutMountPoints(Readable.from([mixed])));
    assert.deepEqual([...files.keys()], ['etc/', 'etc/passwd', 'etc/resolv.conf', 'tmp/', 'tmp/a']);
    assert.equal(files.get('etc/passwd')?.toString(), 'root:x:0:0');
    const noEtc = await makeTar([{ name: 'etc/', dir: true }, { name: 'etc/hosts', data: '' }, { name: 'x', data: 'y' }]);
    assert.deepEqual([...(await readTar(withoutMountPoints(Readable.from([noEtc])))).keys()], ['x']);
  });

  test('a commit adds the RW diff as a layer, a history entry and the applied changes', async () => {
    const layers = new RWLayers();
    const baseTar = await makeTar([{ name: 'bin/sh', data: 'sh' }]);
    const base = await layers.applyLayer(null, Readable.from([baseTar]));
    const parentConfig = {
      architecture: 'arm64', variant: 'v8', os: 'linux', config: { Cmd: ['sh'], Env: ['PATH=/bin'] },
      rootfs: { type: 'layers', diff_ids: [base.diffId] }, history: [{ created: '2024-01-01T00:00:00Z', created_by: 'ADD rootfs' }],
    };
    const rwTar = await makeTar([{ name: 'file.txt', data: 'written' }]);
    layers.rw.set('c1', rwTar);
    const containerConfig = { Hostname: 'c1', Image: 'busybox', Cmd: ['sh', '-c', 'echo written > /file.txt'], Env: ['PATH=/bin'], Labels: {} };
    const li = await commitContainer({ layers, log, platform }, {
      containerId: 'c1',
      parent: { rawConfig: JSON.stringify(parentConfig), diffIds: [base.diffId], chainId: base.chainId, size: base.size },
      config: null, containerConfig, changes: ['CMD ["echo","committed"]', 'LABEL a=b'], author: 'me', comment: 'msg',
    }, new AbortController().signal);

    assert.equal(li.id, digest(li.rawConfig));
    assert.equal(li.diffIds.length, 2);
    assert.equal(li.diffIds[0], base.diffId);
    assert.equal(li.chainId, layers.chainIdOf(base.chainId, li.diffIds[1]));
    const layer = layers.get(li.chainId!)!;
    assert.equal(li.size, base.size + layer.size);
    assert.equal((await readTar(layers.layerTar(li.chainId!))).get('file.txt')?.toString(), 'written');
    const cfg = JSON.parse(li.rawConfig);
    assert.deepEqual(Object.keys(cfg), [...Object.keys(cfg)].sort(), 'top-level keys sorted as the reference daemon writes them');
    assert.equal(cfg.architecture, 'arm64');
    assert.equal(cfg.variant, 'v8');
    assert.equal(cfg.author, 'me');
    assert.equal(cfg.comment, 'msg');
    assert.equal(cfg.container, 'c1');
    assert.deepEqual(cfg.container_config, containerConfig);
    assert.deepEqual(cfg.config.Cmd, ['echo', 'committed']);
    assert.deepEqual(cfg.config.Labels, { a: 'b' });
    assert.equal(cfg.config.Hostname, 'c1');
    assert.deepEqual(cfg.rootfs.diff_ids, li.diffIds);
    assert.equal(cfg.history.length, 2);
    assert.deepEqual({ ...cfg.history[1], created: 'x' }, { created: 'x', author: 'me', created_by: 'sh -c echo written > /file.txt', comment: 'msg' });
    assert.equal(cfg.history[1].created, cfg.created);
  });

  test('an unchanged container adds no layer, only an empty_layer history entry', async () => {
    const layers = new RWLayers();
    layers.rw.set('c2', Buffer.alloc(1024));
    const li = await commitContainer({ layers, log, platform }, {
      containerId: 'c2', parent: null, config: { Cmd: ['true'] }, containerConfig: { Cmd: ['sh'] }, changes: [], author: '', comment: '',
    }, new AbortController().signal);
    assert.deepEqual(li.diffIds, []);
    assert.equal(li.chainId, null);
    assert.equal(layers.applied.length, 0);
    const cfg = JSON.parse(li.rawConfig);
    assert.equal(cfg.history[0].empty_layer, true);
    assert.equal(cfg.architecture, 'amd64');
    assert.deepEqual(cfg.config.Cmd, ['true']);
  });

  test('bad changes fail before any layer work; a missing RW layer is not found', async () => {
    const layers = new RWLayers();
    layers.rw.set('c3', await makeTar([{ name: 'x', data: 'y' }]));
    const req = { containerId: 'c3', parent: null, config: null, containerConfig: {}, changes: ['RUN echo'], author: '', comment: '' };
    await assert.rejects(commitContainer({ layers, log, platform }, req, new AbortController().signal), { code: 'InvalidArgument', message: 'run is not a valid change command' });
    assert.equal(layers.applied.length, 0);
    await assert.rejects(commitContainer({ layers, log, platform }, { ...req, containerId: 'nope', changes: [] }, new AbortController().signal), { code: 'NotFound' });
  });
});
