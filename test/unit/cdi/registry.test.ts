// drivers/cdi/registry.ts: the spec directories as one device catalog, with the reference
// library's precedence (later directory wins), its tolerance (a bad file is recorded, never
// fatal), its conflict rule, its error words, and live reloading.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { CdiRegistry } from '../../../drivers/cdi/registry.ts';
import { isCode } from '../../../lib/errors.ts';

const log = pino({ level: 'silent' });

function tempDirs(): { root: string; etc: string; run: string } {
  const root = mkdtempSync(join(tmpdir(), 'cdi-registry-'));
  return { root, etc: join(root, 'etc-cdi'), run: join(root, 'run-cdi') };
}

/** A YAML spec with one env-only device per name, and a spec-level env entry. */
function yamlSpec(kind: string, names: string[], tag: string): string {
  const devices = names.map((n) => `  - name: ${n}\n    containerEdits:\n      env: ["DEV_${n}=${tag}"]`).join('\n');
  return `cdiVersion: 0.6.0\nkind: ${kind}\ncontainerEdits:\n  env: ["SPEC=${tag}"]\ndevices:\n${devices}\n`;
}

async function until(cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('two directories: the later one overrides a device, the rest merge; a missing dir is fine', async (t) => {
  const { root, etc, run } = tempDirs();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(etc);
  mkdirSync(run);
  writeFileSync(join(etc, 'vendor.yaml'), yamlSpec('vendor.com/gpu', ['0', '1'], 'etc'));
  writeFileSync(join(run, 'vendor.json'), JSON.stringify({ cdiVersion: '0.5.0', kind: 'vendor.com/gpu', devices: [{ name: '1', containerEdits: { env: ['DEV_1=run'] } }] }));
  writeFileSync(join(etc, 'README.txt'), 'not a spec');
  const reg = new CdiRegistry([etc, run, join(root, 'absent')], log);
  await reg.refresh();
  assert.deepEqual(reg.errors(), []);
  assert.deepEqual(reg.dirs(), [etc, run, join(root, 'absent')]);
  assert.deepEqual(reg.listDevices(), ['vendor.com/gpu=0', 'vendor.com/gpu=1']);
  assert.deepEqual(reg.namesOfKind('vendor.com/gpu'), ['vendor.com/gpu=0', 'vendor.com/gpu=1']);
  assert.equal(reg.has('vendor.com/gpu=1'), true);
  assert.equal(reg.has('vendor.com/gpu=2'), false);
  // Device 1 now comes from the run dir's spec, which has no spec-level edits.
  assert.deepEqual(reg.resolve(['vendor.com/gpu=1']).env, ['DEV_1=run']);
  // Spec-level edits once per spec, even for two of its devices; the run spec adds none.
  assert.deepEqual(reg.resolve(['vendor.com/gpu=0', 'vendor.com/gpu=1', 'vendor.com/gpu=0']), {
    env: ['SPEC=etc', 'DEV_0=etc', 'DEV_1=run'], deviceNodes: [], mounts: [], hooks: [], additionalGids: [],
  });
});

test('a bad file is recorded with its path and skipped, never thrown; good files still load', async (t) => {
  const { root, etc } = tempDirs();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(etc);
  writeFileSync(join(etc, 'a-good.yaml'), yamlSpec('good.com/dev', ['x'], 'g'));
  writeFileSync(join(etc, 'b-bad.yaml'), 'cdiVersion: 0.9.0\nkind: bad.com/dev\ndevices: [{name: y, containerEdits: {env: [A=1]}}]\n');
  writeFileSync(join(etc, 'c-broken.json'), '{ not json');
  const reg = new CdiRegistry([etc], log);
  await reg.refresh();
  assert.deepEqual(reg.listDevices(), ['good.com/dev=x']);
  const errors = reg.errors();
  assert.deepEqual(errors.map((e) => e.path), [join(etc, 'b-bad.yaml'), join(etc, 'c-broken.json')]);
  assert.match(errors[0]!.message, /invalid version "0\.9\.0"/);
  assert.match(errors[1]!.message, /failed to unmarshal CDI Spec/);
});

test('the same device in two files of one directory: a conflict on both files, the device dropped', async (t) => {
  const { root, etc, run } = tempDirs();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(etc);
  writeFileSync(join(etc, 'one.yaml'), yamlSpec('v.com/c', ['dup', 'only1'], '1'));
  writeFileSync(join(etc, 'two.yaml'), yamlSpec('v.com/c', ['dup'], '2'));
  const reg = new CdiRegistry([etc, run], log);
  await reg.refresh();
  assert.deepEqual(reg.listDevices(), ['v.com/c=only1']);
  assert.deepEqual(reg.errors().map((e) => e.path).sort(), [join(etc, 'one.yaml'), join(etc, 'two.yaml')]);
  assert.match(reg.errors()[0]!.message, /conflicting device "v\.com\/c=dup"/);
  // A later directory defining it settles it.
  mkdirSync(run);
  writeFileSync(join(run, 'fix.yaml'), yamlSpec('v.com/c', ['dup'], 'run'));
  await reg.refresh();
  assert.deepEqual(reg.resolve(['v.com/c=dup']).env, ['SPEC=run', 'DEV_dup=run']);
});

test('unknown devices fail with the library\'s words, every unknown one named', async () => {
  const reg = new CdiRegistry([], log);
  await reg.refresh();
  assert.throws(() => reg.resolve(['vendor.com/gpu=0', 'vendor.com/gpu=1']),
    (e) => isCode(e, 'InvalidArgument') && (e as Error).message === 'unresolvable CDI devices vendor.com/gpu=0, vendor.com/gpu=1');
});

test('watch: a file added, changed and removed later is picked up; so is a directory created later', async (t) => {
  const { root, etc, run } = tempDirs();
  mkdirSync(etc);
  const reg = new CdiRegistry([etc, run], log);
  t.after(async () => {
    await reg.close();
    rmSync(root, { recursive: true, force: true });
  });
  await reg.refresh();
  await reg.watch();
  assert.deepEqual(reg.listDevices(), []);
  writeFileSync(join(etc, 'late.yaml'), yamlSpec('late.com/dev', ['a'], '1'));
  await until(() => reg.has('late.com/dev=a'));
  writeFileSync(join(etc, 'late.yaml'), yamlSpec('late.com/dev', ['a', 'b'], '2'));
  await until(() => reg.has('late.com/dev=b'));
  // run-cdi did not exist when watching started.
  mkdirSync(run);
  writeFileSync(join(run, 'runtime.json'), JSON.stringify({ cdiVersion: '0.3.0', kind: 'rt.com/dev', devices: [{ name: 'r', containerEdits: { env: ['R=1'] } }] }));
  await until(() => reg.has('rt.com/dev=r'));
  rmSync(join(etc, 'late.yaml'));
  await until(() => !reg.has('late.com/dev=a'));
  assert.deepEqual(reg.listDevices(), ['rt.com/dev=r']);
});
