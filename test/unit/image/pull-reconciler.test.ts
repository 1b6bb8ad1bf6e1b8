// Pulls as desired state: a pull record is converged by a job outside the reconcile, records the
// image and its tag, is resumed when a restart left it pending or pulling, is cancelled by
// desired=removed, and a failure is written with its error class.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { Controller } from '../../../controllers/controller.ts';
import type { PullOptions, PullResult } from '../../../drivers/distribution/types.ts';
import { notFound } from '../../../lib/errors.ts';
import { PullReconciler } from '../../../reconcilers/image/pull-reconciler.ts';
import { NEW_PULL_STATUS, Pulls } from '../../../store/kinds/pull.ts';
import { STORE_KINDS } from '../../../store/kinds/index.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { type ImageStatus, Images } from '../../../store/kinds/image.ts';
import { fakeLog } from '../controllers/fake-log.ts';
import { References } from '../../../store/kinds/reference.ts';
import { pullController } from '../../../reconcilers/image/controller.ts';

const REF = 'registry.test/app/web:v1';

/** A registry client whose pulls finish when the test says so. */
class FakeDistribution {
  calls: Array<{ ref: string; opts: PullOptions }> = [];
  private gates: Array<{ release: () => void; fail: (err: Error) => void }> = [];
  hold = false;

  async pull(ref: string, opts: PullOptions): Promise<PullResult> {
    this.calls.push({ ref, opts });
    opts.onProgress({ status: 'Pulling from app/web', id: 'v1' });
    if (this.hold) {
      await new Promise<void>((resolve, reject) => {
        this.gates.push({ release: resolve, fail: reject });
        opts.signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')), { once: true });
      });
    }
    opts.onProgress({ status: 'Download complete', id: 'aaaa' });
    const rawConfig = JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] }, ref });
    const id = `sha256:${createHash('sha256').update(rawConfig).digest('hex')}`;
    return { id, rawConfig, diffIds: [], chainId: null, size: 0, repoDigest: `registry.test/app/web@sha256:${'d'.repeat(64)}`, release: () => {} };
  }

  release(): void {
    this.gates.shift()?.release();
  }

  fail(err: Error): void {
    this.gates.shift()?.fail(err);
  }
}

let dir: string;
let store: Store;
let dist: FakeDistribution;
let pulls: PullReconciler;
let ctl: Controller;
let stopImages: () => void;

async function startPulls(): Promise<void> {
  pulls = new PullReconciler(store, dist, { waitTimeoutMs: 5000 });
  ctl = pullController(pulls).build({ store, reconciler: pulls, log: fakeLog() });
  await ctl.start();
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engine-pulls-'));
  store = openStore(join(dir, 'engine.db'), { kinds: STORE_KINDS });
  // The image reconciler's part: a new image is ready at once.
  stopImages = store.watch(Images, (ev) => {
    const r = ev.resource as { status: ImageStatus };
    if (ev.type === 'put' && r.status.phase === 'pending') {
      setImmediate(() => store.updateStatus(Images, ev.name, (s, cur) => ({ ...s, phase: 'ready', observedGeneration: cur.generation })));
    }
  });
  dist = new FakeDistribution();
  await startPulls();
});
afterEach(async () => {
  await ctl.stop();
  await pulls.shutdown();
  stopImages();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function ask(request = 1): number {
  const cur = store.get(Pulls, REF);
  if (!cur) return store.create(Pulls, REF, { reference: REF, platform: '', request, desired: 'present' }, NEW_PULL_STATUS).generation;
  return store.updateSpec(Pulls, REF, (s) => ({ ...s, request: s.request + 1 })).generation;
}

const settled = (gen: number) =>
  store.waitFor(Pulls, REF, (r) => !r || (r.status.observedGeneration >= gen && ['done', 'failed'].includes(r.status.phase)), { timeoutMs: 5000 });

test('a pull record is pulled: image and tag recorded, progress reported; asked again, it runs again and changes nothing', async () => {
  const lines: string[] = [];
  const unsubscribe = pulls.progress.subscribe(REF, (m) => lines.push(`${m.id}:${m.status}`));
  const r = await settled(ask());
  unsubscribe();
  assert.equal(r?.status.phase, 'done');
  assert.equal(r.status.changed, true);
  const tag = store.get(References, REF);
  assert.equal(tag?.spec.imageId, r.status.imageId);
  assert.equal(store.get(Images, r.status.imageId)?.status.phase, 'ready');
  assert.deepEqual(lines, ['v1:Pulling from app/web', 'aaaa:Download complete']);
  const again = await settled(ask());
  assert.equal(again?.status.phase, 'done');
  assert.equal(again.status.changed, false, 'image is up to date');
  assert.equal(dist.calls.length, 2);
});

test('a pull a restart cut off (left pulling) runs again at the next start, with no new request', async () => {
  dist.hold = true;
  const gen = ask();
  await store.waitFor(Pulls, REF, (r) => r?.status.phase === 'pulling', { timeoutMs: 5000 });
  // The daemon goes down in the middle of the download.
  await ctl.stop();
  await pulls.shutdown();
  assert.equal(store.get(Pulls, REF)?.status.phase, 'pulling', 'still wanted');
  dist.hold = false;
  await startPulls();
  const r = await settled(gen);
  assert.equal(r?.status.phase, 'done');
  assert.ok(store.get(References, REF));
  assert.equal(dist.calls.length, 2);
});

test('desired=removed cancels the download and deletes the record', async () => {
  dist.hold = true;
  ask();
  await store.waitFor(Pulls, REF, (r) => r?.status.phase === 'pulling', { timeoutMs: 5000 });
  store.updateSpec(Pulls, REF, (s) => ({ ...s, desired: 'removed' }));
  const gone = await store.waitFor(Pulls, REF, (r) => !r, { timeoutMs: 5000 });
  assert.equal(gone, undefined);
  assert.equal(dist.calls[0]!.opts.signal.aborted, true);
  assert.equal(store.get(References, REF), undefined);
});

test('a failed pull is written with its error and class', async () => {
  dist.hold = true;
  const gen = ask();
  await store.waitFor(Pulls, REF, (r) => r?.status.phase === 'pulling', { timeoutMs: 5000 });
  dist.fail(notFound('manifest unknown'));
  const r = await settled(gen);
  assert.equal(r?.status.phase, 'failed');
  assert.equal(r.status.error, 'manifest unknown');
  assert.equal(r.status.errorCode, 'NotFound');
});
