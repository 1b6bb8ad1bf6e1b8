// The runtime kind's reconciler and the store-backed registry (the 'runtimes' component) against
// a real store on a temp dir: validation into status conditions, wrapper scripts under the data
// root (written, kept while a running container uses a removed runtime, then removed), swap()
// writing file/flag/path/builtin records, resolve/names/default answering from the records.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeLog } from '../controllers/fake-log.ts';
import { loose } from '../store/test-kind.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { STORE_KINDS } from '../../../store/kinds/index.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { INITIAL_RUNTIME_STATUS, Runtimes, readyCondition } from '../../../store/kinds/runtime.ts';
import { RuntimeReconciler, WRAPPER_IN_USE_RETRY_MS } from '../../../reconcilers/runtime/reconciler.ts';
import { removedRuntimeOf, runtimeController } from '../../../reconcilers/runtime/controller.ts';
import { createRuntimeRegistry } from '../../../reconcilers/runtime/registry.ts';
import { shimsOnPath } from '../../../drivers/supervisor/runtimes.ts';

let dir: string;
let store: Store;
let execRoot: string;
let wrapperDir: string;
const ctx = () => ({ signal: new AbortController().signal, log: fakeLog() });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'engine-runtime-'));
  execRoot = join(dir, 'exec');
  wrapperDir = join(dir, 'data', 'runtimes');
  store = openStore(join(dir, 'engine.db'), { kinds: STORE_KINDS });
});
afterEach(async () => {
  store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('runtime reconciler', () => {
  test('a path runtime with runtimeArgs: wrapper under the data root, Ready with the runc shim and its binary', async () => {
    const rec = new RuntimeReconciler(store, { execRoot, wrapperDir });
    store.create(Runtimes, 'dbg', { source: 'file', path: '/usr/sbin/runc', runtimeArgs: ['--debug'] }, INITIAL_RUNTIME_STATUS);
    await rec.reconcile('dbg', ctx());
    const r = store.get(Runtimes, 'dbg')!;
    const file = join(wrapperDir, 'dbg');
    assert.equal(readFileSync(file, 'utf8'), `#!/bin/sh\nexec '/usr/sbin/runc' '--debug' "$@"\n`);
    assert.equal(r.status.observedGeneration, r.generation);
    assert.equal(r.status.shim, 'io.containerd.runc.v2');
    assert.deepEqual(r.status.options, { typeUrl: 'containerd.runc.v1.Options', fields: { binary_name: file, root: join(execRoot, 'runtime-runc'), systemd_cgroup: false } });
    assert.deepEqual(readyCondition(r), { type: 'Ready', status: 'True', reason: 'Valid', message: '' });

    // The record goes: so does the wrapper.
    store.delete(Runtimes, 'dbg');
    assert.equal(await rec.reconcile('dbg', ctx()), undefined);
    assert.equal(existsSync(file), false);
  });

  test('runtimeType with options: the shim and its options in the status', async () => {
    const rec = new RuntimeReconciler(store, { execRoot, wrapperDir });
    store.create(Runtimes, 'kata', { source: 'flag', runtimeType: 'io.containerd.kata.v2', options: { ConfigPath: '/etc/kata.toml', TypeUrl: 'io.containerd.kata.v2.Options' } }, INITIAL_RUNTIME_STATUS);
    store.create(Runtimes, 'sysd', { source: 'file', runtimeType: 'io.containerd.runc.v2', options: { BinaryName: 'crun' } }, INITIAL_RUNTIME_STATUS);
    await rec.reconcile('kata', ctx());
    await rec.reconcile('sysd', ctx());
    assert.deepEqual(store.get(Runtimes, 'kata')!.status.options, { typeUrl: 'runtimeoptions.v1.Options', fields: { config_path: '/etc/kata.toml', type_url: 'io.containerd.kata.v2.Options' } });
    assert.equal(store.get(Runtimes, 'kata')!.status.shim, 'io.containerd.kata.v2');
    assert.equal(store.get(Runtimes, 'sysd')!.status.options?.fields.binary_name, 'crun');
  });

  test('an invalid record: Ready False with the validation message, no retry', async () => {
    const rec = new RuntimeReconciler(store, { execRoot, wrapperDir });
    store.create(Runtimes, 'bad', { source: 'file', path: '/x', runtimeType: 'io.containerd.runc.v2' }, INITIAL_RUNTIME_STATUS);
    store.create(Runtimes, 'stdrt', { source: 'file', path: '/x' }, INITIAL_RUNTIME_STATUS);
    await rec.reconcile('bad', ctx());
    await rec.reconcile('stdrt', ctx());
    assert.deepEqual(readyCondition(store.get(Runtimes, 'bad')!), { type: 'Ready', status: 'False', reason: 'Invalid', message: 'runtime bad: path and runtimeType are mutually exclusive' });
    assert.equal(readyCondition(store.get(Runtimes, 'stdrt')!)?.message, "runtime name 'stdrt' is reserved");
  });

  test('a removed runtime keeps its wrapper while a running container uses it; a container change wakes it', async () => {
    // Container records in part: a store without schema checks.
    store.close();
    store = openStore(join(dir, 'loose.db'));
    const rec = new RuntimeReconciler(store, { execRoot, wrapperDir });
    store.create(Runtimes, 'w', { source: 'file', path: '/usr/sbin/runc', runtimeArgs: ['--debug'] }, INITIAL_RUNTIME_STATUS);
    await rec.reconcile('w', ctx());
    store.create(loose(Containers), 'c1', { hostConfig: { Runtime: 'w' } }, { phase: 'running' });
    store.delete(Runtimes, 'w');
    assert.deepEqual(await rec.reconcile('w', ctx()), { requeueAfter: WRAPPER_IN_USE_RETRY_MS });
    assert.ok(existsSync(join(wrapperDir, 'w')));
    const c = store.updateStatus(loose(Containers), 'c1', (s) => ({ ...s, phase: 'exited' }));
    assert.deepEqual(runtimeController.keysFor({ type: 'put', kind: 'container', resource: c }, store), ['w']);
    assert.equal(removedRuntimeOf(c as never, { type: 'put', store }), 'w');
    await rec.reconcile('w', ctx());
    assert.equal(existsSync(join(wrapperDir, 'w')), false);
  });
});

describe('runtime registry (the runtimes component)', () => {
  const registry = (shims: string[] = ['io.containerd.runc.v2'], source: 'file' | 'flag' = 'file') => createRuntimeRegistry(store, { execRoot, wrapperDir, source, shims: () => shims });

  test('swap writes builtin, configured and PATH shim records; names, default and resolve follow', () => {
    const reg = registry();
    reg.swap(reg.build({ defaultRuntime: 'mine', runtimes: { mine: { path: '/usr/local/bin/my-runc' } } }));
    assert.deepEqual(reg.names(), ['stdrt', 'runc', 'mine', 'io.containerd.runc.v2']);
    assert.equal(reg.default, 'mine');
    assert.deepEqual(store.get(Runtimes, 'mine')!.spec, { source: 'file', path: '/usr/local/bin/my-runc' });
    assert.deepEqual(store.get(Runtimes, 'io.containerd.runc.v2')!.spec, { source: 'path', runtimeType: 'io.containerd.runc.v2' });
    assert.deepEqual(store.get(Runtimes, 'stdrt')!.spec, { source: 'builtin', runtimeType: 'io.containerd.runc.v2' });
    // Not reconciled yet: resolved from the spec.
    const x = reg.resolve('');
    assert.equal(x.name, 'io.containerd.runc.v2');
    assert.equal((x.options?.fields as Record<string, unknown>).binary_name, '/usr/local/bin/my-runc');
    assert.deepEqual(reg.resolve('runc'), reg.resolve('stdrt'));
    assert.deepEqual(reg.resolve('stdrt'), { name: 'io.containerd.runc.v2', options: { typeUrl: 'containerd.runc.v1.Options', fields: { binary_name: 'runc', root: join(execRoot, 'runtime-runc'), systemd_cgroup: false } } });
    // A dotted shim name resolves with no record.
    assert.deepEqual(reg.resolve('io.containerd.foo.v2'), { name: 'io.containerd.foo.v2' });
  });

  test('resolve answers from a reconciled record; a wrapper is written by resolve when not reconciled yet', async () => {
    const reg = registry();
    reg.swap(reg.build({ runtimes: { dbg: { path: '/usr/sbin/runc', runtimeArgs: ['-x'] } } }));
    const early = reg.resolve('dbg');
    assert.ok(existsSync(join(wrapperDir, 'dbg')), 'written by resolve');
    await new RuntimeReconciler(store, { execRoot, wrapperDir }).reconcile('dbg', ctx());
    assert.deepEqual(reg.resolve('dbg'), early);
    // The status is what resolve answers once reconciled.
    store.updateStatus(Runtimes, 'dbg', (s) => ({ ...s, shim: 'io.containerd.marked.v9' }));
    assert.equal(reg.resolve('dbg').name, 'io.containerd.marked.v9');
  });

  test('a reload: added runtimes usable at once, removed ones refused with the engine message, default follows', () => {
    const reg = registry([], 'flag');
    reg.swap(reg.build({ runtimes: { marked: { path: '/bin/true' } } }));
    assert.equal(store.get(Runtimes, 'marked')!.spec.source, 'flag');
    const next = reg.build({ defaultRuntime: 'added', runtimes: { added: { runtimeType: 'io.containerd.runc.v2' } } });
    assert.equal(reg.default, 'stdrt', 'build alone changes nothing');
    assert.deepEqual(reg.names(), ['stdrt', 'runc', 'marked']);
    reg.swap(next);
    assert.equal(reg.default, 'added');
    assert.deepEqual(reg.names(), ['stdrt', 'runc', 'added']);
    assert.equal(reg.resolve('added').name, 'io.containerd.runc.v2');
    assert.throws(() => reg.resolve('marked'), (e: { code?: string; message: string }) => e.code === 'InvalidArgument' && e.message === 'unknown or invalid runtime name: marked');
  });

  test('build refuses as today and leaves the records alone; swap only takes what build made', () => {
    const reg = registry();
    reg.swap(reg.build({}));
    const before = store.list(Runtimes).map((r) => r.name);
    assert.throws(() => reg.build({ runtimes: { a: {} } }), /either path or runtimeType must be set/);
    assert.throws(() => reg.build({ runtimes: { stdrt: { path: '/x' } } }), /reserved/);
    assert.throws(() => reg.build({ defaultRuntime: 'nope' }), /specified default runtime 'nope' does not exist/);
    assert.deepEqual(store.list(Runtimes).map((r) => r.name), before);
    assert.throws(() => reg.swap({ resolve: () => ({ name: 'x' }), names: () => [], default: 'stdrt' }), /build/);
  });

  test('a configured runtime named runc replaces the alias; unchanged specs are not rewritten', () => {
    const reg = registry();
    reg.swap(reg.build({ runtimes: { runc: { path: '/opt/runc' } } }));
    assert.equal(store.get(Runtimes, 'runc')!.spec.source, 'file');
    const gen = store.get(Runtimes, 'runc')!.resourceVersion;
    reg.swap(reg.build({ runtimes: { runc: { path: '/opt/runc' } } }));
    assert.equal(store.get(Runtimes, 'runc')!.resourceVersion, gen);
  });
});

test('shims on PATH: containerd-shim-<name>-v<N> executables become io.containerd.<name>.v<N>', async () => {
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  for (const [f, mode] of [['containerd-shim-runc-v2', 0o755], ['containerd-shim-kata-qemu-v2', 0o755], ['containerd-shim', 0o755], ['containerd-shim-noexec-v1', 0o644], ['runc', 0o755]] as const) {
    writeFileSync(join(bin, f), '#!/bin/sh\n');
    chmodSync(join(bin, f), mode);
  }
  assert.deepEqual(shimsOnPath(`relative:${bin}:/nonexistent:${bin}`), ['io.containerd.kata-qemu.v2', 'io.containerd.runc.v2']);
  // A directory reached through a link (/bin -> /usr/bin) is the same directory.
  symlinkSync(bin, join(dir, 'linked-bin'));
  assert.deepEqual(shimsOnPath(`${join(dir, 'linked-bin')}:${bin}`), ['io.containerd.kata-qemu.v2', 'io.containerd.runc.v2']);
});
