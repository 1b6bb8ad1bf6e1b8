// Scopes (store/scope.ts): a store opened under another storage driver hides the first driver's
// images, tags and containers (and those containers' endpoints and execs) without deleting them;
// opened under the first again, it shows them as they were.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { driverScope } from '../../../store/kinds/index.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { testKind } from './test-kind.ts';

const image = testKind('image');
const reference = testKind('reference');
const container = testKind('container');
const endpoint = testKind('endpoint');
const exec = testKind('exec');
const network = testKind('network');
const volume = testKind('volume');

let dir: string;
let path: string;
let store: Store | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engine-scope-'));
  path = join(dir, 'engine.db');
});
afterEach(() => {
  store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const open = (driver: string | undefined) => {
  store?.close();
  store = openStore(path, driver === undefined ? {} : { scope: driverScope(driver) });
  return store;
};
const names = (s: Store) => ({
  image: s.list(image).map((r) => r.name).sort(),
  reference: s.list(reference).map((r) => r.name).sort(),
  container: s.list(container).map((r) => r.name).sort(),
  endpoint: s.list(endpoint).map((r) => r.name).sort(),
  exec: s.list(exec).map((r) => r.name).sort(),
  network: s.list(network).map((r) => r.name).sort(),
  volume: s.list(volume).map((r) => r.name).sort(),
});

test('another driver hides the images, tags and containers (their endpoints and execs) of the first; the first again shows them; networks and volumes are everyone\'s', () => {
  // A store made before scopes: its records are the first driver's.
  let s = open(undefined);
  s.create(image, 'sha256:a', { id: 'sha256:a' }, {});
  s.create(reference, 'busybox:latest', { imageId: 'sha256:a' }, {});
  s.create(container, 'c1', { name: 'web' }, { phase: 'exited' });
  s.create(endpoint, 'c1/n1', { containerId: 'c1', networkId: 'n1' }, {});
  s.create(endpoint, 'gone/n1', { containerId: 'gone', networkId: 'n1' }, {});
  s.create(exec, 'e1', { containerId: 'c1' }, {});
  s.create(network, 'n1', { name: 'n1' }, {});
  s.create(volume, 'v1', { name: 'v1' }, {});

  s = open('overlay2');
  const first = names(s);
  assert.deepEqual(first, { image: ['sha256:a'], reference: ['busybox:latest'], container: ['c1'], endpoint: ['c1/n1', 'gone/n1'], exec: ['e1'], network: ['n1'], volume: ['v1'] });

  s = open('vfs');
  assert.deepEqual(names(s), { image: [], reference: [], container: [], endpoint: ['gone/n1'], exec: [], network: ['n1'], volume: ['v1'] });
  // The second driver's own: the same image id, a tag, a container of the same name.
  s.create(image, 'sha256:a', { id: 'sha256:a', other: true }, {});
  s.create(container, 'c2', { name: 'web' }, {});
  s.create(endpoint, 'c2/n1', { containerId: 'c2', networkId: 'n1' }, {});
  const rev = s.revision;

  s = open('overlay2');
  assert.deepEqual(names(s), first);
  assert.equal(s.get(image, 'sha256:a')?.spec.other, undefined, 'the first driver\'s record, as it was');
  assert.deepEqual(s.get(container, 'c1')?.status, { phase: 'exited' });
  assert.ok(s.revision >= rev);

  s = open('vfs');
  assert.deepEqual(names(s), { image: ['sha256:a'], reference: [], container: ['c2'], endpoint: ['c2/n1', 'gone/n1'], exec: [], network: ['n1'], volume: ['v1'] });
  assert.equal(s.get(image, 'sha256:a')?.spec.other, true);
  // The same driver again moves nothing.
  s = open('vfs');
  assert.deepEqual(names(s).container, ['c2']);
});
