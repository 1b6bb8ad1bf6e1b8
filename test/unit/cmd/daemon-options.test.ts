import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import {
  applyCpuRt,
  applyOomScoreAdj,
  cgroupDriverOpt,
  checkCgroupDriver,
  containersCpuCgroup,
  controlPlaneMtu,
  ROOTLESS_OUTSIDE,
  unsupportedOption,
  warnSelinux,
} from '../../../cmd/daemon-options.ts';
import { textLine, ttyLine } from '../../../cmd/log-format.ts';
import { validateBuilderGc } from '../../../config/load.ts';
import { discardLimits } from '../../../admission/containers/no-cgroups.ts';
import { fromHumanSize } from '../../../lib/units.ts';
import { defaultConfig, type DaemonConfig } from '../../../config/options.ts';
import { parseGenericResources } from '../../../lib/generic-resources.ts';

const silent = pino({ level: 'silent' });
const cfg = (over: Partial<DaemonConfig>): DaemonConfig => ({ ...defaultConfig(), ...over });

test('generic resources: discrete, named sets, and the reference refusals', () => {
  assert.deepEqual(parseGenericResources(['gpu=2,fpga=a', 'fpga=b']), [
    { DiscreteResourceSpec: { Kind: 'gpu', Value: 2 } },
    { NamedResourceSpec: { Kind: 'fpga', Value: 'a' } },
    { NamedResourceSpec: { Kind: 'fpga', Value: 'b' } },
  ]);
  assert.deepEqual(parseGenericResources([' ssd = UUID1 ']), [{ NamedResourceSpec: { Kind: 'ssd', Value: 'UUID1' } }]);
  assert.deepEqual(parseGenericResources([]), []);
  assert.throws(() => parseGenericResources(['gpu=-1']), /could not parse GenericResource: cannot ask for negative resource gpu/);
  assert.throws(() => parseGenericResources(['gpu=1', 'gpu=a']), /could not parse GenericResource: malformed expression 'gpu=\[1 a\]'/);
  assert.throws(() => parseGenericResources(['gpu=1', 'gpu=2']), /malformed expression/);
  assert.throws(() => parseGenericResources(['gpu']), /incorrect term gpu/);
  assert.throws(() => parseGenericResources(['a=b=c']), /incorrect term a=b=c/);
});

test('options of later work refuse the start; defaults and overlay2.override_kernel_check do not', () => {
  assert.equal(unsupportedOption(defaultConfig()), undefined);
  assert.equal(unsupportedOption(cfg({ storageDriver: 'vfs' })), undefined);
  assert.equal(unsupportedOption(cfg({ storageDriver: 'btrfs', storageOpts: ['btrfs.min_space=50M'] })), undefined);
  // overlay2.size is checked by the driver against its backing file system at start.
  assert.equal(unsupportedOption(cfg({ storageOpts: ['overlay2.size=10G'] })), undefined);
  assert.equal(unsupportedOption(cfg({ storageOpts: ['overlay2.override_kernel_check=true'] })), undefined);
  const cases: Array<[Partial<DaemonConfig>, string]> = [
    [{ storageDriver: 'zfs' }, existsSync('/dev/zfs') ? 'not supported by this daemon yet: --storage-driver=zfs' : 'error initializing graphdriver: prerequisites for driver not satisfied (wrong filesystem?)'],
    [{ storageDriver: 'devicemapper' }, 'not supported by this daemon yet: --storage-driver=devicemapper'],
    [{ storageDriver: 'fuse-overlayfs', storageOpts: ['fuse-overlayfs.foo=1'] }, 'fuse-overlayfs: unknown option fuse-overlayfs.foo'],
    [{ storageDriver: 'btrfs', storageOpts: ['btrfs.foo=1'] }, 'Unknown option btrfs.foo'],
    [{ storageDriver: 'btrfs', storageOpts: ['btrfs.min_space=abc'] }, "invalid size: 'abc'"],
    [{ storageDriver: 'btrfs', storageOpts: ['foo'] }, 'Unable to parse key/value option: foo'],
    [{ storageDriver: 'vfs', storageOpts: ['vfs.size=1G'] }, 'unknown option vfs.size for vfs'],
    [{ storageDriver: 'overlay2', storageOpts: ['overlay2.mountopt=x'] }, 'overlay2: unknown option overlay2.mountopt'],
    [{ storageDriver: 'overlay2', storageOpts: ['overlay2.override_kernel_check=maybe'] }, 'strconv.ParseBool: parsing "maybe": invalid syntax'],
    [{ storageDriver: 'vfs', storageOpts: ['size=1G'] }, 'Filesystem does not support, or has not enabled quotas'],
    [{ usernsRemap: 'default', features: { 'supervisor-snapshotter': true } }, 'not supported by this daemon yet: --userns-remap with --feature supervisor-snapshotter'],
    // Outside rootlesskit (this test's process): refused, naming the script that starts it inside.
    ...(process.env.ROOTLESSKIT_STATE_DIR ? [] : [[{ rootless: true }, ROOTLESS_OUTSIDE] as [Partial<DaemonConfig>, string]]),
    [{ features: { 'supervisor-snapshotter': true }, storageDriver: 'native' }, 'not supported by this daemon yet: --storage-driver=native with --feature supervisor-snapshotter (its only snapshotter is overlayfs)'],
    [{ features: { 'supervisor-snapshotter': true }, storageOpts: ['overlay2.size=1G'] }, 'not supported by this daemon yet: --storage-opt with --feature supervisor-snapshotter'],
  ];
  for (const [over, msg] of cases) assert.equal(unsupportedOption(cfg(over)), msg);
  assert.equal(unsupportedOption(cfg({ features: { 'supervisor-snapshotter': false } })), undefined);
  assert.equal(unsupportedOption(cfg({ features: { 'supervisor-snapshotter': true } })), undefined);
  assert.equal(unsupportedOption(cfg({ features: { 'supervisor-snapshotter': true }, storageDriver: 'overlayfs' })), undefined);
});

