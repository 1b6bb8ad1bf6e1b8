// SELinux label choice (go-selinux / moby rules) and the spec builder's use of labels. This
// machine has no SELinux: host detection is checked against fake selinuxfs roots, relabelling
// against a fake setxattr.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { createSpecBuilder, parseSecurityOpts } from '../../../drivers/oci/index.ts';
import {
  bindLabel,
  CONTAINER_FILE_LABEL,
  CONTAINER_PROCESS_LABEL,
  formatContext,
  generatedLabelOpts,
  initLabels,
  labelOptions,
  McsAllocator,
  parseContext,
  PRIV_MOUNT_LABEL,
  relabel,
  relabelJobs,
  releaseLabels,
  SELINUX_UNAVAILABLE_WARNING,
  selinuxActive,
  selinuxEnabled,
  selinuxStartWarning,
} from '../../../drivers/oci/selinux.ts';
import type { SelinuxLabels } from '../../../drivers/oci/selinux.ts';

const log = pino({ level: 'silent' });

/** A random source that plays `values` in turn (then keeps the last ones' cycle). */
function scripted(values: number[]): (max: number) => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

test('host detection: selinuxfs with its enforce file, and a daemon not in the kernel context', () => {
  const dir = mkdtempSync(join(tmpdir(), 'selinuxfs-'));
  try {
    assert.equal(selinuxEnabled(dir, () => 'system_u:system_r:container_runtime_t:s0'), false, 'no enforce file');
    writeFileSync(join(dir, 'enforce'), '1');
    assert.equal(selinuxEnabled(dir, () => 'system_u:system_r:container_runtime_t:s0'), true);
    assert.equal(selinuxEnabled(dir, () => 'kernel'), false);
    assert.equal(selinuxEnabled(join(dir, 'absent'), () => ''), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // This machine: no selinuxfs.
  if (!existsSync('/sys/fs/selinux/enforce')) assert.equal(selinuxEnabled(), false);
});

test('--selinux-enabled: labels only where the host has SELinux; the reference warning where it has not', () => {
  assert.equal(selinuxActive(true, () => true), true);
  assert.equal(selinuxActive(true, () => false), false);
  assert.equal(selinuxActive(false, () => true), false);
  assert.equal(selinuxStartWarning(true, () => false), SELINUX_UNAVAILABLE_WARNING);
  assert.match(SELINUX_UNAVAILABLE_WARNING, /could not enable SELinux on the host system/);
  assert.equal(selinuxStartWarning(true, () => true), undefined);
  assert.equal(selinuxStartWarning(false, () => false), undefined);
});

test('contexts: user:role:type[:level], the level keeping its colons', () => {
  assert.deepEqual(parseContext('system_u:system_r:container_t:s0:c1,c2'), { user: 'system_u', role: 'system_r', type: 'container_t', level: 's0:c1,c2' });
  assert.deepEqual(parseContext('u:r:t'), { user: 'u', role: 'r', type: 't', level: '' });
  assert.equal(formatContext(parseContext('system_u:system_r:container_t:s0:c1,c2')), 'system_u:system_r:container_t:s0:c1,c2');
  assert.equal(formatContext({ user: 'u', role: 'r', type: 't', level: '' }), 'u:r:t');
  assert.throws(() => parseContext('nope'), /invalid SELinux context/);
});

test('MCS pairs: two distinct categories, A < B, in 0..1023, never the same pair twice while held', () => {
  const mcs = new McsAllocator();
  const seen = new Set<string>();
  for (let i = 0; i < 3000; i++) {
    const level = mcs.allocate();
    const m = /^s0:c(\d+),c(\d+)$/.exec(level);
    assert.ok(m, level);
    const [a, b] = [Number(m[1]), Number(m[2])];
    assert.ok(a < b && a >= 0 && b <= 1023, level);
    assert.ok(!seen.has(level), `${level} given twice`);
    seen.add(level);
  }
});

test('MCS pairs: the privileged mount label\'s pair is never given; equal draws are redrawn; a released pair is free again', () => {
  // Draws: (1022,1023) is held from the start, (5,5) is not a pair, then (9,3) gives c3,c9.
  const mcs = new McsAllocator(scripted([1023, 1022, 5, 5, 9, 3]));
  assert.equal(mcs.has('s0:c1022,c1023'), true);
  assert.equal(mcs.allocate(), 's0:c3,c9');
  // A held pair drawn again is redrawn…
  const again = new McsAllocator(scripted([3, 9, 3, 9, 4, 7]));
  again.reserve('s0:c3,c9');
  assert.equal(again.allocate(), 's0:c4,c7');
  // …and a released one can be taken again.
  const reuse = new McsAllocator(scripted([3, 9]));
  assert.equal(reuse.allocate(), 's0:c3,c9');
  assert.equal(reuse.reserve('s0:c3,c9'), false, 'held');
  reuse.release('s0:c3,c9');
  assert.equal(reuse.reserve('s0:c3,c9'), true);
});

test('initLabels: container_t / container_file_t on one fresh MCS pair; released at removal', () => {
  const mcs = new McsAllocator(scripted([7, 2]));
  const l = initLabels([], mcs);
  assert.deepEqual(l, { processLabel: 'system_u:system_r:container_t:s0:c2,c7', mountLabel: 'system_u:object_r:container_file_t:s0:c2,c7' });
  assert.equal(mcs.has('s0:c2,c7'), true);
  releaseLabels(l, mcs);
  assert.equal(mcs.has('s0:c2,c7'), false);
  assert.equal(mcs.has('s0:c1022,c1023'), true, 'the privileged pair stays held');
  // With real randomness: the documented shapes.
  const r = initLabels([], new McsAllocator());
  assert.match(r.processLabel, /^system_u:system_r:container_t:s0:c\d+,c\d+$/);
  assert.equal(parseContext(r.mountLabel).level, parseContext(r.processLabel).level);
  assert.equal(parseContext(r.mountLabel).type, 'container_file_t');
  assert.equal(CONTAINER_PROCESS_LABEL, 'system_u:system_r:container_t:s0');
  assert.equal(CONTAINER_FILE_LABEL, 'system_u:object_r:container_file_t:s0');
});

test('initLabels: label=user:/role:/type:/level:/filetype: change the process label; user and level the mount label too', () => {
  const mcs = new McsAllocator(scripted([1, 2]));
  const l = initLabels(['type:spc_t', 'role:object_r', 'user:staff_u', 'filetype:svirt_sandbox_file_t'], mcs);
  assert.deepEqual(l, { processLabel: 'staff_u:object_r:spc_t:s0:c1,c2', mountLabel: 'staff_u:object_r:svirt_sandbox_file_t:s0:c1,c2' });
  // A level of the user's own: the allocated pair is given back and that level held instead.
  const own = new McsAllocator(scripted([1, 2]));
  const lv = initLabels(['level:s0:c100,c200'], own);
  assert.deepEqual(lv, { processLabel: 'system_u:system_r:container_t:s0:c100,c200', mountLabel: 'system_u:object_r:container_file_t:s0:c100,c200' });
  assert.equal(own.has('s0:c1,c2'), false);
  assert.equal(own.has('s0:c100,c200'), true);
});

test('initLabels: disable gives no process label and the privileged mount label; bad options are refused', () => {
  const mcs = new McsAllocator(scripted([1, 2]));
  assert.deepEqual(initLabels(['disable'], mcs), { processLabel: '', mountLabel: PRIV_MOUNT_LABEL });
  assert.equal(PRIV_MOUNT_LABEL, 'system_u:object_r:container_file_t:s0:c1022,c1023');
  assert.equal(mcs.has('s0:c1,c2'), false, 'the pair drawn is given back');
  assert.throws(() => initLabels(['foo'], mcs), /Bad label option "foo", valid options 'disable' or \n'user, role, level, type, filetype' followed by ':' and a value/);
  assert.throws(() => initLabels(['colour:red'], mcs), /Bad label option "colour", valid options 'disable, user, role, level, type, filetype'/);
  assert.equal(mcs.has('s0:c1,c2'), false, 'nothing held after a refusal');
});

test('label options from SecurityOpt: label=X, label:X, bare disable', () => {
  assert.deepEqual(labelOptions(['label=type:spc_t', 'label:level:s0:c1,c2', 'disable', 'seccomp=unconfined', 'no-new-privileges']), ['type:spc_t', 'level:s0:c1,c2', 'disable']);
  assert.deepEqual(parseSecurityOpts(['label=disable', 'label=user:u', 'apparmor=unconfined']).labels, ['disable', 'user:u']);
  assert.deepEqual(parseSecurityOpts([]).labels, []);
});

test('create-time label options (moby generateSecurityOpt): disable for privileged / host pid / host ipc; a joined container\'s label', () => {
  const none = () => '';
  assert.deepEqual(generatedLabelOpts({ Privileged: true }, none), ['label=disable']);
  assert.deepEqual(generatedLabelOpts({ PidMode: 'host' }, none), ['label=disable']);
  assert.deepEqual(generatedLabelOpts({ IpcMode: 'host' }, none), ['label=disable']);
  assert.deepEqual(generatedLabelOpts({ Privileged: true, SecurityOpt: ['label=type:spc_t'] }, none), [], 'the caller\'s own label options win');
  assert.deepEqual(generatedLabelOpts({}, none), []);
  const labels: Record<string, string> = { a: 'system_u:system_r:container_t:s0:c1,c2', b: 'system_u:system_r:container_t:s0:c3,c4', plain: '' };
  const of = (ref: string) => labels[ref] ?? '';
  const dupA = ['label=user:system_u', 'label=role:system_r', 'label=type:container_t', 'label=level:s0:c1,c2'];
  assert.deepEqual(generatedLabelOpts({ IpcMode: 'container:a' }, of), dupA);
  assert.deepEqual(generatedLabelOpts({ PidMode: 'container:a' }, of), dupA);
  assert.deepEqual(generatedLabelOpts({ PidMode: 'container:a', IpcMode: 'container:a' }, of), dupA);
  assert.deepEqual(generatedLabelOpts({ IpcMode: 'container:plain' }, of), []);
  assert.throws(() => generatedLabelOpts({ PidMode: 'container:a', IpcMode: 'container:b' }, of), /--ipc and --pid containers SELinux labels aren't the same/);
});

test('relabel jobs: binds with z / Z, volumes through their resolved sources', () => {
  const jobs = relabelJobs(['/src/a:/a:z', '/src/b:/b:ro,Z', '/src/c:/c', '/src/d:/d:ro', 'vol:/v:Z', 'gone:/g:z'], [{ source: '/var/lib/engine/volumes/vol/_data', destination: '/v', readOnly: false, propagation: '' }]);
  assert.deepEqual(jobs, [
    { source: '/src/a', shared: true },
    { source: '/src/b', shared: false },
    { source: '/var/lib/engine/volumes/vol/_data', shared: false },
  ]);
});

test('relabel: shared (z) at level s0, private (Z) the mount label; system paths refused; unlabelled file systems left alone', async () => {
  const calls: Array<[string, string]> = [];
  const fake = async (p: string, l: string) => {
    calls.push([p, l]);
  };
  const mount = 'system_u:object_r:container_file_t:s0:c5,c6';
  await relabel('/data/shared/', mount, true, fake);
  await relabel('/data/own', mount, false, fake);
  await relabel('/data/none', '', false, fake);
  assert.deepEqual(calls, [
    ['/data/shared', 'system_u:object_r:container_file_t:s0'],
    ['/data/own', mount],
  ]);
  assert.equal(bindLabel(mount, true), 'system_u:object_r:container_file_t:s0');
  for (const p of ['/', '/usr', '/etc/', '/var/lib']) await assert.rejects(relabel(p, mount, false, fake), /SELinux relabeling of .* is not allowed/);
  await relabel('/data/nfs', mount, false, async () => {
    throw new Error('chcon: failed to change context of \'/data/nfs\': Operation not supported');
  });
  await assert.rejects(relabel('/data/x', mount, false, async () => {
    throw new Error('Permission denied');
  }), /error setting label on mount source '\/data\/x': Permission denied/);
});

// ---- the spec builder ------------------------------------------------------------------------

type LabelledSpec = { process: { selinuxLabel?: string }; linux: { mountLabel?: string } };

function fixture() {
  const dir = mkdtempSync(join(tmpdir(), 'oci-selinux-'));
  const rootfs = join(dir, 'rootfs');
  mkdirSync(join(rootfs, 'etc'), { recursive: true });
  writeFileSync(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
  writeFileSync(join(rootfs, 'etc/group'), 'root:x:0:\n');
  return { dir, rootfs, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const LABELS: SelinuxLabels = { processLabel: 'system_u:system_r:container_t:s0:c1,c2', mountLabel: 'system_u:object_r:container_file_t:s0:c1,c2' };

async function buildWith(rootfs: string, host: Record<string, unknown>, selinux: SelinuxLabels | undefined, relabelled: Array<[string, string, boolean]> = []) {
  const b = createSpecBuilder({
    log,
    relabel: async (p, l, shared) => {
      relabelled.push([p, l, shared]);
    },
  });
  return (await b.build({
    id: 'abc123def',
    config: { Hostname: 'abc123', Domainname: '', User: '', Tty: false, Env: [], WorkingDir: '', Labels: {} },
    hostConfig: { Binds: null, NetworkMode: 'none', Privileged: false, ReadonlyRootfs: false, ShmSize: 0, CapAdd: null, CapDrop: null, Dns: [], DnsOptions: [], DnsSearch: [], ExtraHosts: null, ...host },
    path: '/bin/true',
    args: [],
    rootfs,
    imageEnv: [],
    files: { hostname: '', hosts: '', resolvConf: '' },
    cgroupsPath: '/engine/abc123def',
    ...(selinux ? { selinux } : {}),
  })) as LabelledSpec;
}

test('spec: given labels, process.selinuxLabel and linux.mountLabel; without (no SELinux), neither', async () => {
  const f = fixture();
  try {
    const s = await buildWith(f.rootfs, {}, LABELS);
    assert.equal(s.process.selinuxLabel, LABELS.processLabel);
    assert.equal(s.linux.mountLabel, LABELS.mountLabel);
    const plain = await buildWith(f.rootfs, { SecurityOpt: ['label=type:spc_t'] }, undefined);
    assert.equal('selinuxLabel' in plain.process, false);
    assert.equal('mountLabel' in plain.linux, false);
  } finally {
    f.cleanup();
  }
});

test('spec: --privileged and label=disable run without a process label, keeping the mount label', async () => {
  const f = fixture();
  try {
    const priv = await buildWith(f.rootfs, { Privileged: true }, LABELS);
    assert.equal(priv.process.selinuxLabel, undefined);
    assert.equal(priv.linux.mountLabel, LABELS.mountLabel);
    const disabled = await buildWith(f.rootfs, { SecurityOpt: ['label=disable'] }, { processLabel: '', mountLabel: PRIV_MOUNT_LABEL });
    assert.equal(disabled.process.selinuxLabel, undefined);
    assert.equal(disabled.linux.mountLabel, PRIV_MOUNT_LABEL);
  } finally {
    f.cleanup();
  }
});

test('spec: :z / :Z binds relabelled with the container\'s mount label; nothing relabelled without labels', async () => {
  const f = fixture();
  try {
    const [a, b, c] = ['a', 'b', 'c'].map((n) => join(f.dir, n)) as [string, string, string];
    const binds = [`${a}:/a:z`, `${b}:/b:ro,Z`, `${c}:/c`];
    const done: Array<[string, string, boolean]> = [];
    await buildWith(f.rootfs, { Binds: binds }, LABELS, done);
    assert.deepEqual(done, [
      [a, LABELS.mountLabel, true],
      [b, LABELS.mountLabel, false],
    ]);
    assert.ok(existsSync(a), 'the missing source was created before it was relabelled');
    const none: Array<[string, string, boolean]> = [];
    await buildWith(f.rootfs, { Binds: binds }, undefined, none);
    assert.deepEqual(none, []);
  } finally {
    f.cleanup();
  }
});
