// An uncaught exception or unhandled rejection ends the daemon (issue (16 of 21), 5): it logs the
// error with its stack mapped to the TypeScript sources and exits 1 (systemd restarts it). The fault
// is injected through POST /debug/fault, a route only ENGINE_DEBUG_FAULTS=1 in the daemon's
// environment registers. With live restore the containers run on and are adopted by the next
// start, as after a kill -9; without it they are stopped at that start.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { apiRequest, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { pidAlive } from './harness/processes.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { until } from './harness/wait.ts';


describe('an uncaught exception or unhandled rejection ends the daemon', () => {
  let imgs: TestImages;
  const ds: DaemonHandle[] = [];
  const start = async (args: string[], faults = true) => {
    const d = await startDaemon({ args, ...(faults ? { env: { ENGINE_DEBUG_FAULTS: '1' } } : {}) });
    ds.push(d);
    await dockerOk(() => d)('load', '-i', imgs.dockerArchive);
    return d;
  };
  /** The daemon's exit code once it has gone by itself. */
  const exitOf = async (d: DaemonHandle) => {
    await until('the daemon exits', async () => d.pid === 0, 30_000, 100);
    return d.stop();
  };

  before(async () => {
    imgs = await testImages();
  });
  after(async () => {
    await Promise.all(ds.map((d) => d.cleanup().catch(() => {})));
  });

  test('an unhandled rejection with live restore: logged with its source-mapped stack, exit 1; the container runs on and is adopted', { timeout: 120_000 }, async () => {
    const d = await start(['--live-restore']);
    const dk = dockerOk(() => d);
    const id = (await dk('run', '-d', '--name', 'keeps', imgs.tag, 'sleep', '1000')).trim();
    const pid = Number(await dk('inspect', '-f', '{{.State.Pid}}', id));
    const r = await apiRequest(d, 'POST', '/debug/fault?kind=rejection');
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(await exitOf(d), 1);
    const fatal = d.logs().split('\n').find((l) => l.includes('level=fatal'));
    assert.ok(fatal, d.logs().slice(-2000));
    assert.match(fatal, /msg="unhandled rejection: engined exits"/);
    assert.match(fatal, /injected rejection \(POST \/debug\/fault\)/);
    assert.match(fatal, /\/api\/debug\/fault-routes\.ts:\d+:\d+/, 'the stack names the TypeScript source');
    assert.ok(pidAlive(pid), 'the container outlived the daemon');
    await d.restart();
    assert.equal(await dk('inspect', '-f', '{{.State.Running}} {{.State.Pid}}', id), `true ${pid}`);
    // The daemon serves on after the restart: a fault request with a bad kind is refused, nothing else.
    const bad = await apiRequest(d, 'POST', '/debug/fault?kind=segfault');
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /kind must be exception or rejection/);
    assert.equal((await apiRequest(d, 'GET', '/_ping')).status, 200);
    await dk('rm', '-f', id);
  });

  test('an uncaught exception without live restore: exit 1, and the next start stops the container it left', { timeout: 120_000 }, async () => {
    const d = await start([]);
    const dk = dockerOk(() => d);
    const id = (await dk('run', '-d', '--name', 'left', imgs.tag, 'sleep', '1000')).trim();
    assert.equal((await apiRequest(d, 'POST', '/debug/fault?kind=exception')).status, 202);
    assert.equal(await exitOf(d), 1);
    assert.match(d.logs(), /level=fatal msg="uncaught exception: engined exits".*injected exception/);
    await d.restart();
    // Stopped by the new daemon's reconciler, as after a kill -9 (by its stop deadline, while it serves).
    await until('the container it left stopped', async () => (await dk('inspect', '-f', '{{.State.Running}}', id)) === 'false', 30_000);
    await dk('rm', '-f', id);
  });

  test('without ENGINE_DEBUG_FAULTS there is no fault route', { timeout: 60_000 }, async () => {
    const d = await start([], false);
    const r = await apiRequest(d, 'POST', '/debug/fault?kind=exception');
    assert.equal(r.status, 404);
    assert.equal((await apiRequest(d, 'GET', '/_ping')).status, 200);
  });
});
