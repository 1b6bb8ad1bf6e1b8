// Init and shared namespaces through real clients: --init makes the init pid 1 (the daemon's
// --init for containers that do not say), --pid container: sees the other's processes, --ipc
// container: shares a shareable donor's /dev/shm (a private one is refused with the reference's
// hint), --ulimit and --shm-size reach the container; docker-py's init and ipc_mode.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, pythonDocker, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

describe('init and shared namespaces', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  before(async () => {
    ({ d, imgs } = await startWithImages());
  });
  after(() => removeAllAndCleanup(d));

  test('--init: pid 1 is the init, the command its child; without it the command is pid 1', async () => {
    const out = await dk('run', '--rm', '--init', imgs.tag, 'sh', '-c', 'tr "\\0" " " < /proc/1/cmdline; echo; echo $$');
    const [cmdline, own] = out.split('\n');
    assert.match(cmdline!, /^\/sbin\/docker-init -- sh -c /);
    assert.notEqual(own, '1');
    assert.equal(await dk('run', '--rm', imgs.tag, 'sh', '-c', 'echo $$'), '1');
    assert.equal(await dk('inspect', '-f', '{{.HostConfig.IpcMode}}', (await dk('create', imgs.tag, 'true'))), 'private', 'the default IPC mode');
  });

  test('--pid container: sees the other container\'s processes', async () => {
    await dk('run', '-d', '--name', 'pidsrc', imgs.tag, 'sleep', '313');
    const ps = await dk('run', '--rm', '--pid', 'container:pidsrc', imgs.tag, 'ps', '-o', 'args');
    assert.match(ps, /sleep 313/);
    const alone = await dk('run', '--rm', imgs.tag, 'ps', '-o', 'args');
    assert.doesNotMatch(alone, /sleep 313/);
    const stopped = await docker(d, ['run', '--rm', '--pid', 'container:nosuch', imgs.tag, 'true']);
    assert.notEqual(stopped.code, 0);
  });

  test('--ipc container: shares the /dev/shm of a shareable donor; a private donor is refused', async () => {
    await dk('run', '-d', '--name', 'donor', '--ipc', 'shareable', imgs.tag, 'sh', '-c', 'echo from-donor > /dev/shm/note; exec sleep 300');
    let note = '';
    for (let i = 0; i < 20 && note !== 'from-donor'; i++) {
      note = (await docker(d, ['run', '--rm', '--ipc', 'container:donor', imgs.tag, 'cat', '/dev/shm/note'])).stdout.trim();
    }
    assert.equal(note, 'from-donor');
    await dk('run', '--rm', '--ipc', 'container:donor', imgs.tag, 'sh', '-c', 'echo from-joiner > /dev/shm/back');
    assert.equal(await dk('exec', 'donor', 'cat', '/dev/shm/back'), 'from-joiner');
    await dk('run', '-d', '--name', 'private', imgs.tag, 'sleep', '300');
    const refused = await docker(d, ['run', '--rm', '--ipc', 'container:private', imgs.tag, 'true']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /non-shareable IPC/);
    const bad = await docker(d, ['run', '--rm', '--ipc', 'sideways', imgs.tag, 'true']);
    assert.match(bad.stderr, /invalid IPC mode: sideways/);
  });

  test('--ulimit and --shm-size reach the container; docker-py init=True', async () => {
    assert.equal(await dk('run', '--rm', '--ulimit', 'nofile=100:200', imgs.tag, 'sh', '-c', 'ulimit -n; ulimit -Hn'), '100\n200');
    assert.match(await dk('run', '--rm', '--shm-size', '16m', imgs.tag, 'df', '-k', '/dev/shm'), /16384/);
    const out = await pythonDocker(d, `
      print(client.containers.run('${imgs.tag}', ['sh', '-c', 'tr "\\\\0" " " < /proc/1/cmdline'], init=True, remove=True).decode())
    `);
    assert.match(out, /^\/sbin\/docker-init -- sh -c/);
  });

  test('cgroup namespace private by default (host on request), sysctls, capabilities, no-new-privileges, --uts host, a device, the runtime as named', async () => {
    const own = await dk('run', '--rm', imgs.tag, 'grep', ':memory:', '/proc/self/cgroup');
    assert.match(own, /:memory:\/$/, 'a private cgroup namespace sees its own cgroup as the root');
    const id = await dk('create', '--cgroupns', 'host', imgs.tag, 'grep', ':memory:', '/proc/self/cgroup');
    await dk('start', '-a', id).then((out) => assert.match(out, new RegExp(`:memory:/.*${id}`)));
    assert.equal(await dk('inspect', '-f', '{{.HostConfig.CgroupnsMode}}', id), 'host');
    const badNs = await docker(d, ['run', '--rm', '--cgroupns', 'sideways', imgs.tag, 'true']);
    assert.notEqual(badNs.code, 0);
    assert.equal(await dk('run', '--rm', '--sysctl', 'net.ipv4.ip_forward=1', imgs.tag, 'cat', '/proc/sys/net/ipv4/ip_forward'), '1');
    const capEff = (flags: string[]) => dk('run', '--rm', ...flags, imgs.tag, 'sh', '-c', 'grep CapEff /proc/self/status').then((l) => BigInt(`0x${l.split(/\s+/)[1]}`));
    const NET_RAW = 1n << 13n;
    const NET_ADMIN = 1n << 12n;
    assert.equal((await capEff([])) & NET_RAW, NET_RAW);
    assert.equal((await capEff(['--cap-drop', 'NET_RAW'])) & NET_RAW, 0n);
    assert.equal((await capEff(['--cap-add', 'NET_ADMIN'])) & NET_ADMIN, NET_ADMIN);
    assert.match(await dk('run', '--rm', '--security-opt', 'no-new-privileges', imgs.tag, 'grep', 'NoNewPrivs', '/proc/self/status'), /NoNewPrivs:\s+1/);
    const { hostname } = await import('node:os');
    assert.equal(await dk('run', '--rm', '--uts', 'host', imgs.tag, 'hostname'), hostname());
    assert.equal(await dk('run', '--rm', '--device', '/dev/null:/dev/mynull', imgs.tag, 'sh', '-c', 'echo x > /dev/mynull && echo ok'), 'ok');
    const rt = await dk('create', '--runtime', 'runc', imgs.tag, 'true');
    assert.equal(await dk('inspect', '-f', '{{.HostConfig.Runtime}}', rt), 'runc');
  });
});

