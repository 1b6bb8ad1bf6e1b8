// Daemon options that act on the daemon itself, each observed where it acts: CORS headers,
// oom_score_adj, the containers' parent cgroup's real-time budget, the cgroup driver, raw logs,
// ENGINE_RAMDISK (no pivot_root), the control plane MTU, the builder's gc policy, the node's generic
// resources; the options of later work, which refuse the start; and the proxy options.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { docker, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { REPO, startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';
import { startProxy, type TestProxy } from './registry/proxy.ts';
import { registryAvailable, startRegistry, type TestRegistry } from './registry/registry.ts';

const ENGINED = process.env.ENGINE_E2E_ENGINED || join(REPO, 'bin', 'engined');
const CPU = '/sys/fs/cgroup/cpu';
const rtSkip = !existsSync(join(CPU, 'cpu.rt_runtime_us')) && 'no cgroup v1 cpu controller with real-time group scheduling';

/** engined run to its end (a refused start), with a private pidfile so no running daemon is in the way. */
async function engined(args: string[], env: Record<string, string> = {}, prepare?: (dataRoot: string) => void): Promise<{ code: number; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'engine-e2e-opts-'));
  writeFileSync(join(dir, 'daemon.json'), '{}');
  prepare?.(join(dir, 'data'));
  try {
    await promisify(execFile)(ENGINED, ['-p', join(dir, 'pid'), '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'exec'), '-H', `unix://${dir}/s.sock`, '--config-file', join(dir, 'daemon.json'), ...args], {
      timeout: 60_000,
      env: { ...process.env, ...env },
    });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stderr: e.stderr ?? '' };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One request on the daemon's socket: status, headers. */
function raw(d: DaemonHandle, method: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: d.socket, method, path, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

function findFile(dir: string, name: string, under: string): string | undefined {
  if (!existsSync(dir)) return undefined;
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (!statSync(p).isDirectory()) continue;
    if (e === under && existsSync(join(p, name))) return join(p, name);
    const found = findFile(p, name, under);
    if (found) return found;
  }
  return undefined;
}

