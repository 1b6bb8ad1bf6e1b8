// The config-reload reconciler on a real store: a reload is all or nothing — checked whole before
// anything changes, owners prepared before any applies, one failing has the others undone — and
// the record's status says what happened.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import pino from 'pino';
import { defaultConfig, type DaemonConfig } from '../../../config/options.ts';
import { ConfigReloadReconciler, reloadableValues, type ReloadOwner } from '../../../reconcilers/config-reload/reconciler.ts';
import { appliedCondition, DAEMON_CONFIG, DaemonConfigs } from '../../../store/kinds/daemon-config.ts';
import { kindTable } from '../../../store/kind.ts';
import { openStore, type Store } from '../../../store/store.ts';

let dir: string;
let store: Store;
let cfg: DaemonConfig;
let journal: string[];
let reloads: number;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'config-reload-'));
  store = openStore(join(dir, 'engine.db'), { kinds: kindTable([DaemonConfigs]) });
  cfg = { ...defaultConfig(), configFile: join(dir, 'daemon.json') };
  journal = [];
  reloads = 0;
  store.put(DaemonConfigs, { name: DAEMON_CONFIG, spec: { revision: 1, cause: 'start', text: '{}' }, status: { observedRevision: 1, applied: reloadableValues(cfg), conditions: [] } });
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function owner(name: string, fields: ReloadOwner['fields'], fail?: 'prepare' | 'apply'): ReloadOwner {
  return {
    name,
    fields,
    prepare: (next) => {
      if (fail === 'prepare') throw new Error(`${name} refuses`);
      return {
        apply: () => {
          if (fail === 'apply') throw new Error(`${name} broke`);
          journal.push(`apply ${name} ${JSON.stringify(fields.map((f) => next[f]))}`);
        },
        rollback: () => journal.push(`rollback ${name}`),
      };
    },
  };
}

async function reload(text: string | null, owners: ReloadOwner[], sources = {}) {
  const r = new ConfigReloadReconciler(store, { config: cfg, sources, owners, reloaded: () => reloads++, log: pino({ level: 'silent' }) });
  store.updateSpec(DaemonConfigs, DAEMON_CONFIG, (s) => ({ revision: s.revision + 1, cause: 'watch', text }));
  await r.reconcile(DAEMON_CONFIG);
  const rec = store.get(DaemonConfigs, DAEMON_CONFIG)!;
  assert.equal(rec.status.observedRevision, rec.spec.revision);
  return appliedCondition(rec)!;
}

test('an accepted reload: the owners of changed keys apply, the shared configuration follows, an event, status Applied', async () => {
  const c = await reload('{"debug": true, "labels": ["a=b"], "max-concurrent-downloads": 7}', [owner('logging', ['debug']), owner('runtimes', ['runtimes'])]);
  assert.deepEqual(journal, ['apply logging [true]']);
  assert.equal(cfg.debug, true);
  assert.deepEqual(cfg.labels, ['a=b']);
  assert.equal(cfg.maxConcurrentDownloads, 7);
  assert.equal(reloads, 1);
  assert.equal(c.status, 'True');
  assert.equal(c.reason, 'Applied');
  assert.equal(store.get(DaemonConfigs, DAEMON_CONFIG)!.status.applied.labels instanceof Array, true);
  assert.deepEqual(store.get(DaemonConfigs, DAEMON_CONFIG)!.status.applied.labels, ['a=b']);
});

test('an invalid file, a conflict with a flag, a key only a restart applies: refused, nothing changes', async () => {
  for (const [text, sources, reason] of [
    ['{"debug": tru', {}, 'Invalid'],
    ['{"max-concurrent-downloads": -1}', {}, 'Invalid'],
    ['{"debug": true}', { debug: 'flag' }, 'Conflict'],
    ['{"data-root": "/elsewhere"}', {}, 'NotReloadable'],
  ] as const) {
    const c = await reload(text, [owner('logging', ['debug'])], sources);
    assert.equal(c.status, 'False', text);
    assert.equal(c.reason, reason, text);
  }
  assert.deepEqual(journal, []);
  assert.equal(cfg.debug, false);
  assert.equal(reloads, 0);
});

test('an owner refusing while preparing: nothing applies; one failing to apply: the others are undone', async () => {
  let c = await reload('{"debug": true, "runtimes": {"x": {"path": "/bin/x"}}}', [owner('logging', ['debug']), owner('runtimes', ['runtimes'], 'prepare')]);
  assert.equal(c.reason, 'Invalid');
  assert.match(c.message, /runtimes refuses/);
  assert.deepEqual(journal, []);
  c = await reload('{"debug": true, "registry-mirrors": ["https://m.example"]}', [owner('logging', ['debug']), owner('distribution', ['registryMirrors'], 'apply')]);
  assert.equal(c.reason, 'ApplyFailed');
  assert.match(c.message, /^distribution: distribution broke/);
  assert.deepEqual(journal, ['apply logging [true]', 'rollback logging']);
  assert.equal(cfg.debug, false);
  assert.deepEqual(cfg.registryMirrors, []);
  assert.equal(reloads, 0);
});

test('a missing file changes nothing; the same revision is not looked at twice', async () => {
  const c = await reload(null, [owner('logging', ['debug'])]);
  assert.equal(c.reason, 'FileMissing');
  assert.equal(reloads, 0);
  const r = new ConfigReloadReconciler(store, { config: cfg, sources: {}, owners: [], reloaded: () => reloads++, log: pino({ level: 'silent' }) });
  await r.reconcile(DAEMON_CONFIG);
  assert.equal(reloads, 0);
});
