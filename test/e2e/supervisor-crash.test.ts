// The supervisor (containerd) killed with kill -9 under a running daemon (issue 13): the
// containers' processes keep running (their shims do not depend on it), the daemon restarts the
// supervisor and re-attaches: `docker ps` shows them running with the same PIDs, exec, logs (new
// lines after the crash), stop (with an exit code), kill, start and `run --rm` all work, and once
// everything is removed no shim of this daemon is left. A container stopped while the supervisor
// was killed starts again. A supervisor that hangs (SIGSTOP) starves no request that does not need
// it: ps, inspect, logs, images, networks, volumes, version and info answer while it is frozen, and
// a stop issued meanwhile completes once it resumes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonHandle } from './harness/daemon.ts';
import { docker, dockerOk, type TestImages } from './harness/clients.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';
import { pidAlive, sleep } from './harness/processes.ts';
import { killSupervisor, shimsOf, supervisorPid } from './harness/supervisor-procs.ts';

describe('supervisor crash', () => {
  let d: DaemonHandle | undefined;
  let imgs: TestImages;
  const dk = dockerOk(() => d!);
  before(async () => {
    // A shim per container (grouped shims are shim-groups.test.ts's): each case kills one container's shim or counts them.
    ({ d, imgs } = await startWithImages({ env: { ENGINE_SHIM_GROUPS: '0' } }));
  });
  after(async () => {
    await removeAllAndCleanup(d);
  });

  test('kill -9 of the supervisor: containers keep running, the daemon re-attaches, everything works after', async () => {
    await dk('run', '-d', '--network', 'none', '--name', 'sleeper', imgs.tag, 'sleep', '300');
    await dk('run', '-d', '--network', 'none', '--name', 'ticker', imgs.tag, 'sh', '-c', 'while true; do echo tick $(date +%s); sleep 0.1; done');
    const pids = {
      sleeper: Number(await dk('inspect', '-f', '{{.State.Pid}}', 'sleeper')),
      ticker: Number(await dk('inspect', '-f', '{{.State.Pid}}', 'ticker')),
    };
    assert.ok(pids.sleeper > 0 && pids.ticker > 0, JSON.stringify(pids));
    const shimsBefore = shimsOf(d!);
    assert.equal(shimsBefore.length, 2, 'one shim per container');

    const crashedAt = Math.floor(Date.now() / 1000);
    await killSupervisor(d!, () => {
      assert.ok(pidAlive(pids.sleeper) && pidAlive(pids.ticker), 'container processes alive while the supervisor is down');
    });
    assert.ok(pidAlive(pids.sleeper) && pidAlive(pids.ticker), 'container processes alive after the supervisor restart');
    assert.deepEqual(shimsOf(d!).sort(), shimsBefore.sort(), 'the same shims serve the containers');

    // Within a bounded time `docker ps` shows both running, with the same PIDs.
    let seen = '';
    const want = `sleeper running ${pids.sleeper}\nticker running ${pids.ticker}`;
    for (const until = Date.now() + 20_000; Date.now() < until; await sleep(250)) {
      const r = await docker(d!, ['inspect', '-f', '{{.Name}} {{.State.Status}} {{.State.Pid}}', 'sleeper', 'ticker']);
      seen = r.stdout.trim().replace(/^\//gm, '');
      if (r.code === 0 && seen === want) break;
    }
    assert.equal(seen, want);
    const ps = await dk('ps', '--format', '{{.Names}} {{.State}}');
    assert.deepEqual(ps.split('\n').sort(), ['sleeper running', 'ticker running']);

    assert.equal(await dk('exec', 'sleeper', 'echo', 'exec-ok'), 'exec-ok');

    // Logs keep flowing: lines stamped after the crash reach `docker logs`.
    let late: string[] = [];
    for (const until = Date.now() + 10_000; Date.now() < until && late.length < 5; await sleep(250)) {
      const logs = await dk('logs', 'ticker');
      late = logs.split('\n').filter((l) => Number(l.split(' ')[1]) > crashedAt + 1);
    }
    assert.ok(late.length >= 5, `new log lines after the crash (got ${late.length})`);

    // stop records an exit code (sleep as PID 1 ignores SIGTERM: killed after the timeout).
    await dk('stop', '-t', '1', 'sleeper');
    assert.equal(await dk('inspect', '-f', '{{.State.Status}} {{.State.ExitCode}}', 'sleeper'), 'exited 137');
    assert.ok(!pidAlive(pids.sleeper), 'sleeper process gone');
    await dk('kill', 'ticker');
    let state = '';
    for (const until = Date.now() + 10_000; Date.now() < until && !state.startsWith('exited'); await sleep(100)) {
      state = await dk('inspect', '-f', '{{.State.Status}} {{.State.ExitCode}}', 'ticker');
    }
    assert.equal(state, 'exited 137');
    assert.ok(!pidAlive(pids.ticker), 'ticker process gone');

    assert.equal(await dk('run', '--rm', '--network', 'none', imgs.tag, 'echo', 'ok'), 'ok');

    await dk('rm', '-f', 'sleeper', 'ticker');
    assert.equal(await dk('ps', '-aq'), '');
    let shims = shimsOf(d!);
    for (const until = Date.now() + 10_000; shims.length && Date.now() < until; await sleep(200)) shims = shimsOf(d!);
    assert.deepEqual(shims, [], 'no shim of this daemon left');
  });

  test('a frozen supervisor (SIGSTOP) starves no read; a stop issued meanwhile completes after it resumes', async () => {
    await dk('run', '-d', '--network', 'none', '--name', 'frozen', imgs.tag, 'sh', '-c', 'echo started; exec sleep 300');
    const pid = Number(await dk('inspect', '-f', '{{.State.Pid}}', 'frozen'));
    const sup = supervisorPid(d!);
    assert.ok(sup > 0);
    process.kill(sup, 'SIGSTOP');
    let stopping: Promise<{ code: number | null; stdout: string; stderr: string }> | undefined;
    try {
      stopping = docker(d!, ['stop', '-t', '1', 'frozen']);
      await sleep(300);
      // Each answers while the supervisor stays frozen (it is resumed only after all of them).
      const reads: string[][] = [
        ['ps', '-a', '--format', '{{.Names}} {{.State}}'],
        ['inspect', '-f', '{{.State.Status}} {{.State.Pid}}', 'frozen'],
        ['logs', 'frozen'],
        ['images', '-q'],
        ['network', 'ls', '-q'],
        ['volume', 'ls', '-q'],
        ['version', '-f', '{{.Server.Version}}'],
        ['info', '-f', '{{.Containers}}'],
      ];
      const results = await Promise.all(reads.map((args) => docker(d!, args, { timeoutMs: 8_000 })));
      reads.forEach((args, i) => assert.equal(results[i]!.code, 0, `docker ${args[0]} while the supervisor is frozen: ${results[i]!.stderr}`));
      assert.equal(results[0]!.stdout.trim(), 'frozen running');
      assert.equal(results[1]!.stdout.trim(), `running ${pid}`);
      assert.equal(results[2]!.stdout.trim(), 'started');
      assert.ok(pidAlive(pid), 'the container still runs: its stop waits for the supervisor');
    } finally {
      process.kill(sup, 'SIGCONT');
    }
    const stopped = await stopping!;
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.equal(await dk('inspect', '-f', '{{.State.Status}} {{.State.ExitCode}}', 'frozen'), 'exited 137');
    assert.ok(!pidAlive(pid), 'the container process is gone');
    await dk('rm', 'frozen');
  });

  test('kill -9 of the supervisor while a container is stopped: docker start runs it', async () => {
    await dk('run', '-d', '--network', 'none', '--name', 'later', imgs.tag, 'sleep', '300');
    await dk('stop', '-t', '0', 'later');
    assert.equal(await dk('inspect', '-f', '{{.State.Status}}', 'later'), 'exited');
    await killSupervisor(d!);
    await dk('start', 'later');
    assert.equal(await dk('inspect', '-f', '{{.State.Status}}', 'later'), 'running');
    const pid = Number(await dk('inspect', '-f', '{{.State.Pid}}', 'later'));
    assert.ok(pidAlive(pid), 'the started container runs');
    assert.equal(await dk('exec', 'later', 'echo', 'hi'), 'hi');
    await dk('rm', '-f', 'later');
    let shims = shimsOf(d!);
    for (const until = Date.now() + 10_000; shims.length && Date.now() < until; await sleep(200)) shims = shimsOf(d!);
    assert.deepEqual(shims, [], 'no shim of this daemon left');
  });
});
