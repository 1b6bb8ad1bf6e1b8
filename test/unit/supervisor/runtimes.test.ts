// Runtime registry: names → supervisor runtime + shim options, and the options' wire encoding.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRuntimes } from '../../../drivers/supervisor/runtimes.ts';
import { encodeShimOptions } from '../../../drivers/supervisor/client.ts';
import { Options as RuncOptions } from '../../../drivers/supervisor/gen/runc-options.ts';

/** The runc shim's options of a resolved runtime. */
const runcFields = (o: { fields: object } | undefined) => (o?.fields ?? {}) as Partial<RuncOptions>;

const execRoot = '/run/engine-test';

test('stdrt is the runc v2 shim with binary runc and our runc root; empty name means the default', () => {
  const r = createRuntimes({ defaultRuntime: 'stdrt', runtimes: {}, execRoot });
  const want = { name: 'io.containerd.runc.v2', options: { typeUrl: 'containerd.runc.v1.Options', fields: { binary_name: 'runc', root: `${execRoot}/runtime-runc`, systemd_cgroup: false } } };
  assert.deepEqual(r.resolve('stdrt'), want);
  assert.deepEqual(r.resolve(''), want);
  assert.equal(r.default, 'stdrt');
  assert.deepEqual(r.names(), ['stdrt', 'runc']);
  assert.deepEqual(r.resolve('runc'), r.resolve('stdrt'), 'runc is the drop-in name of stdrt');
});

test('unknown names are InvalidArgument with the engine message', () => {
  const r = createRuntimes({ defaultRuntime: 'stdrt', runtimes: {}, execRoot });
  assert.throws(() => r.resolve('nope'), (e: { code?: string; message: string }) => e.code === 'InvalidArgument' && e.message === 'unknown or invalid runtime name: nope');
});

test('a path runtime is a drop-in: runc shim with BinaryName = path', () => {
  const r = createRuntimes({ defaultRuntime: 'mine', runtimes: { mine: { path: '/usr/local/bin/my-runc' } }, execRoot });
  assert.equal(r.default, 'mine');
  const x = r.resolve('');
  assert.equal(x.name, 'io.containerd.runc.v2');
  assert.equal(runcFields(x.options).binary_name, '/usr/local/bin/my-runc');
  assert.deepEqual(r.names().sort(), ['mine', 'runc', 'stdrt']);
});

test('runtimeArgs get a wrapper script', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'engrt-'));
  try {
    const r = createRuntimes({ defaultRuntime: 'stdrt', runtimes: { dbg: { path: '/usr/sbin/runc', runtimeArgs: ['--debug', "it's"] } }, execRoot: dir });
    const bin = runcFields(r.resolve('dbg').options).binary_name as string;
    assert.equal(bin, join(dir, 'runtimes', 'dbg'));
    assert.equal(await readFile(bin, 'utf8'), `#!/bin/sh\nexec '/usr/sbin/runc' '--debug' 'it'\\''s' "$@"\n`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('runtimeType: runc shims take Go-style option keys; other shims get runtimeoptions', () => {
  const r = createRuntimes({
    defaultRuntime: 'stdrt',
    runtimes: {
      sysd: { runtimeType: 'io.containerd.runc.v2', options: { BinaryName: 'crun', SystemdCgroup: true, IoUid: 1000 } },
      kata: { runtimeType: 'io.containerd.kata.v2', options: { ConfigPath: '/etc/kata.toml', TypeUrl: 'io.containerd.kata.v2.Options' } },
      bare: { runtimeType: 'io.containerd.other.v1' },
    },
    execRoot,
  });
  assert.deepEqual(r.resolve('sysd'), {
    name: 'io.containerd.runc.v2',
    options: { typeUrl: 'containerd.runc.v1.Options', fields: { binary_name: 'crun', root: `${execRoot}/runtime-runc`, systemd_cgroup: true, io_uid: 1000 } },
  });
  assert.deepEqual(r.resolve('kata'), {
    name: 'io.containerd.kata.v2',
    options: { typeUrl: 'runtimeoptions.v1.Options', fields: { config_path: '/etc/kata.toml', type_url: 'io.containerd.kata.v2.Options' } },
  });
  assert.deepEqual(r.resolve('bare'), { name: 'io.containerd.other.v1' });
  // A shim name not in the config passes straight through.
  assert.deepEqual(r.resolve('io.containerd.foo.v2'), { name: 'io.containerd.foo.v2' });
});

test('bad configs are rejected', () => {
  const bad = (runtimes: Parameters<typeof createRuntimes>[0]['runtimes'], def = 'stdrt') => () => createRuntimes({ defaultRuntime: def, runtimes, execRoot });
  assert.throws(bad({ a: { path: '/x', runtimeType: 'io.containerd.runc.v2' } }), /mutually exclusive/);
  assert.throws(bad({ a: { path: '/x', options: { BinaryName: 'y' } } }), /options/);
  assert.throws(bad({ a: { runtimeType: 'io.containerd.runc.v2', options: { Bogus: 1 } } }), /unknown option/);
  assert.throws(bad({ a: {} }), /path or runtimeType/);
  assert.throws(bad({}, 'missing'), /default runtime 'missing' does not exist/);
});

test('resolved options encode as the bare-URL Any containerd expects', () => {
  const r = createRuntimes({ defaultRuntime: 'stdrt', runtimes: {}, execRoot });
  const o = r.resolve('stdrt').options!;
  const any = encodeShimOptions(o)!;
  assert.equal(any.type_url, 'containerd.runc.v1.Options');
  // binary_name is field 6 (tag 0x32), root field 7 (tag 0x3a).
  assert.equal(any.value[0], 0x32);
  const back = RuncOptions.decode(any.value);
  assert.equal(back.binary_name, 'runc');
  assert.equal(back.root, `${execRoot}/runtime-runc`);
});
