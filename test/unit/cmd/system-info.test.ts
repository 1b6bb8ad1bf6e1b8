import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { apparmorEnabled, cgroupV2, createSystemInfo, securityOptions } from '../../../cmd/system-info.ts';
import type { DaemonConfig } from '../../../config/load.ts';

function deps(dataRoot: string, version: () => Promise<{ version: string; revision: string }>) {
  return {
    config: { dataRoot } as DaemonConfig,
    layers: { driverName: 'overlay2', driverStatus: (): Array<[string, string]> => [] },
    supervisor: { version },
    runtimes: { names: () => ['stdrt'], default: 'stdrt' },
  };
}

test('the supervisor version is asked once, at creation, and reused', async () => {
  const root = mkdtempSync(join(tmpdir(), 'sysinfo-'));
  try {
    let asked = 0;
    const info = createSystemInfo(deps(root, async () => {
      asked++;
      return { version: '1.6.20', revision: 'abc' };
    }));
    assert.equal(asked, 1, 'asked at creation');
    assert.deepEqual((await info.components())[0], { Name: 'supervisor', Version: '1.6.20', Details: { GitCommit: 'abc' } });
    assert.equal(((await info.info()) as { ContainerdCommit: { ID: string } }).ContainerdCommit.ID, 'abc');
    assert.equal(asked, 1);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a supervisor that never answers does not hold /info and /version: they answer with empty versions', async () => {
  const root = mkdtempSync(join(tmpdir(), 'sysinfo-'));
  try {
    const info = createSystemInfo(deps(root, () => new Promise(() => {})));
    const [components, full] = await Promise.all([info.components(), info.info()]);
    assert.equal(components[0]!.Version, '');
    assert.equal((full as { ContainerdCommit: { ID: string } }).ContainerdCommit.ID, '');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

const BASE = { selinux: false, userns: false, apparmor: false, cgroupV2: false, rootless: false };

test('SecurityOptions: the seccomp profile as the daemon was given it (builtin by default)', () => {
  assert.deepEqual(securityOptions({ ...BASE }), ['name=seccomp,profile=builtin']);
  assert.deepEqual(securityOptions({ ...BASE, seccompProfile: 'builtin' }), ['name=seccomp,profile=builtin']);
  assert.deepEqual(securityOptions({ ...BASE, seccompProfile: 'unconfined' }), ['name=seccomp,profile=unconfined']);
  assert.deepEqual(securityOptions({ ...BASE, seccompProfile: '/etc/engine/seccomp.json' }), ['name=seccomp,profile=/etc/engine/seccomp.json']);
});

test('SecurityOptions: every one in the reference order (apparmor, seccomp, selinux, userns, rootless, cgroupns)', () => {
  assert.deepEqual(securityOptions({ seccompProfile: 'builtin', apparmor: true, selinux: true, userns: true, rootless: true, cgroupV2: true }), [
    'name=apparmor',
    'name=seccomp,profile=builtin',
    'name=selinux',
    'name=userns',
    'name=rootless',
    'name=cgroupns',
  ]);
  assert.deepEqual(securityOptions({ ...BASE, selinux: true }), ['name=seccomp,profile=builtin', 'name=selinux']);
  assert.deepEqual(securityOptions({ ...BASE, userns: true }), ['name=seccomp,profile=builtin', 'name=userns']);
  // cgroupns: cgroup v2 with private cgroup namespaces by default; never on v1.
  assert.deepEqual(securityOptions({ ...BASE, cgroupV2: true, cgroupnsMode: 'host' }), ['name=seccomp,profile=builtin']);
  assert.deepEqual(securityOptions({ ...BASE, cgroupV2: false, cgroupnsMode: 'private' }), ['name=seccomp,profile=builtin']);
});

test('SecurityOptions host facts: AppArmor from its module parameter, cgroup v2 from cgroup.controllers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'secopts-'));
  try {
    const enabled = join(dir, 'enabled');
    assert.equal(apparmorEnabled(enabled), false, 'absent');
    writeFileSync(enabled, 'Y\n');
    assert.equal(apparmorEnabled(enabled), true);
    writeFileSync(enabled, 'N\n');
    assert.equal(apparmorEnabled(enabled), false);
    assert.equal(cgroupV2(dir), false);
    writeFileSync(join(dir, 'cgroup.controllers'), 'cpu io memory pids\n');
    assert.equal(cgroupV2(dir), true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('docker info SecurityOptions from the config and this host', async () => {
  const root = mkdtempSync(join(tmpdir(), 'sysinfo-'));
  const hostApparmor = existsSync('/sys/module/apparmor/parameters/enabled') && readFileSync('/sys/module/apparmor/parameters/enabled', 'utf8').startsWith('Y');
  const hostV2 = existsSync('/sys/fs/cgroup/cgroup.controllers');
  const hostSelinux = existsSync('/sys/fs/selinux/enforce');
  const expect = (seccomp: string, selinux: boolean, userns: boolean) => [
    ...(hostApparmor ? ['name=apparmor'] : []),
    `name=seccomp,profile=${seccomp}`,
    ...(selinux && hostSelinux ? ['name=selinux'] : []),
    ...(userns ? ['name=userns'] : []),
    ...(hostV2 ? ['name=cgroupns'] : []),
  ];
  try {
    const plain = createSystemInfo(deps(root, async () => ({ version: '', revision: '' })));
    assert.deepEqual(((await plain.info()) as { SecurityOptions: string[] }).SecurityOptions, expect('builtin', false, false));
    const d = deps(root, async () => ({ version: '', revision: '' }));
    d.config = { dataRoot: root, seccompProfile: 'unconfined', selinuxEnabled: true, usernsRemap: 'default' } as DaemonConfig;
    const set = createSystemInfo(d);
    assert.deepEqual(((await set.info()) as { SecurityOptions: string[] }).SecurityOptions, expect('unconfined', true, true));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
