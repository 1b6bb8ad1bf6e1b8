// A swarm service's task template reaches the container its task runs (issue 63, 4), as the
// reference's executor maps it (moby's daemon/cluster/executor/container/container.go, here
// lib/swarm/task-container.ts): the docker CLI's `service create` flags for mounts, hosts, hostname,
// groups, DNS, healthcheck, read-only root, stop signal and grace, init, tty, capabilities, sysctls,
// ulimits, user, dir, env, container labels, log driver and resource limits, each seen in the
// container's inspect and, where it shows there, inside the running container; and the same through
// the Engine API's POST /services/create (TaskTemplate.LogDriver, Resources.Limits.Pids, Command/Args).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { swarmInit } from './harness/swarm.ts';
import { until } from './harness/wait.ts';

interface Task {
  ID: string;
  ServiceID: string;
  DesiredState: string;
  Status: { State: string; Message: string; Err?: string; ContainerStatus?: { ContainerID: string; PID: number; ExitCode: number } };
}

describe('swarm task template to container', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  let dir: string;
  const dk = async (...args: string[]) => {
    const r = await docker(d, args);
    assert.equal(r.code, 0, `docker ${args.join(' ')}: ${r.stderr}\n${d.logs().split('\n').slice(-20).join('\n')}`);
    return r.stdout;
  };
  const tasks = async (filters: Record<string, string[]>): Promise<Task[]> => {
    const r = await apiRequest(d, 'GET', `/tasks?filters=${encodeURIComponent(JSON.stringify(filters))}`);
    assert.equal(r.status, 200, r.text);
    return r.body as Task[];
  };
  /** The id of the container the service's one running task runs, once it runs. */
  const runningContainer = async (service: string): Promise<string> => {
    const t = await until(`a task of ${service} running`, async () => {
      const all = await tasks({ service: [service] });
      const failed = all.find((x) => x.Status.Err);
      if (failed) throw new Error(`${failed.Status.State}: ${failed.Status.Err}`);
      return all.find((x) => x.Status.State === 'running');
    }, 60_000);
    const byLabel = (await dk('ps', '-q', '--no-trunc', '--filter', `label=com.docker.swarm.service.name=${service}`)).split('\n').filter(Boolean);
    assert.deepEqual(byLabel, [t.Status.ContainerStatus!.ContainerID]);
    return byLabel[0]!;
  };

  before(async () => {
    imgs = await testImages();
    dir = mkdtempSync(join(tmpdir(), 'engine-e2e-taskspec-'));
    d = await startDaemon({ bridge: true });
    await dk('load', '-i', imgs.dockerArchive);
    await swarmInit(d);
  }, { timeout: 120_000 });
  after(async () => {
    await d?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, { timeout: 60_000 });

  test('the docker CLI\'s service create flags land in the task\'s container', { timeout: 180_000 }, async () => {
    await dk(
      'service', 'create', '--detach', '--no-resolve-image', '--name', 'spec',
      '--mount', `type=bind,source=${dir},target=/b`,
      '--mount', 'type=volume,source=svcvol,target=/v',
      '--mount', 'type=tmpfs,target=/t',
      '--host', 'myhost:10.1.2.3',
      '--hostname', 'h1',
      '--group', '1234',
      '--dns', '10.0.0.2', '--dns-search', 'example.com', '--dns-option', 'ndots:2',
      '--health-cmd', 'true', '--health-interval', '1s',
      '--read-only',
      '--stop-signal', 'SIGUSR1', '--stop-grace-period', '3s',
      '--init',
      '--tty',
      '--cap-add', 'NET_ADMIN', '--cap-drop', 'CHOWN',
      '--sysctl', 'net.ipv4.ip_forward=1',
      '--ulimit', 'nofile=1000:2000',
      '--user', '0:0',
      '--workdir', '/tmp',
      '--env', 'A=1',
      '--container-label', 'cl=1',
      '--log-driver', 'json-file', '--log-opt', 'max-size=1m',
      '--limit-memory', '64m', '--limit-cpu', '0.5',
      imgs.tag, 'sleep', '1000',
    );
    const id = await runningContainer('spec');
    const c = JSON.parse(await dk('inspect', id))[0];
    const hc = c.HostConfig;

    // Mounts: the three kinds, as the spec gave them, and a named volume made for the task.
    assert.deepEqual(
      (hc.Mounts as { Type: string; Source?: string; Target: string }[]).map((m) => [m.Type, m.Source ?? '', m.Target]),
      [['bind', dir, '/b'], ['volume', 'svcvol', '/v'], ['tmpfs', '', '/t']],
    );
    const mounts = c.Mounts as { Type: string; Name?: string; Source: string; Destination: string }[];
    assert.ok(mounts.some((m) => m.Type === 'bind' && m.Source === dir && m.Destination === '/b'), JSON.stringify(mounts));
    assert.ok(mounts.some((m) => m.Type === 'volume' && m.Name === 'svcvol' && m.Destination === '/v'), JSON.stringify(mounts));
    assert.ok((await dk('volume', 'ls', '-q')).split('\n').includes('svcvol'));

    assert.deepEqual(hc.ExtraHosts, ['myhost:10.1.2.3']);
    assert.equal(c.Config.Hostname, 'h1');
    assert.deepEqual(hc.GroupAdd, ['1234']);
    assert.deepEqual([hc.Dns, hc.DnsSearch, hc.DnsOptions], [['10.0.0.2'], ['example.com'], ['ndots:2']]);
    assert.deepEqual(c.Config.Healthcheck, { Test: ['CMD-SHELL', 'true'], Interval: 1_000_000_000 });
    assert.equal(hc.ReadonlyRootfs, true);
    assert.equal(c.Config.StopSignal, 'SIGUSR1');
    assert.equal(c.Config.StopTimeout, 3);
    assert.equal(hc.Init, true);
    assert.equal(c.Config.Tty, true);
    // The docker CLI sends the capabilities with their CAP_ prefix; the executor passes them on.
    assert.deepEqual([hc.CapAdd, hc.CapDrop], [['CAP_NET_ADMIN'], ['CAP_CHOWN']]);
    assert.deepEqual(hc.Sysctls, { 'net.ipv4.ip_forward': '1' });
    assert.deepEqual(hc.Ulimits, [{ Name: 'nofile', Soft: 1000, Hard: 2000 }]);
    assert.equal(c.Config.User, '0:0');
    assert.equal(c.Config.WorkingDir, '/tmp');
    assert.ok((c.Config.Env as string[]).includes('A=1'), c.Config.Env.join(' '));
    assert.equal(c.Config.Labels.cl, '1');
    assert.equal(c.Config.Labels['com.docker.swarm.service.name'], 'spec');
    assert.deepEqual(hc.LogConfig, { Type: 'json-file', Config: { 'max-size': '1m' } });
    assert.equal(hc.Memory, 64 * 1024 * 1024);
    assert.equal(hc.NanoCpus, 500_000_000);
    assert.deepEqual(hc.RestartPolicy, { Name: 'no', MaximumRetryCount: 0 });
    assert.deepEqual(c.Config.Cmd, ['sleep', '1000']);

    // Inside the running container.
    const sh = async (script: string) => (await dk('exec', id, 'sh', '-c', script)).replace(/\r/g, '');
    assert.equal((await sh('hostname')).trim(), 'h1');
    assert.match(await sh('cat /etc/hosts'), /^10\.1\.2\.3\s+myhost$/m);
    const resolv = await sh('cat /etc/resolv.conf');
    assert.match(resolv, /^nameserver 10\.0\.0\.2$/m);
    assert.match(resolv, /^search example\.com$/m);
    assert.match(resolv, /^options ndots:2$/m);
    assert.ok((await sh('id -G')).trim().split(' ').includes('1234'));
    assert.equal((await sh('pwd')).trim(), '/tmp');
    assert.equal((await sh('echo $A')).trim(), '1');
    // The task's own processes' limits (an exec's soft NOFILE is raised to the hard one by runc 1.1's
    // Go runtime before its prlimit: opencontainers/runc#4195, fixed in 1.1.13).
    assert.match(await sh('cat /proc/1/limits'), /^Max open files\s+1000\s+2000\s+files\s*$/m);
    assert.equal((await sh('cat /proc/sys/net/ipv4/ip_forward')).trim(), '1');
    const capEff = BigInt(`0x${/^CapEff:\s*([0-9a-f]+)$/m.exec(await sh('cat /proc/self/status'))![1]}`);
    assert.deepEqual([(capEff >> 12n) & 1n, capEff & 1n], [1n, 0n], 'CAP_NET_ADMIN (12) effective, CAP_CHOWN (0) not');
    assert.match(await sh('grep " /t " /proc/mounts'), /^tmpfs \/t tmpfs /m);
    assert.match(await sh('touch /rootfs-file 2>&1 || echo read-only'), /read-only/i);
    await sh('echo from-task > /b/hello && touch /v/x /t/x');
    assert.equal(readFileSync(join(dir, 'hello'), 'utf8'), 'from-task\n');
    assert.notEqual((await sh('cat /proc/1/cmdline | tr "\\0" " "')).trim(), 'sleep 1000', 'pid 1 is the init, not the command');
    assert.equal((await sh('[ -t 0 ] && echo tty || echo none')).trim(), 'none', 'exec without -t has no tty (the task\'s own does: Config.Tty)');

    await until('healthy', async () => JSON.parse(await dk('inspect', id))[0].State.Health?.Status === 'healthy', 30_000);
    await dk('service', 'rm', 'spec');
    await until('its container removed', async () => (await dk('ps', '-aq', '--filter', 'label=com.docker.swarm.service.name=spec')).trim() === '', 60_000);
  });

  test('through the Engine API: TaskTemplate.LogDriver, Resources.Limits.Pids, ContainerSpec Command, Args and Privileges', { timeout: 120_000 }, async () => {
    const spec = {
      Name: 'apispec',
      TaskTemplate: {
        ContainerSpec: { Image: imgs.tag, Command: ['sh', '-c'], Args: ['sleep 1000'], OpenStdin: true, StopGracePeriod: 1_000_000_000, Privileges: { NoNewPrivileges: true, Seccomp: { Mode: 'unconfined' } } },
        Resources: { Limits: { Pids: 50 } },
        LogDriver: { Name: 'none' },
      },
      Mode: { Replicated: { Replicas: 1 } },
    };
    const r = await apiRequest(d, 'POST', '/services/create', JSON.stringify(spec));
    assert.equal(r.status, 201, r.text);
    const id = await runningContainer('apispec');
    const c = JSON.parse(await dk('inspect', id))[0];
    assert.deepEqual([c.Config.Entrypoint, c.Config.Cmd, c.Config.OpenStdin], [['sh', '-c'], ['sleep 1000'], true]);
    assert.deepEqual(c.HostConfig.LogConfig, { Type: 'none', Config: {} });
    assert.equal(c.HostConfig.PidsLimit, 50);
    assert.equal(c.Config.StopTimeout, 1);
    assert.deepEqual(c.HostConfig.SecurityOpt, ['seccomp=unconfined', 'no-new-privileges=true']);
    assert.match(await dk('exec', id, 'grep', '-E', '^(NoNewPrivs|Seccomp):', '/proc/1/status'), /NoNewPrivs:\s+1\nSeccomp:\s+0/);
    const del = await apiRequest(d, 'DELETE', '/services/apispec');
    assert.equal(del.status, 200, del.text);
  });
});
