// ensureImageRecord on the real store: an image whose earlier load failed is verified again when it
// is loaded again (its record gets a new generation), and a second failure is answered.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ensureImageRecord } from '../../../api/images/records.ts';
import { Images } from '../../../store/kinds/image.ts';
import { imageReconciler, routeHarness, type RouteHarness } from './route-harness.ts';

let h: RouteHarness;
let failing = true;

before(async () => {
  h = await routeHarness(() => [], { react: imageReconciler({ fail: () => (failing ? 'layer sha256:0 is missing' : undefined) }) });
});
after(() => h.close());

const loaded = { id: `sha256:${'c'.repeat(64)}`, rawConfig: '{}', diffIds: [], chainId: null, size: 0, repoTags: [] };

test('a failed image is verified again on the next load', async () => {
  const opts = { signal: new AbortController().signal, timeoutMs: 2000 };
  await assert.rejects(ensureImageRecord(h.store, loaded, opts), /layer sha256:0 is missing/);
  const before = h.store.get(Images, loaded.id)!;
  assert.equal(before.status.phase, 'failed');
  await assert.rejects(ensureImageRecord(h.store, loaded, opts), /layer sha256:0 is missing/);
  assert.ok(h.store.get(Images, loaded.id)!.generation > before.generation, 'the retry made a new generation');
  failing = false;
  const r = await ensureImageRecord(h.store, loaded, opts);
  assert.equal(r.status.phase, 'ready');
});
