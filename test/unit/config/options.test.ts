import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { OPTIONS, defaultConfig } from '../../../config/options.ts';

const SPEC = new URL('../../../../shared/spec/engine-daemon-spec.md', import.meta.url);

test('every option of the spec table is in OPTIONS with its short flag', (t) => {
  let spec: string;
  try {
    spec = readFileSync(SPEC, 'utf8');
  } catch {
    t.skip('spec not beside the repo');
    return;
  }
  const section = spec.slice(spec.indexOf('### Daemon command-line options'), spec.indexOf('### Daemon configuration file'));
  const rows = [...section.matchAll(/^\| --([a-z0-9-]+)(?: \(-(\w)\))? \|/gm)];
  assert.ok(rows.length > 80);
  for (const [, name, short] of rows) {
    const opt = OPTIONS.find((o) => o.name === name);
    assert.ok(opt, `missing option --${name}`);
    assert.equal(opt.short, short, `short flag of --${name}`);
  }
});

test('every file key of the spec table maps to an option', (t) => {
  let spec: string;
  try {
    spec = readFileSync(SPEC, 'utf8');
  } catch {
    t.skip('spec not beside the repo');
    return;
  }
  const section = spec.slice(spec.indexOf('### Daemon configuration file'), spec.indexOf('Rules for the file'));
  const keys = new Set<string>();
  for (const [, cell] of section.matchAll(/^\| ([a-z0-9, -]+) \|/gm)) for (const k of cell.split(',')) keys.add(k.trim());
  keys.delete('key');
  const fileKeys = new Set(OPTIONS.map((o) => o.fileKey?.split('.')[0]));
  for (const k of keys) assert.ok(fileKeys.has(k), `file key ${k}`);
});

test('the table is consistent: unique names, fields and file keys; reloadable set matches the spec', () => {
  const names = OPTIONS.map((o) => o.name);
  assert.equal(new Set(names).size, names.length);
  const fields = OPTIONS.filter((o) => o.field).map((o) => o.field);
  assert.equal(new Set(fields).size, fields.length);
  const keys = OPTIONS.filter((o) => o.fileKey).map((o) => o.fileKey);
  assert.equal(new Set(keys).size, keys.length);
  const reloadable = OPTIONS.filter((o) => o.reloadable).map((o) => o.fileKey).sort();
  assert.deepEqual(reloadable, [
    'allow-nondistributable-artifacts', 'authorization-plugins', 'debug', 'default-runtime', 'features', 'insecure-registries', 'labels',
    'live-restore', 'max-concurrent-downloads', 'max-concurrent-uploads', 'max-download-attempts', 'registry-mirrors', 'runtimes', 'shutdown-timeout',
  ]);
  const d = defaultConfig();
  d.labels.push('x');
  assert.deepEqual(defaultConfig().labels, [], 'defaults are fresh copies');
});