test('--selinux-enabled starts the daemon; without SELinux on the host it logs the reference warning', () => {
  assert.equal(unsupportedOption(cfg({ selinuxEnabled: true })), undefined);
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
  assert.equal(warnSelinux(cfg({ selinuxEnabled: true }), logger, () => false), 'Docker could not enable SELinux on the host system');
  assert.equal(lines.length, 1);
  const logged = JSON.parse(lines[0]!) as { level: number; msg: string };
  assert.equal(logged.level, 40, 'a warning');
  assert.equal(logged.msg, 'Docker could not enable SELinux on the host system');
  // SELinux on the host, or the option off: nothing to say.
  assert.equal(warnSelinux(cfg({ selinuxEnabled: true }), logger, () => true), undefined);
  assert.equal(warnSelinux(cfg({}), logger, () => false), undefined);
  assert.equal(lines.length, 1);
});

test('native.cgroupdriver: cgroupfs acts, systemd refused without systemd', () => {
  assert.equal(cgroupDriverOpt(['native.cgroupdriver=cgroupfs']), 'cgroupfs');
  assert.equal(cgroupDriverOpt([]), '');
  checkCgroupDriver(['native.cgroupdriver=cgroupfs'], false);
  assert.throws(() => checkCgroupDriver(['native.cgroupdriver=systemd'], false), { message: 'systemd cgroup flag passed, but systemd support for managing cgroups is not available' });
  assert.throws(() => checkCgroupDriver(['native.cgroupdriver=systemd'], true), /not supported by this daemon yet/);
});

