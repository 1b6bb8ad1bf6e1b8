// The controller builder: the declared watches map another kind's changes to keys (tested on their
// own through keysFor), and a built controller delivers watches, owned records and outside sources
// to its reconciler while it runs, and nothing once stopped.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { controller } from '../../../controllers/builder.ts';
import { KeySource } from '../../../controllers/source.ts';
import { containerController } from '../../../reconcilers/container/controller.ts';
import { EMPTY_ENDPOINT_STATUS, endpointName, Endpoints, type EndpointSpec } from '../../../store/kinds/endpoint.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { testKind } from '../store/test-kind.ts';
import { fakeLog } from './fake-log.ts';

const Parents = testKind<{ n: number }, Record<string, never>>('parent');
const Children = testKind<{ parent: string }, Record<string, never>>('child');
const Others = testKind<{ tags: string[] }, Record<string, never>>('other');

let dir: string;
let store: Store;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engine-builder-'));
  store = openStore(join(dir, 'engine.db'));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const endpoint = (spec: Partial<EndpointSpec>) =>
  store.create(Endpoints, endpointName(spec.containerId ?? 'c1', spec.networkId ?? 'n1'), { containerId: 'c1', networkId: 'n1', networkName: 'n1', config: {}, desired: 'present', ...spec }, EMPTY_ENDPOINT_STATUS);

test('the container controller wakes a container when its primary endpoint is marked removed or deleted, not for other endpoint changes', () => {
  const b = containerController({ exits: new KeySource() }, { probeEnds: new KeySource() });
  const primary = endpoint({ primary: true });
  const extra = endpoint({ networkId: 'n2', networkName: 'n2' });
  const keys = (type: 'put' | 'delete', r: typeof primary) => b.keysFor({ type, kind: Endpoints.name, resource: r }, store);
  assert.deepEqual(keys('put', primary), [], 'a primary endpoint written as present');
  const removed = store.updateSpec(Endpoints, primary.name, (s) => ({ ...s, desired: 'removed' }));
  assert.deepEqual(keys('put', removed), ['c1']);
  assert.deepEqual(keys('delete', primary), ['c1']);
  assert.deepEqual(keys('delete', extra), [], 'an extra endpoint is the endpoint reconciler’s');
  assert.deepEqual(b.keysFor({ type: 'put', kind: 'volume', resource: primary }, store), [], 'a kind it does not watch');
});

test('a built controller reconciles its own kind, what its watches and owned records map to, and its sources, until stopped', async () => {
  const seen: string[] = [];
  const exits = new KeySource();
  const ctl = controller('parent')
    .for(Parents)
    .owns(Children, (c) => c.spec.parent)
    .watches(Others, (o, { store: s }) => o.spec.tags.filter((t) => s.get(Parents, t)))
    .source(exits, (id: string) => `p-${id}`)
    .workers(1)
    .build({ store, reconciler: { reconcile: async (key) => void seen.push(key) }, log: fakeLog() });
  store.create(Parents, 'p-a', { n: 1 }, {});
  store.create(Parents, 'p-b', { n: 1 }, {});
  await ctl.start();
  const settle = async (n: number) => {
    for (let i = 0; i < 200 && seen.length < n; i++) await new Promise((r) => setImmediate(r));
  };
  await settle(2);
  assert.deepEqual(seen.splice(0).sort(), ['p-a', 'p-b'], 'the resync at start');
  store.create(Children, 'c1', { parent: 'p-b' }, {});
  await settle(1);
  assert.deepEqual(seen.splice(0), ['p-b'], 'an owned record wakes its owner');
  store.create(Others, 'o1', { tags: ['p-a', 'p-missing'] }, {});
  await settle(1);
  assert.deepEqual(seen.splice(0), ['p-a'], 'a watched record wakes what its map answers');
  exits.emit('b');
  await settle(1);
  assert.deepEqual(seen.splice(0), ['p-b'], 'a source emits keys through its map');
  await ctl.stop();
  exits.emit('a');
  store.create(Children, 'c2', { parent: 'p-a' }, {});
  store.updateSpec(Parents, 'p-a', (s) => ({ ...s, n: 2 }));
  await settle(1);
  assert.deepEqual(seen, [], 'nothing reaches a stopped controller');
  assert.equal(store.watcherCount, 0, 'its watches are gone');
});

test('a controller declared without its kind is refused when bound', () => {
  assert.throws(() => controller('nothing').build({ store, reconciler: { reconcile: async () => {} }, log: fakeLog() }), /no kind/);
});
