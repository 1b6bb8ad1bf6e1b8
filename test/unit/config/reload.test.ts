import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadDaemonConfig, type DaemonConfig, type ConfigSources } from '../../../config/load.ts';
import { diffReload } from '../../../config/reload.ts';

function start(argv: string[]): { config: DaemonConfig; sources: ConfigSources } {
  const r = loadDaemonConfig([...argv, '--config-file', '/dev/null'], {});
  assert.equal(r.kind, 'run');
  return r as { kind: 'run'; config: DaemonConfig; sources: ConfigSources };
}

test('reloadable keys that changed are reported and applied; unchanged and absent keys are not', () => {
  const { config, sources } = start(['--data-root', '/d']);
  const r = diffReload(config, { debug: true, labels: ['x=y'], 'max-concurrent-downloads': 3, 'registry-mirrors': ['https://m'], features: { cdi: true } }, sources);
  assert.equal(r.ok, true);
  if (!r.ok) return;
  assert.deepEqual(r.changed.map((c) => c.key).sort(), ['debug', 'features', 'labels', 'registry-mirrors']);
  assert.equal(r.config.debug, true);
  assert.deepEqual(r.config.labels, ['x=y']);
  assert.equal(r.config.dataRoot, '/d');
  assert.equal(config.debug, false, 'the old config is not mutated');
});

test('a non-reloadable key with a new value refuses the reload', () => {
  const { config, sources } = start([]);
  const r = diffReload(config, { 'data-root': '/elsewhere', debug: true }, sources);
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.match(r.error, /cannot be changed by a reload.*: data-root/);
  assert.deepEqual(r.notReloadable.map((c) => c.field), ['dataRoot']);
  // the same value is not a change
  assert.equal(diffReload(config, { 'data-root': '/var/lib/engine' }, sources).ok, true);
});

test('features may change by a reload, but the supervisor\'s snapshotter switched needs a restart (another image store)', () => {
  const { config, sources } = start([]);
  const r = diffReload(config, { features: { 'supervisor-snapshotter': true } }, sources);
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.match(r.error, /cannot be changed by a reload, restart the daemon to apply them: features/);
  assert.equal(diffReload(config, { features: { 'supervisor-snapshotter': false, cdi: true } }, sources).ok, true);
});

test('conflicts with flags, unknown keys and invalid values refuse the reload', () => {
  const { config, sources } = start(['--debug']);
  const c = diffReload(config, { debug: false }, sources);
  assert.equal(c.ok, false);
  assert.match((c as { error: string }).error, /specified both as a flag and in the configuration file: debug: \(from flag: true, from file: false\)/);
  const u = diffReload(config, '{"what": 1}', sources);
  assert.match((u as { error: string }).error, /don't match any configuration option: what/);
  const v = diffReload(config, { 'max-concurrent-uploads': -3 }, sources);
  assert.match((v as { error: string }).error, /invalid max concurrent uploads: -3/);
  const rt = diffReload(config, { 'default-runtime': 'ghost' }, sources);
  assert.match((rt as { error: string }).error, /specified default runtime 'ghost' does not exist/);
});

test('runtimes and default-runtime reload together', () => {
  const { config, sources } = start([]);
  const r = diffReload(config, { runtimes: { crun: { path: '/usr/bin/crun' } }, 'default-runtime': 'crun' }, sources);
  assert.equal(r.ok, true);
  if (r.ok) assert.equal(r.config.runtimes.crun.path, '/usr/bin/crun');
});