test('oom-score-adjust writes the score; a permission refusal is not fatal', () => {
  const dir = mkdtempSync(join(tmpdir(), 'oom-'));
  try {
    const f = join(dir, 'oom_score_adj');
    writeFileSync(f, '0');
    applyOomScoreAdj(300, silent, f);
    assert.equal(readFileSync(f, 'utf8'), '300');
    applyOomScoreAdj(0, silent, join(dir, 'absent/x'));
    assert.throws(() => applyOomScoreAdj(1001, silent, f), /out of range/);
    assert.throws(() => applyOomScoreAdj(5, silent, join(dir, 'absent/x')), /ENOENT/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('cpu-rt-period/runtime are written into the containers\' parent cgroup and each one above it', () => {
  const mount = mkdtempSync(join(tmpdir(), 'cpu-'));
  try {
    writeFileSync(join(mount, 'cpu.rt_runtime_us'), '950000');
    const at = applyCpuRt(cfg({ cpuRtPeriod: 1000000, cpuRtRuntime: 20000, cgroupParent: '/a/b' }), mount);
    assert.equal(at, join(mount, '/a/b'));
    for (const d of ['a', 'a/b']) {
      assert.equal(readFileSync(join(mount, d, 'cpu.rt_period_us'), 'utf8'), '1000000');
      assert.equal(readFileSync(join(mount, d, 'cpu.rt_runtime_us'), 'utf8'), '20000');
    }
    assert.equal(applyCpuRt(cfg({}), mount), undefined);
    assert.throws(() => applyCpuRt(cfg({ cpuRtRuntime: 1 }), null), /cgroup v2/);
    mkdirSync(join(mount, 'nort'));
    assert.throws(() => applyCpuRt(cfg({ cpuRtRuntime: 1 }), join(mount, 'nort')), /not supported by the kernel/);
    assert.equal(containersCpuCgroup(''), '/engine');
  } finally {
    rmSync(mount, { recursive: true, force: true });
  }
});

test('network control plane MTU: the reference minimum', () => {
  assert.equal(controlPlaneMtu(1400), 1400);
  assert.equal(controlPlaneMtu(100), 500);
});

test('builder gc policy is validated', () => {
  validateBuilderGc({ gc: { enabled: true, defaultKeepStorage: '10GB', policy: [{ keepStorage: '512MB', filter: ['unused-for=2200h'] }, { all: true, keepStorage: '1GB' }] } });
  validateBuilderGc(undefined);
  assert.equal(fromHumanSize('10GB'), 10e9);
  assert.throws(() => validateBuilderGc({ gc: { defaultKeepStorage: 'lots' } }), /defaultKeepStorage: invalid size 'lots'/);
  assert.throws(() => validateBuilderGc({ gc: { policy: [{ filter: ['unused-for'] }] } }), /bad format of filter/);
  assert.throws(() => validateBuilderGc({ gc: { policy: [{ filter: ['unused-for=3 days'] }] } }), /invalid duration/);
});

test('raw logs: the terminal form is colored with elapsed seconds; the raw form is logfmt', () => {
  const rec = JSON.stringify({ level: 30, time: new Date(5000).toISOString(), msg: 'API listen', hosts: 'unix:///x' });
  assert.equal(ttyLine(rec, 2000), `\x1b[36mINFO\x1b[0m[0003] ${'API listen'.padEnd(44)} \x1b[36mhosts\x1b[0m=unix:///x\n`);
  assert.match(textLine(rec), /^time="1970-01-01T00:00:05.000Z" level=info msg="API listen" hosts=unix:\/\/\/x\n$/);
  assert.doesNotMatch(textLine(rec), /\x1b/);
});

test('no cgroups (rootless on cgroup v1): each limit is discarded with the reference\'s warning; NanoCpus is refused', () => {
  const h: Record<string, unknown> = { Memory: 32 << 20, MemorySwap: 64 << 20, PidsLimit: 10, CpuShares: 512, CpusetCpus: '0', MemorySwappiness: -1, BlkioWeight: 0 };
  assert.deepEqual(discardLimits(h), [
    'Your kernel does not support memory limit capabilities or the cgroup is not mounted. Limitation discarded.',
    'Your kernel does not support PIDs limit capabilities or the cgroup is not mounted. PIDs limit discarded.',
    'Your kernel does not support CPU shares or the cgroup is not mounted. Shares discarded.',
    'Your kernel does not support cpuset or the cgroup is not mounted. Cpuset discarded.',
  ]);
  assert.deepEqual(h, { Memory: 0, MemorySwap: 0, PidsLimit: null, CpuShares: 0, CpusetCpus: '', MemorySwappiness: -1, BlkioWeight: 0 });
  // Nothing asked, nothing said (-1 and 0 mean unlimited / unset).
  assert.deepEqual(discardLimits({ PidsLimit: -1, Memory: 0, OomKillDisable: false }), []);
  assert.throws(() => discardLimits({ NanoCpus: 1e9 }), /NanoCPUs can not be set, as your kernel does not support CPU CFS scheduler or the cgroup is not mounted/);
});

