// Name lookups answer from an index kept up to date by every write, delete and rollback.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { openStore, type Store } from '../../../store/store.ts';
import type { IndexDef } from '../../../store/types.ts';
import { testKind } from './test-kind.ts';

const K_OTHER = testKind('other');
const K_THING = testKind('thing');

interface Spec {
  name: string;
  tags?: string[];
}

const BY_NAME: IndexDef<Spec, unknown> = { kind: 'thing', name: 'name', keys: (r) => [r.spec.name] };
const BY_TAG: IndexDef<Spec, unknown> = { kind: 'thing', name: 'tag', keys: (r) => r.spec.tags ?? [] };

let dir: string;
let store: Store;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engine-index-'));
  store = openStore(join(dir, 'engine.db'));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const names = (rs: Array<{ name: string }>) => rs.map((r) => r.name).sort();

test('an index built on first use follows creates, renames and deletes', () => {
  store.create(K_THING, 'a', { name: '/web', tags: ['x', 'y'] }, {});
  store.create(K_THING, 'b', { name: '/db', tags: ['y'] }, {});
  store.create(K_OTHER, 'c', { name: '/web' }, {});
  assert.deepEqual(names(store.byIndex(BY_NAME, '/web')), ['a'], 'only its kind');
  assert.deepEqual(names(store.byIndex(BY_TAG, 'y')), ['a', 'b']);
  store.updateSpec(K_THING, 'a', (s) => ({ ...s, name: '/api', tags: ['x'] }));
  assert.deepEqual(store.byIndex(BY_NAME, '/web'), []);
  assert.deepEqual(names(store.byIndex(BY_NAME, '/api')), ['a']);
  assert.equal(store.byIndex(BY_NAME, '/api')[0]!.spec.name, '/api', 'the current version');
  assert.deepEqual(names(store.byIndex(BY_TAG, 'y')), ['b']);
  store.delete(K_THING, 'b');
  assert.deepEqual(store.byIndex(BY_TAG, 'y'), []);
  assert.deepEqual(store.byIndex(BY_NAME, '/db'), []);
});

test('a transaction that throws leaves the index as it was; reads inside it see its writes', () => {
  store.create(K_THING, 'a', { name: '/web' }, {});
  assert.deepEqual(names(store.byIndex(BY_NAME, '/web')), ['a']);
  assert.throws(() =>
    store.transaction((tx) => {
      tx.delete(K_THING, 'a');
      tx.create(K_THING, 'b', { name: '/web' }, {});
      tx.updateSpec(K_THING, 'b', (s) => ({ ...s, name: '/new' }));
      assert.deepEqual(names(tx.byIndex(BY_NAME, '/new')), ['b']);
      assert.deepEqual(tx.byIndex(BY_NAME, '/web'), []);
      throw new Error('boom');
    }),
  );
  assert.deepEqual(names(store.byIndex(BY_NAME, '/web')), ['a']);
  assert.deepEqual(store.byIndex(BY_NAME, '/new'), []);
});