describe('daemon options that act', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  const rtParent = `/engine-e2e-rt-${process.pid}`;
  before(async () => {
    ({ d, imgs } = await startWithImages({
      args: [
        '--api-cors-header', 'https://ui.example',
        '--oom-score-adjust', '300',
        '--raw-logs',
        '--exec-opt', 'native.cgroupdriver=cgroupfs',
        '--network-control-plane-mtu', '1400',
        '--node-generic-resource', 'gpu=2',
        '--node-generic-resource', 'ssd=disk-a,ssd=disk-b',
        '--cgroup-parent', rtParent,
        ...(rtSkip ? [] : ['--cpu-rt-period', '1000000', '--cpu-rt-runtime', '10000']),
      ],
      daemonJson: { builder: { gc: { enabled: true, defaultKeepStorage: '10GB', policy: [{ keepStorage: '512MB', filter: ['unused-for=2200h'] }] } } },
      env: { ENGINE_RAMDISK: '1' },
    }));
  });
  after(async () => {
    await removeAllAndCleanup(d);
    try {
      rmdirSync(join(CPU, rtParent));
    } catch {
      // not made (no rt) or already gone
    }
  });

  test('--api-cors-header: the reference CORS headers on every answer; an OPTIONS pre-flight answered', async () => {
    const r = await raw(d, 'GET', '/_ping', { Origin: 'https://ui.example' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['access-control-allow-origin'], 'https://ui.example');
    assert.equal(r.headers['access-control-allow-headers'], 'Origin, X-Requested-With, Content-Type, Accept, X-Registry-Auth');
    assert.equal(r.headers['access-control-allow-methods'], 'HEAD, GET, POST, DELETE, PUT, OPTIONS');
    const pre = await raw(d, 'OPTIONS', '/v1.47/containers/json', { Origin: 'https://ui.example', 'Access-Control-Request-Method': 'GET' });
    assert.equal(pre.status, 200);
    assert.equal(pre.headers['access-control-allow-origin'], 'https://ui.example');
    assert.equal(pre.headers['access-control-allow-methods'], 'HEAD, GET, POST, DELETE, PUT, OPTIONS');
  });

  test('--oom-score-adjust: the daemon process\'s oom_score_adj', () => {
    assert.equal(readFileSync(`/proc/${d.pid}/oom_score_adj`, 'utf8').trim(), '300');
  });

  test('--cpu-rt-period/--cpu-rt-runtime: written into the containers\' parent cgroup; a container runs under it', { skip: rtSkip }, async () => {
    assert.equal(readFileSync(join(CPU, rtParent, 'cpu.rt_period_us'), 'utf8').trim(), '1000000');
    assert.equal(readFileSync(join(CPU, rtParent, 'cpu.rt_runtime_us'), 'utf8').trim(), '10000');
    const id = (await dk('run', '-d', '--network', 'none', imgs.tag, 'sleep', '30')).trim();
    const cg = (await dk('exec', id, 'cat', '/proc/self/cgroup')).split('\n').find((l) => /:cpu[,:]|:cpu,cpuacct:/.test(l)) ?? '';
    assert.ok(existsSync(join(CPU, rtParent, id)) || cg.includes(id), cg);
    await dk('rm', '-f', id);
  });

  test('--exec-opt native.cgroupdriver=cgroupfs: the driver in use; ENGINE_RAMDISK: runc without pivot_root', async () => {
    assert.equal((await dk('info', '--format', '{{.CgroupDriver}}')).trim(), 'cgroupfs');
    const id = (await dk('run', '-d', '--network', 'none', imgs.tag, 'sleep', '30')).trim();
    try {
      // runc's own record of the container's configuration: no_pivot_root as the shim passed it.
      const state = findFile(d.execRoot, 'state.json', id);
      assert.ok(state, `no runc state for ${id} under ${d.execRoot}`);
      const cfg = JSON.parse(readFileSync(state, 'utf8')) as { config: { no_pivot_root?: boolean } };
      assert.equal(cfg.config.no_pivot_root, true);
      assert.equal((await dk('exec', id, 'echo', 'ok')).trim(), 'ok');
    } finally {
      await dk('rm', '-f', id);
    }
  });

  test('--node-generic-resource: docker info GenericResources in the reference shape', async () => {
    const got = JSON.parse(await dk('info', '--format', '{{json .GenericResources}}')) as unknown;
    assert.deepEqual(got, [
      { DiscreteResourceSpec: { Kind: 'gpu', Value: 2 } },
      { NamedResourceSpec: { Kind: 'ssd', Value: 'disk-a' } },
      { NamedResourceSpec: { Kind: 'ssd', Value: 'disk-b' } },
    ]);
  });

  test('--raw-logs: plain logfmt lines; --network-control-plane-mtu and the builder gc policy shown at start', () => {
    const logs = d.logs();
    assert.doesNotMatch(logs, /\x1b\[/);
    assert.match(logs, /^time="[^"]+" level=info msg="network control plane MTU set: [^"]*" mtu=1400$/m);
    assert.match(logs, /level=info msg="builder garbage collection policy: [^"]*" gc=.*defaultKeepStorage\\+":\\+"10GB/);
    assert.doesNotMatch(logs, /accepted but not applied/);
  });
});

describe('raw logs on a terminal', () => {
  // A refused start logs its error; under `script` stderr is a terminal.
  const conf = join(tmpdir(), `engine-e2e-tty-${process.pid}.json`);
  before(() => writeFileSync(conf, '{}'));
  after(() => rmSync(conf, { force: true }));
  const onTty = (extra: string) =>
    promisify(execFile)('script', ['-qec', `${ENGINED} -p /tmp/engine-e2e-tty-${process.pid}.pid --config-file ${conf} --storage-driver devicemapper ${extra}`, '/dev/null'], { timeout: 60_000 }).then(
      (r) => r.stdout,
      (e: { stdout?: string }) => e.stdout ?? '',
    );
  test('the text format is colored (INFO[0000]) on a terminal unless --raw-logs', async () => {
    const colored = await onTty('');
    assert.match(colored, /\x1b\[31mERRO\x1b\[0m\[\d{4}\] engined failed to start/);
    const plain = await onTty('--raw-logs');
    assert.doesNotMatch(plain, /\x1b\[/);
    assert.match(plain, /time="[^"]+" level=error msg="engined failed to start" error="not supported by this daemon yet: --storage-driver=devicemapper"/);
  });
});

describe('options that refuse the start', () => {
  const refused = async (args: string[], message: string | RegExp, env: Record<string, string> = {}, prepare?: (dataRoot: string) => void) => {
    const r = await engined(args, env, prepare);
    assert.equal(r.code, 1, r.stderr);
    if (typeof message === 'string') assert.ok(r.stderr.includes(message), r.stderr);
    else assert.match(r.stderr, message);
  };
  test('options of later work: not supported by this daemon yet', async () => {
    await refused(['--storage-driver', 'devicemapper'], 'engined: not supported by this daemon yet: --storage-driver=devicemapper');
    // No zfs module in this kernel: the reference's refusal (issue 67, 4).
    await refused([], /engined: (error initializing graphdriver: prerequisites for driver not satisfied \(wrong filesystem\?\)|not supported by this daemon yet: --storage-driver=zfs)/, { ENGINE_DRIVER: 'zfs' });
    await refused(['--userns-remap', 'default', '--feature', 'supervisor-snapshotter'], 'engined: not supported by this daemon yet: --userns-remap with --feature supervisor-snapshotter');
    // Outside rootlesskit: the script that starts it inside is named (issue (14 of 21), 1).
    await refused(['--rootless'], 'engined-rootless.sh', { ROOTLESSKIT_STATE_DIR: '', XDG_RUNTIME_DIR: tmpdir() });
    await refused(['--feature', 'supervisor-snapshotter', '-s', 'overlay2'], 'engined: not supported by this daemon yet: --storage-driver=overlay2 with --feature supervisor-snapshotter (its only snapshotter is overlayfs)');
    await refused(['--storage-opt', 'overlay2.size=10G'], /Storage Option overlay2\.size only supported for backingFS XFS\. Found \w+|Storage option overlay2\.size not supported\. Filesystem does not support Project Quota/);
    await refused(['--storage-opt', 'overlay2.mountopt=nodev'], 'engined: overlay2: unknown option overlay2.mountopt');
    // No driver asked for and a data root that two drivers have used (issue 67, 5): the reference's refusal.
    await refused([], /contains several valid graphdrivers: (overlay2, btrfs|btrfs, overlay2); Please cleanup or explicitly choose storage driver \(-s <DRIVER>\)/, {}, (root) => {
      for (const d of ['overlay2', 'btrfs']) mkdirSync(join(root, d, 'x'), { recursive: true });
    });
  });
  test('native.cgroupdriver=systemd where systemd is not running; bad generic resources', async () => {
    if (!existsSync('/run/systemd/system')) {
      await refused(['--exec-opt', 'native.cgroupdriver=systemd'], 'engined: systemd cgroup flag passed, but systemd support for managing cgroups is not available');
    }
    await refused(['--node-generic-resource', 'gpu=-1'], 'could not parse GenericResource: cannot ask for negative resource gpu');
    await refused(['--node-generic-resource', 'gpu=1', '--node-generic-resource', 'gpu=a'], "could not parse GenericResource: malformed expression 'gpu=[1 a]'");
  });
  test('--selinux-enabled on a host without SELinux: the daemon starts, warns as the reference, and runs without labels', { skip: existsSync('/sys/fs/selinux/enforce') && 'this host has SELinux' }, async () => {
    const d = await startDaemon({ args: ['--selinux-enabled'] });
    try {
      assert.match(d.logs(), /level=warning msg="Docker could not enable SELinux on the host system"/);
      const opts = JSON.parse(await dockerOk(() => d)('info', '--format', '{{json .SecurityOptions}}')) as string[];
      assert.ok(!opts.includes('name=selinux'), opts.join(' '));
      assert.ok(opts.includes('name=seccomp,profile=builtin'), opts.join(' '));
    } finally {
      await d.cleanup();
    }
  });
  test('overlay2.override_kernel_check is accepted (without effect), as the reference', async () => {
    const d = await startDaemon({ args: ['--storage-opt', 'overlay2.override_kernel_check=true'] });
    try {
      assert.equal((await dockerOk(() => d)('info', '--format', '{{.Driver}}')).trim(), 'overlay2');
    } finally {
      await d.cleanup();
    }
  });
});

describe('proxies', { skip: !registryAvailable() && 'docker-registry is not installed' }, () => {
  let reg: TestRegistry;
  let proxy: TestProxy;
  let imgs: TestImages;
  const daemons: DaemonHandle[] = [];
  before(async () => {
    imgs = await testImages();
    reg = await startRegistry({});
    // A forward proxy that sends every request to the local registry, whatever host it names: the
    // name registry.test resolves nowhere but through it.
    proxy = await startProxy(reg.url);
  });
  after(async () => {
    for (const h of daemons) await h.cleanup();
    await proxy?.stop();
    await reg?.stop();
  });
  const port = () => reg.hostPort.split(':')[1];

  test('--http-proxy and --no-proxy: a registry name only the proxy knows is pulled through it; a no-proxy host goes direct', async () => {
    const d = await startDaemon({ args: ['--http-proxy', proxy.url, '--no-proxy', '127.0.0.1', '--insecure-registry', `registry.test:${port()}`] });
    daemons.push(d);
    const dk = dockerOk(() => d);
    await dk('load', '-i', imgs.dockerArchive);
    // Pushed to 127.0.0.1 (in --no-proxy): straight to the registry.
    await dk('tag', imgs.tag, `${reg.hostPort}/opts/busybox:v1`);
    await dk('push', `${reg.hostPort}/opts/busybox:v1`);
    assert.ok(!proxy.stats.requests.some((r) => r.includes(reg.hostPort)), proxy.stats.requests.join('\n'));
    // Pulled as registry.test:PORT: through the proxy.
    const name = `registry.test:${port()}/opts/busybox:v1`;
    assert.match(await dk('pull', name), /Pull complete|Already exists|Downloaded newer image|Image is up to date/);
    assert.equal((await dk('image', 'inspect', '--format', '{{.Id}}', name)).trim(), imgs.id);
    assert.ok(proxy.stats.requests.some((r) => r.startsWith(`GET http://registry.test:${port()}/v2/opts/busybox/blobs/`)), proxy.stats.requests.join('\n'));
    assert.equal((await dk('info', '--format', '{{.HTTPProxy}}')).trim(), proxy.url);
  });

  test('the proxies file key: http-proxy used; no-proxy naming the registry makes it unreachable', async () => {
    proxy.reset();
    const name = `registry.test:${port()}/opts/busybox:v1`;
    const via = await startDaemon({ daemonJson: { proxies: { 'http-proxy': proxy.url }, 'insecure-registries': [`registry.test:${port()}`] } });
    daemons.push(via);
    assert.match(await dockerOk(() => via)('pull', name), /Downloaded newer image/);
    assert.ok(proxy.stats.requests.some((r) => r.startsWith(`GET http://registry.test:${port()}/v2/`)), proxy.stats.requests.join('\n'));
    proxy.reset();
    const bypass = await startDaemon({ daemonJson: { proxies: { 'http-proxy': proxy.url, 'no-proxy': 'registry.test' }, 'insecure-registries': [`registry.test:${port()}`] } });
    daemons.push(bypass);
    const r = await docker(bypass, ['pull', name]);
    assert.equal(r.code, 1, r.stdout);
    assert.equal(proxy.stats.requests.length, 0, proxy.stats.requests.join('\n'));
  });
});
