// The operator references are generated from the option table and cannot drift (issue (16 of 21), 6):
// the committed docs/daemon-json.md and man pages are what hack/gen-docs.ts writes now, and every
// flag of `engined --help` and every file key is in them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { daemonJsonDoc, daemonJsonManPage, engineManPage, enginedManPage } from '../../../config/docs.ts';
import { USAGE } from '../../../cmd/engine.ts';
import { helpText } from '../../../config/flags.ts';
import { OPTIONS } from '../../../config/options.ts';
import { ENGINE_VERSION } from '../../../cmd/version.ts';

const REPO = resolve(import.meta.dirname, '..', '..', '..');
const read = (p: string) => readFileSync(join(REPO, p), 'utf8');

test('the committed references are the generated ones (run hack/gen-docs.ts after changing an option)', () => {
  assert.equal(read('docs/daemon-json.md'), daemonJsonDoc());
  assert.equal(read('docs/man/engined.8'), enginedManPage(ENGINE_VERSION));
  assert.equal(read('docs/man/daemon.json.5'), daemonJsonManPage(ENGINE_VERSION));
  assert.equal(read('docs/man/engine.1'), engineManPage(ENGINE_VERSION, USAGE));
});

test('every flag of --help is in engined(8); every file key in daemon-json.md and daemon.json(5)', () => {
  const flags = [...helpText().matchAll(/^\s+(?:-\w, )?--([a-z0-9-]+)/gm)].map((m) => m[1]!);
  assert.ok(flags.length > 50);
  const man = read('docs/man/engined.8');
  for (const f of flags) assert.ok(man.includes(`\\fB\\-\\-${f.replace(/-/g, '\\-')}\\fR`), `--${f} missing from engined(8)`);
  const md = read('docs/daemon-json.md');
  const man5 = read('docs/man/daemon.json.5');
  for (const o of OPTIONS) {
    if (o.fileKey === null) continue;
    assert.ok(md.includes(`| \`${o.fileKey}\` |`), `${o.fileKey} missing from daemon-json.md`);
    assert.ok(man5.includes(`\\fB${o.fileKey.replace(/-/g, '\\-')}\\fR`), `${o.fileKey} missing from daemon.json(5)`);
  }
});

test('engine(1) holds every command of `engine --help`', () => {
  const man = read('docs/man/engine.1');
  const commands = [...USAGE.matchAll(/^  ([a-z]+(?: [a-z]+)?)\s/gm)].map((m) => m[1]!);
  assert.ok(commands.includes('apply') && commands.includes('stack ls'), commands.join(','));
  for (const c of commands) assert.ok(man.includes(c), `${c} missing from engine(1)`);
});
