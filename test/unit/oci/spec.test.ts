import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, existsSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createSpecBuilder, parseBind, resolveUserSync, validateBind } from '../../../drivers/oci/index.ts';
import { EngineError } from '../../../lib/errors.ts';

const log = pino({ level: 'silent' });

type Spec = {
  ociVersion: string;
  hostname?: string;
  root: { path: string; readonly: boolean };
  process: {
    args: string[];
    env: string[];
    cwd: string;
    terminal: boolean;
    user: { uid: number; gid: number; additionalGids?: number[] };
    capabilities: { bounding: string[]; effective?: string[]; permitted?: string[]; inheritable?: string[] };
    noNewPrivileges?: boolean;
    oomScoreAdj: number;
    rlimits?: { type: string; hard: number; soft: number }[];
  };
  mounts: { destination: string; type: string; source: string; options: string[] }[];
  linux: {
    namespaces: { type: string; path?: string }[];
    maskedPaths?: string[];
    readonlyPaths?: string[];
    resources: { devices: { allow: boolean; type?: string; major?: number; minor?: number; access: string }[]; memory?: Record<string, unknown>; cpu?: Record<string, unknown>; pids?: { limit: number }; blockIO?: Record<string, unknown> };
    cgroupsPath: string;
    seccomp?: { defaultAction: string; syscalls: { names: string[]; action: string }[] };
    sysctl?: Record<string, string>;
    devices: { path: string }[];
  };
};

