// Desired state as a level, seen through the docker CLI: a stop waiting out its grace period holds
// no worker (other containers run meanwhile), a kill's one-off signal reaches the process, a
// restart is a new run, and after kill -9 of the daemon the leftovers are stopped while new
// requests are served at once. Ordering is asserted, never timings (the benchmark measures those).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { docker, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';

describe('container lifecycle levels', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  const state = (name: string) => dk('inspect', '-f', '{{.State.Status}}', name);

  before(async () => {
    d = await startDaemon();
    imgs = await testImages();
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(async () => {
    await d?.cleanup();
  });

  test('stops in their grace period hold no worker: docker run completes meanwhile', async () => {
    // busybox sleep as PID 1 ignores SIGTERM: each stop waits out its grace period, then SIGKILL.
    const names = ['slow0', 'slow1', 'slow2'];
    for (const n of names) await dk('run', '-d', '--network', 'none', '--name', n, imgs.tag, 'sleep', '300');
    const stops = docker(d, ['stop', '-t', '4', ...names]);
    await sleep(300);
    assert.equal(await dk('run', '--rm', '--network', 'none', imgs.tag, 'echo', 'served'), 'served');
    for (const n of names) assert.equal(await state(n), 'running', `${n} is still in its grace period`);
    const r = await stops;
    assert.equal(r.code, 0, r.stderr);
    for (const n of names) {
      assert.equal(await state(n), 'exited');
      assert.equal(await dk('inspect', '-f', '{{.State.ExitCode}}', n), '137');
    }
    await dk('rm', ...names);
  });

  test('docker kill -s HUP reaches the process and leaves it running; kill stops it', async () => {
    await dk('run', '-d', '--network', 'none', '--name', 'hup', imgs.tag, 'sh', '-c', 'trap "echo got-hup" HUP; while true; do sleep 0.1; done');
    await dk('kill', '-s', 'HUP', 'hup');
    let logs = '';
    for (let i = 0; i < 50 && !logs.includes('got-hup'); i++) {
      logs = await dk('logs', 'hup');
      if (!logs.includes('got-hup')) await sleep(100);
    }
    assert.match(logs, /got-hup/);
    assert.equal(await state('hup'), 'running');
    await dk('kill', 'hup');
    assert.equal(await state('hup'), 'exited', 'a SIGKILL answers once the container is down');
    const again = await docker(d, ['kill', 'hup']);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /is not running/);
    await dk('rm', 'hup');
  });

  test('docker restart is a new run; docker start runs an exited container again', async () => {
    await dk('run', '-d', '--network', 'none', '--name', 'rs', imgs.tag, 'sleep', '300');
    const pid1 = await dk('inspect', '-f', '{{.State.Pid}}', 'rs');
    await dk('restart', '-t', '0', 'rs');
    const pid2 = await dk('inspect', '-f', '{{.State.Pid}}', 'rs');
    assert.notEqual(pid2, pid1);
    assert.equal(await state('rs'), 'running');
    assert.equal(await dk('inspect', '-f', '{{.RestartCount}}', 'rs'), '0');
    await dk('rm', '-f', 'rs');

    await dk('run', '--network', 'none', '--name', 'once', imgs.tag, 'sh', '-c', 'echo ran');
    assert.equal(await state('once'), 'exited');
    await dk('start', '-a', 'once');
    assert.equal(await dk('logs', 'once'), 'ran\nran');
    await dk('rm', 'once');
  });

  test('stop -t 1 of a process ignoring SIGTERM ends in 137; on-failure:3 restarts three times; pause and unpause', async () => {
    await dk('run', '-d', '--network', 'none', '--name', 'ign', imgs.tag, 'sleep', '300');
    await dk('stop', '-t', '1', 'ign');
    assert.equal(await dk('inspect', '-f', '{{.State.Status}} {{.State.ExitCode}}', 'ign'), 'exited 137');
    await dk('rm', 'ign');

    await dk('run', '-d', '--network', 'none', '--restart', 'on-failure:3', '--name', 'fails', imgs.tag, 'sh', '-c', 'exit 3');
    let seen = '';
    for (let i = 0; i < 60 && seen !== '3 exited 3'; i++) {
      seen = await dk('inspect', '-f', '{{.RestartCount}} {{.State.Status}} {{.State.ExitCode}}', 'fails');
      if (seen !== '3 exited 3') await sleep(100);
    }
    assert.equal(seen, '3 exited 3');
    await sleep(500);
    assert.equal(await dk('inspect', '-f', '{{.RestartCount}} {{.State.Status}}', 'fails'), '3 exited', 'no fourth restart');
    await dk('rm', 'fails');

    await dk('run', '-d', '--network', 'none', '--name', 'pz', imgs.tag, 'sleep', '300');
    await dk('pause', 'pz');
    assert.equal(await state('pz'), 'paused');
    const again = await docker(d, ['pause', 'pz']);
    assert.match(again.stderr, /already paused/);
    await dk('unpause', 'pz');
    assert.equal(await state('pz'), 'running');
    await dk('stop', '-t', '0', 'pz');
    assert.equal(await state('pz'), 'exited');
    await dk('rm', 'pz');
  });

  test('after kill -9 of the daemon, leftovers stop by their deadline while new runs are served', async () => {
    const names = ['left0', 'left1', 'left2'];
    for (const n of names) await dk('run', '-d', '--network', 'none', '--stop-timeout', '5', '--name', n, imgs.tag, 'sleep', '300');
    await d.stop({ signal: 'SIGKILL' });
    await d.restart();
    assert.equal(await dk('run', '--rm', '--network', 'none', imgs.tag, 'echo', 'served'), 'served');
    const during = await Promise.all(names.map(state));
    assert.ok(during.every((s) => s === 'running'), `leftovers still in their grace period: ${during}`);
    for (const n of names) {
      let s = '';
      for (let i = 0; i < 100 && s !== 'exited'; i++) {
        s = await state(n);
        if (s !== 'exited') await sleep(200);
      }
      assert.equal(s, 'exited', n);
    }
    await dk('rm', ...names);
  });
});
