// Records with the old request counters become levels once, at start-up.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { newId } from '../../../lib/ids.ts';
import { migrateContainerRecords } from '../../../reconcilers/container/migrate.ts';
import { openStore } from '../../../store/store.ts';
import type { ContainerSpec, ContainerStatus } from '../../../store/types.ts';
import { containerRecord } from './fake-world.ts';

test('counter records migrate: start counter -> run generation, stop options kept, kill dropped', () => {
  const dir = mkdtempSync(join(tmpdir(), 'engine-migrate-'));
  const store = openStore(join(dir, 'engine.db'));
  try {
    const { spec, status } = containerRecord(newId());
    const { runGeneration: _a, ...oldSpec } = spec;
    const { runGeneration: _b, ...oldStatus } = status;
    // Started twice, the second start not yet seen; stopped once with -t 3; a pending kill.
    const pending = newId();
    store.create('container', pending, { ...oldSpec, id: pending, desired: 'running', startSeq: 2, stop: { seq: 1, timeout: 3 }, kill: { seq: 1, signal: 'HUP' } }, { ...oldStatus, startSeq: 1, stopSeq: 1, killSeq: 0 });
    const current = newId();
    store.create('container', current, { ...spec, id: current }, status);
    assert.equal(migrateContainerRecords(store), 1);
    assert.equal(migrateContainerRecords(store), 0, 'once');
    const r = store.get<ContainerSpec & Record<string, unknown>, ContainerStatus & Record<string, unknown>>('container', pending)!;
    assert.equal(r.spec.runGeneration, 2);
    assert.equal(r.status.runGeneration, 1, 'the second start is still pending: a new run is wanted');
    assert.equal(r.spec.stopOptions?.timeout, 3);
    for (const k of ['startSeq', 'stop', 'kill']) assert.equal(k in r.spec, false, k);
    for (const k of ['startSeq', 'stopSeq', 'killSeq']) assert.equal(k in r.status, false, k);
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
