// Types end to end: a watch through a kind yields that kind's resources, an event of a watch over
// every kind is narrowed by isEventOf, and reading a field another kind has does not compile (the
// `@ts-expect-error` lines fail `tsc` — the suite's first step — if the typing ever widens).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { isEventOf } from '../../../store/kind.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { STORE_KINDS } from '../../../store/kinds/index.ts';
import { Volumes } from '../../../store/kinds/volume.ts';
import { openStore } from '../../../store/store.ts';
import type { WatchEvent } from '../../../store/types.ts';

test('watch(kind) events carry the kind’s resource; isEventOf narrows a watch over every kind', () => {
  const dir = mkdtempSync(join(tmpdir(), 'engine-types-'));
  const store = openStore(join(dir, 'engine.db'), { kinds: STORE_KINDS });
  try {
    const seen: string[] = [];
    const stop = store.watch(Volumes, (ev) => {
      seen.push(ev.resource.spec.driver);
      // @ts-expect-error a volume has no hostConfig: the event is typed by its kind
      void ev.resource.spec.hostConfig;
    });
    const all: WatchEvent[] = [];
    const stopAll = store.watch(null, (ev) => all.push(ev));
    store.create(Volumes, 'v1', { name: 'v1', driver: 'local', options: {}, labels: {}, created: '', anonymous: false, desired: 'present' }, { observedGeneration: 0, phase: 'pending', error: '', mountpoint: '' });
    stop();
    stopAll();
    assert.deepEqual(seen, ['local']);
    const ev = all[0]!;
    // @ts-expect-error untyped until narrowed
    void ev.resource.spec.driver;
    assert.ok(isEventOf(ev, Volumes));
    assert.ok(!isEventOf(ev, Containers));
    if (isEventOf(ev, Volumes)) assert.equal(ev.resource.spec.anonymous, false);
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