describe("the daemon's container defaults: --init, --default-ulimit, --no-new-privileges, --seccomp-profile, --default-shm-size, --default-cgroupns-mode, --default-ipc-mode", () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  const profile = join(tmpdir(), `engine-seccomp-${process.pid}.json`);
  before(async () => {
    // Everything allowed but mkdir/mkdirat, refused with EPERM.
    writeFileSync(profile, JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }] }));
    ({ d, imgs } = await startWithImages({
      args: ['--init', '--default-ulimit', 'nofile=321:654', '--no-new-privileges', '--seccomp-profile', profile, '--default-shm-size', '32M', '--default-cgroupns-mode', 'host', '--default-ipc-mode', 'shareable'],
    }));
  });
  after(async () => {
    await d?.cleanup();
    rmSync(profile, { force: true });
  });

  test('a container that says nothing gets them all; its own settings win', async () => {
    const out = await dk('run', '--rm', imgs.tag, 'sh', '-c', [
      'tr "\\0" " " < /proc/1/cmdline; echo',
      'ulimit -n',
      'grep NoNewPrivs /proc/self/status',
      'df -k /dev/shm | tail -1',
      'grep :memory: /proc/self/cgroup',
      'mkdir /x 2>&1 || echo mkdir-refused',
    ].join('; '));
    const lines = out.split('\n');
    assert.match(lines[0]!, /^\/sbin\/docker-init -- sh -c/);
    assert.equal(lines[1], '321');
    assert.match(lines[2]!, /NoNewPrivs:\s+1/);
    assert.match(lines[3]!, /\s32768\s/);
    assert.match(lines[4]!, /:memory:\/.+/, 'the host cgroup namespace shows the full path');
    assert.equal(lines.at(-1), 'mkdir-refused');
    const id = await dk('create', imgs.tag, 'true');
    assert.equal(await dk('inspect', '-f', '{{.HostConfig.IpcMode}} {{.HostConfig.CgroupnsMode}}', id), 'shareable host');
    const own = await dk('run', '--rm', '--init=false', '--ulimit', 'nofile=100:200', '--security-opt', 'seccomp=unconfined', imgs.tag, 'sh', '-c', 'echo $$; ulimit -n; mkdir /y && echo made');
    assert.equal(own, '1\n100\nmade');
  });
});