function fixture() {
  const dir = mkdtempSync(join(tmpdir(), 'oci-spec-'));
  const rootfs = join(dir, 'rootfs');
  mkdirSync(join(rootfs, 'etc'), { recursive: true });
  writeFileSync(join(rootfs, 'etc/passwd'), ['root:x:0:0:root:/root:/bin/sh', 'daemon:x:1:1:daemon:/usr/sbin:/bin/false', 'app:x:1000:1000:App:/home/app:/bin/sh', '# comment', ''].join('\n'));
  writeFileSync(join(rootfs, 'etc/group'), ['root:x:0:', 'wheel:x:10:root,app', 'app:x:1000:', 'staff:x:50:app', 'audio:x:29:', ''].join('\n'));
  return { dir, rootfs, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function config(over: Record<string, unknown> = {}) {
  return { Hostname: 'abc123', Domainname: '', User: '', Tty: false, Env: ['PATH=/usr/bin:/bin', 'FOO=bar'], WorkingDir: '', Labels: {}, ...over };
}
function hostConfig(over: Record<string, unknown> = {}) {
  return {
    Binds: null, NetworkMode: 'bridge', Privileged: false, ReadonlyRootfs: false, ShmSize: 0, CapAdd: null, CapDrop: null,
    Dns: [], DnsOptions: [], DnsSearch: [], ExtraHosts: null, ...over,
  };
}

async function build(rootfs: string, c = config(), h = hostConfig(), extra: Record<string, unknown> = {}) {
  const b = createSpecBuilder({ log });
  return (await b.build({
    id: 'abc123def',
    config: c,
    hostConfig: h,
    path: '/bin/sh',
    args: ['-c', 'echo hi'],
    rootfs,
    imageEnv: [],
    files: { hostname: '/x/hostname', hosts: '/x/hosts', resolvConf: '/x/resolv.conf' },
    cgroupsPath: '/engine/abc123def',
    ...extra,
  })) as Spec;
}

const DEFAULT_CAPS = ['CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FSETID', 'CAP_FOWNER', 'CAP_MKNOD', 'CAP_NET_RAW', 'CAP_SETGID', 'CAP_SETUID', 'CAP_SETFCAP', 'CAP_SETPCAP', 'CAP_NET_BIND_SERVICE', 'CAP_SYS_CHROOT', 'CAP_KILL', 'CAP_AUDIT_WRITE'];

test('defaults: process, namespaces, caps, masked paths, mounts, devices, seccomp', async () => {
  const f = fixture();
  try {
    const s = await build(f.rootfs);
    assert.match(s.ociVersion, /^1\./);
    assert.deepEqual(s.process.args, ['/bin/sh', '-c', 'echo hi']);
    assert.deepEqual(s.process.env, ['PATH=/usr/bin:/bin', 'HOSTNAME=abc123', 'FOO=bar']);
    assert.equal(s.process.cwd, '/');
    assert.equal(s.process.terminal, false);
    assert.deepEqual(s.process.user, { uid: 0, gid: 0, additionalGids: [10] });
    assert.deepEqual(s.process.capabilities.bounding, DEFAULT_CAPS);
    assert.deepEqual(s.process.capabilities.effective, DEFAULT_CAPS);
    assert.deepEqual(s.process.capabilities.permitted, DEFAULT_CAPS);
    assert.equal(s.process.capabilities.inheritable, undefined);
    assert.equal(s.process.noNewPrivileges, undefined);
    assert.equal(s.process.oomScoreAdj, 0);
    assert.equal(s.hostname, 'abc123');
    assert.deepEqual(s.root, { path: f.rootfs, readonly: false });
    assert.deepEqual(s.linux.namespaces.map((n) => n.type).sort(), ['ipc', 'mount', 'network', 'pid', 'uts']);
    assert.ok(s.linux.maskedPaths!.includes('/proc/kcore'));
    assert.ok(s.linux.maskedPaths!.includes('/sys/firmware'));
    assert.ok(s.linux.readonlyPaths!.includes('/proc/sysrq-trigger'));
    assert.equal(s.linux.cgroupsPath, '/engine/abc123def');
    const byDest = new Map(s.mounts.map((m) => [m.destination, m]));
    for (const d of ['/proc', '/dev', '/dev/pts', '/sys', '/sys/fs/cgroup', '/dev/mqueue', '/dev/shm', '/etc/resolv.conf', '/etc/hostname', '/etc/hosts']) {
      assert.ok(byDest.has(d), `mount ${d}`);
    }
    assert.ok(byDest.get('/dev')!.options.includes('size=65536k'));
    assert.ok(byDest.get('/dev')!.options.includes('mode=755'));
    assert.ok(byDest.get('/sys')!.options.includes('ro'));
    assert.equal(byDest.get('/sys/fs/cgroup')!.type, 'cgroup');
    assert.ok(byDest.get('/sys/fs/cgroup')!.options.includes('ro'));
    assert.ok(byDest.get('/dev/shm')!.options.includes(`size=${64 * 1024 * 1024}`));
    assert.deepEqual(byDest.get('/etc/hosts'), { destination: '/etc/hosts', type: 'bind', source: '/x/hosts', options: ['rbind', 'rprivate'] });
    const rules = s.linux.resources.devices;
    assert.deepEqual(rules[0], { allow: false, access: 'rwm' });
    assert.ok(rules.some((r) => r.allow && r.type === 'c' && r.major === 1 && r.minor === 3));
    assert.ok(rules.some((r) => r.allow && r.type === 'c' && r.major === 136 && r.minor === undefined));
    assert.ok(rules.some((r) => r.allow && r.type === 'b' && r.access === 'm' && r.major === undefined));
    assert.ok(s.linux.devices.some((d) => d.path === '/dev/null'));
    assert.equal(s.linux.seccomp!.defaultAction, 'SCMP_ACT_ALLOW');
    const denied = s.linux.seccomp!.syscalls.flatMap((x) => (x.action === 'SCMP_ACT_ERRNO' ? x.names : []));
    for (const n of ['keyctl', 'mount', 'unshare', 'setns', 'bpf', 'kexec_load', 'init_module', 'clone3']) assert.ok(denied.includes(n), n);
  } finally {
    f.cleanup();
  }
});

test('shm size, tty, workdir, env precedence, resources, ulimits, sysctls, security opts', async () => {
  const f = fixture();
  try {
    const s = await build(
      f.rootfs,
      config({ Tty: true, WorkingDir: '/srv', Env: ['FOO=1', 'HOSTNAME=override'] }),
      hostConfig({
        ShmSize: 128 * 1024 * 1024,
        Memory: 64 << 20, MemorySwap: -1, MemoryReservation: 32 << 20, CpuShares: 512, NanoCpus: 1.5e9, CpusetCpus: '0', PidsLimit: 100, BlkioWeight: 300,
        Ulimits: [{ Name: 'nofile', Soft: 1024, Hard: 2048 }],
        Sysctls: { 'net.ipv4.ip_forward': '1' },
        SecurityOpt: ['no-new-privileges'],
        OomScoreAdj: 500,
        CapAdd: ['sys_admin'],
        CapDrop: ['CAP_MKNOD', 'net_raw'],
      }),
    );
    assert.ok(s.process.env.includes('TERM=xterm'));
    assert.ok(s.process.env.includes('HOSTNAME=override'));
    assert.ok(s.process.env[0]!.startsWith('PATH=/usr/local/sbin'));
    assert.equal(s.process.cwd, '/srv');
    assert.equal(s.process.terminal, true);
    assert.equal(s.process.noNewPrivileges, true);
    assert.equal(s.process.oomScoreAdj, 500);
    assert.deepEqual(s.process.rlimits, [{ type: 'RLIMIT_NOFILE', hard: 2048, soft: 1024 }]);
    const shm = s.mounts.find((m) => m.destination === '/dev/shm')!;
    assert.ok(shm.options.includes(`size=${128 * 1024 * 1024}`));
    assert.deepEqual(s.linux.resources.memory, { limit: 64 << 20, reservation: 32 << 20, swap: -1 });
    assert.deepEqual(s.linux.resources.cpu, { shares: 512, period: 100000, quota: 150000, cpus: '0' });
    assert.deepEqual(s.linux.resources.pids, { limit: 100 });
    assert.deepEqual(s.linux.resources.blockIO, { weight: 300 });
    assert.deepEqual(s.linux.sysctl, { 'net.ipv4.ip_forward': '1' });
    assert.ok(s.process.capabilities.bounding.includes('CAP_SYS_ADMIN'));
    assert.ok(!s.process.capabilities.bounding.includes('CAP_MKNOD'));
    assert.ok(!s.process.capabilities.bounding.includes('CAP_NET_RAW'));
    // SYS_ADMIN re-allows mount & co in the default seccomp profile
    const denied = s.linux.seccomp!.syscalls.flatMap((x) => x.names);
    assert.ok(!denied.includes('mount'));
    assert.ok(denied.includes('keyctl'));
    await assert.rejects(build(f.rootfs, config(), hostConfig({ CapAdd: ['CAP_BOGUS'] })), /unknown capability: "CAP_BOGUS"/);
    await assert.rejects(build(f.rootfs, config(), hostConfig({ SecurityOpt: ['foo'] })), /invalid --security-opt 1: "foo"/);
    const unconf = await build(f.rootfs, config(), hostConfig({ SecurityOpt: ['seccomp=unconfined'] }));
    assert.equal(unconf.linux.seccomp, undefined);
    const dropAll = await build(f.rootfs, config(), hostConfig({ CapDrop: ['ALL'], CapAdd: ['CHOWN'] }));
    assert.deepEqual(dropAll.process.capabilities.bounding, ['CAP_CHOWN']);
  } finally {
    f.cleanup();
  }
});

test('privileged: all caps, no masks, no seccomp, rw /sys, allow-all devices', async () => {
  const f = fixture();
  try {
    const s = await build(f.rootfs, config(), hostConfig({ Privileged: true }));
    assert.ok(s.process.capabilities.bounding.includes('CAP_SYS_ADMIN'));
    assert.ok(s.process.capabilities.bounding.length > 30);
    assert.equal(s.linux.maskedPaths, undefined);
    assert.equal(s.linux.readonlyPaths, undefined);
    assert.equal(s.linux.seccomp, undefined);
    assert.ok(!s.mounts.find((m) => m.destination === '/sys')!.options.includes('ro'));
    assert.ok(!s.mounts.find((m) => m.destination === '/sys/fs/cgroup')!.options.includes('ro'));
    assert.deepEqual(s.linux.resources.devices, [{ allow: true, access: 'rwm' }]);
  } finally {
    f.cleanup();
  }
});

test('host network / ipc / pid modes and readonly rootfs', async () => {
  const f = fixture();
  try {
    const s = await build(f.rootfs, config(), hostConfig({ NetworkMode: 'host', IpcMode: 'host', PidMode: 'host', ReadonlyRootfs: true }));
    const types = s.linux.namespaces.map((n) => n.type);
    assert.ok(!types.includes('network'));
    assert.ok(!types.includes('ipc'));
    assert.ok(!types.includes('pid'));
    assert.ok(types.includes('mount'));
    assert.equal(s.hostname, undefined);
    assert.equal(s.root.readonly, true);
    assert.deepEqual(s.mounts.find((m) => m.destination === '/dev/shm'), { destination: '/dev/shm', type: 'bind', source: '/dev/shm', options: ['rbind', 'rprivate'] });
    assert.deepEqual(s.mounts.find((m) => m.destination === '/etc/hosts')!.options, ['rbind', 'ro', 'rprivate']);
    await assert.rejects(build(f.rootfs, config(), hostConfig({ NetworkMode: 'host', Sysctls: { 'net.core.somaxconn': '1' } })), /not allowed in host network namespace/);
    const none = await build(f.rootfs, config(), hostConfig({ NetworkMode: 'none' }));
    assert.ok(none.linux.namespaces.some((n) => n.type === 'network' && !n.path));
    const joined = await build(f.rootfs, config(), hostConfig(), { netnsPath: '/var/run/netns/x' });
    assert.ok(joined.linux.namespaces.some((n) => n.type === 'network' && n.path === '/var/run/netns/x'));
  } finally {
    f.cleanup();
  }
});

test('user resolution against the rootfs passwd/group', async () => {
  const f = fixture();
  try {
    assert.deepEqual(resolveUserSync(f.rootfs, 'app'), { uid: 1000, gid: 1000, additionalGids: [10, 50], home: '/home/app' });
    assert.deepEqual(resolveUserSync(f.rootfs, '1000'), { uid: 1000, gid: 1000, additionalGids: [10, 50], home: '/home/app' });
    assert.deepEqual(resolveUserSync(f.rootfs, 'app:audio'), { uid: 1000, gid: 29, additionalGids: [], home: '/home/app' });
    assert.deepEqual(resolveUserSync(f.rootfs, '1234:5678'), { uid: 1234, gid: 5678, additionalGids: [], home: '/' });
    assert.deepEqual(resolveUserSync(f.rootfs, '4321'), { uid: 4321, gid: 0, additionalGids: [], home: '/' });
    assert.deepEqual(resolveUserSync(f.rootfs, 'daemon', ['audio', '777']).additionalGids, [29, 777]);
    assert.throws(() => resolveUserSync(f.rootfs, 'nobody'), (e: unknown) => e instanceof EngineError && e.code === 'InvalidArgument' && e.message === 'unable to find user nobody: no matching entries in passwd file');
    assert.throws(() => resolveUserSync(f.rootfs, 'app:nogroup'), /unable to find group nogroup: no matching entries in group file/);
    // a symlinked /etc/passwd resolves inside the rootfs, never on the host
    rmSync(join(f.rootfs, 'etc/passwd'));
    mkdirSync(join(f.rootfs, 'alt'));
    writeFileSync(join(f.rootfs, 'alt/passwd'), 'svc:x:77:77::/:/bin/sh\n');
    symlinkSync('/alt/passwd', join(f.rootfs, 'etc/passwd'));
    assert.equal(resolveUserSync(f.rootfs, 'svc').uid, 77);
    const s = await build(f.rootfs, config({ User: 'svc' }));
    assert.deepEqual(s.process.user, { uid: 77, gid: 77 });
    // non-root: only the bounding set
    assert.equal(s.process.capabilities.effective, undefined);
    assert.deepEqual(s.process.capabilities.bounding.length, 14);
    await assert.rejects(build(f.rootfs, config({ User: 'ghost' })), /unable to find user ghost/);
  } finally {
    f.cleanup();
  }
});

test('binds, mounts and tmpfs', async () => {
  const f = fixture();
  try {
    const hostDir = join(f.dir, 'data');
    const missing = join(f.dir, 'created/by/bind');
    mkdirSync(hostDir);
    const s = await build(
      f.rootfs,
      config(),
      hostConfig({
        Binds: [`${hostDir}:/data:ro`, `${missing}:/data/sub`, `${hostDir}:/shared:rw,rshared`],
        Mounts: [{ Type: 'tmpfs', Target: '/scratch', TmpfsOptions: { SizeBytes: 1 << 20, Mode: 0o1777 } }, { Type: 'bind', Source: hostDir, Target: '/m', ReadOnly: true }],
        Tmpfs: { '/run': 'rw,size=65536k' },
      }),
    );
    const byDest = new Map(s.mounts.map((m) => [m.destination, m]));
    assert.deepEqual(byDest.get('/data'), { destination: '/data', type: 'bind', source: hostDir, options: ['rbind', 'ro', 'rprivate'] });
    assert.deepEqual(byDest.get('/data/sub')!.options, ['rbind', 'rprivate']);
    assert.ok(existsSync(missing), 'missing bind source is created');
    assert.deepEqual(byDest.get('/shared')!.options, ['rbind', 'rshared']);
    assert.deepEqual(byDest.get('/m')!.options, ['rbind', 'ro', 'rprivate']);
    assert.deepEqual(byDest.get('/scratch'), { destination: '/scratch', type: 'tmpfs', source: 'tmpfs', options: ['noexec', 'nosuid', 'nodev', 'rprivate', 'size=1m', 'mode=1777'] });
    assert.deepEqual(byDest.get('/run')!.options, ['noexec', 'nosuid', 'nodev', 'rprivate', 'rw', 'size=65536k']);
    const order = s.mounts.map((m) => m.destination);
    assert.ok(order.indexOf('/data') < order.indexOf('/data/sub'));
    // a user mount at /dev/shm replaces the default one
    const s2 = await build(f.rootfs, config(), hostConfig({ Binds: [`${hostDir}:/dev/shm`] }));
    assert.equal(s2.mounts.filter((m) => m.destination === '/dev/shm').length, 1);
    assert.equal(s2.mounts.find((m) => m.destination === '/dev/shm')!.type, 'bind');
    await assert.rejects(build(f.rootfs, config(), hostConfig({ Binds: [`${hostDir}:/a`, `${hostDir}:/a`] })), /Duplicate mount point: \/a/);
    await assert.rejects(build(f.rootfs, config(), hostConfig({ Mounts: [{ Type: 'bind', Source: join(f.dir, 'nope'), Target: '/x' }] })), /bind source path does not exist/);
  } finally {
    f.cleanup();
  }
});

test('bind validation messages', () => {
  const bad = (raw: string, re: RegExp) =>
    assert.throws(() => validateBind(raw), (e: unknown) => e instanceof EngineError && e.code === 'InvalidArgument' && re.test(e.message), raw);
  bad('/a:/b:/c:/d', /^invalid volume specification: '\/a:\/b:\/c:\/d'$/);
  bad(':/b', /^invalid volume specification: ':\/b'$/);
  bad('/foo:rw', /^invalid volume specification: '\/foo:rw'$/);
  bad('/a:/b:xyz', /^invalid mode: xyz$/);
  bad('/a:/b:ro,rw', /^invalid mode: ro,rw$/);
  bad('/a:relative', /mount path must be absolute/);
  bad('/a:/', /destination can't be '\/'/);
  bad('bad/name:/x', /includes invalid characters for a local volume name/);
  validateBind('/a:/b');
  validateBind('/a:/b:ro,Z,rslave,nocopy');
  validateBind('myvol:/data');
  assert.deepEqual(parseBind('/h:/c:ro,shared'), { source: '/h', destination: '/c', readOnly: true, propagation: 'shared', volume: false, nocopy: false, mode: 'ro,shared' });
});

test('build timing (printed, not asserted)', async () => {
  const f = fixture();
  try {
    const b = createSpecBuilder({ log });
    const input = { id: 'x', config: config({ User: 'app' }), hostConfig: hostConfig({ Memory: 1 << 26 }), path: '/bin/sh', args: [], rootfs: f.rootfs, imageEnv: [], files: { hostname: '/h', hosts: '/hs', resolvConf: '/r' }, cgroupsPath: '/engine/x' };
    await b.build(input);
    const n = 500;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await b.build(input);
    const per = (performance.now() - t0) / n;
    console.log(`spec build: ${per.toFixed(3)} ms/spec`);
  } finally {
    f.cleanup();
  }
});

test('a reference-format seccomp profile passed in SecurityOpt is converted', async () => {
  const f = fixture();
  try {
    const profile = JSON.stringify({
      defaultAction: 'SCMP_ACT_ERRNO',
      defaultErrnoRet: 1,
      archMap: [{ architecture: 'SCMP_ARCH_X86_64', subArchitectures: ['SCMP_ARCH_X86', 'SCMP_ARCH_X32'] }, { architecture: 'SCMP_ARCH_AARCH64', subArchitectures: ['SCMP_ARCH_ARM'] }],
      syscalls: [
        { names: ['read', 'write'], action: 'SCMP_ACT_ALLOW' },
        { names: ['mount'], action: 'SCMP_ACT_ALLOW', includes: { caps: ['CAP_SYS_ADMIN'] } },
        { names: ['ptrace'], action: 'SCMP_ACT_ALLOW', excludes: { caps: ['CAP_CHOWN'] } },
        { names: ['personality'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: 8, op: 'SCMP_CMP_EQ' }] },
      ],
    });
    const s = await build(f.rootfs, config(), hostConfig({ SecurityOpt: [`seccomp=${profile}`] }));
    const sc = s.linux.seccomp as unknown as { defaultAction: string; defaultErrnoRet: number; architectures: string[]; syscalls: { names: string[]; args?: unknown[] }[] };
    assert.equal(sc.defaultAction, 'SCMP_ACT_ERRNO');
    assert.equal(sc.defaultErrnoRet, 1);
    assert.ok(sc.architectures.length >= 1);
    const names = sc.syscalls.flatMap((x) => x.names);
    assert.ok(names.includes('read'));
    assert.ok(!names.includes('mount'), 'needs CAP_SYS_ADMIN');
    assert.ok(!names.includes('ptrace'), 'excluded when CAP_CHOWN is held');
    assert.deepEqual(sc.syscalls.find((x) => x.names.includes('personality'))!.args, [{ index: 0, value: 8, valueTwo: 0, op: 'SCMP_CMP_EQ' }]);
  } finally {
    f.cleanup();
  }
});

test('--init: the init first with the command after --, its binary bound read-only; HostConfig.Init wins over the daemon', async () => {
  const f = fixture();
  try {
    const input = { id: 'x', config: config(), path: '/bin/sh', args: ['-c', 'true'], rootfs: f.rootfs, imageEnv: [], files: { hostname: '/h', hosts: '/hs', resolvConf: '/r' }, cgroupsPath: '/engine/x' };
    const withInit = createSpecBuilder({ log, init: true, initPath: '/usr/bin/tini-static' });
    const s = (await withInit.build({ ...input, hostConfig: hostConfig() })) as Spec;
    assert.deepEqual(s.process.args, ['/sbin/docker-init', '--', '/bin/sh', '-c', 'true']);
    assert.deepEqual(s.mounts.find((m) => m.destination === '/sbin/docker-init'), { destination: '/sbin/docker-init', type: 'bind', source: '/usr/bin/tini-static', options: ['bind', 'ro'] });
    const off = (await withInit.build({ ...input, hostConfig: hostConfig({ Init: false }) })) as Spec;
    assert.deepEqual(off.process.args, ['/bin/sh', '-c', 'true']);
    const noBinary = createSpecBuilder({ log, initPath: '' });
    await assert.rejects(noBinary.build({ ...input, hostConfig: hostConfig({ Init: true }) }), /no init binary found/);
  } finally {
    f.cleanup();
  }
});

test('--seccomp-profile: the daemon-wide profile applies where a container names none; unconfined and builtin', async () => {
  const f = fixture();
  try {
    const input = { id: 'x', config: config(), hostConfig: hostConfig(), path: '/bin/sh', args: [], rootfs: f.rootfs, imageEnv: [], files: { hostname: '/h', hosts: '/hs', resolvConf: '/r' }, cgroupsPath: '/engine/x' };
    const profile = JSON.stringify({ defaultAction: 'SCMP_ACT_ERRNO', syscalls: [{ names: ['read', 'write'], action: 'SCMP_ACT_ALLOW' }] });
    const daemonWide = (await createSpecBuilder({ log, seccomp: profile }).build(input)) as Spec;
    assert.deepEqual((daemonWide.linux.seccomp as unknown as { syscalls: { names: string[] }[] }).syscalls.flatMap((x) => x.names), ['read', 'write']);
    const own = (await createSpecBuilder({ log, seccomp: profile }).build({ ...input, hostConfig: hostConfig({ SecurityOpt: ['seccomp=unconfined'] }) })) as Spec;
    assert.equal(own.linux.seccomp, undefined, "the container's own choice wins");
    assert.equal(((await createSpecBuilder({ log, seccomp: 'unconfined' }).build(input)) as Spec).linux.seccomp, undefined);
    const builtin = (await createSpecBuilder({ log, seccomp: 'builtin' }).build(input)) as Spec;
    assert.ok((builtin.linux.seccomp as unknown as { syscalls: { names: string[] }[] }).syscalls.flatMap((x) => x.names).length > 50);
  } finally {
    f.cleanup();
  }
});
