// --live-restore through the docker CLI: containers outlive a daemon stop (SIGTERM) and a kill -9,
// and the daemon that returns adopts them — same pid, running, their output kept flowing into the
// log with no gap, a published port answering again, stop and wait working with the real exit
// code. Without the option, containers stop with the daemon.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { pidAlive } from './harness/processes.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const HTTPD = 'mkdir -p /www && echo hello-$(hostname) > /www/index.html && exec httpd -f -p 80 -h /www';
const TICKER = 'i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.1; done';

/** An HTTP/1.0 GET over a plain socket; '' when the connection fails. */
function httpGet(port: number, timeoutMs = 3000): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    let buf = '';
    const t = setTimeout(() => s.destroy(), timeoutMs);
    s.on('connect', () => s.write('GET / HTTP/1.0\r\n\r\n'));
    s.on('data', (d) => (buf += d.toString()));
    s.on('close', () => {
      clearTimeout(t);
      resolve(buf);
    });
    s.on('error', () => {});
  });
}

async function httpEventually(port: number, want: RegExp): Promise<void> {
  let last = '';
  for (let i = 0; i < 50; i++) {
    last = await httpGet(port);
    if (want.test(last)) return;
    await sleep(200);
  }
  assert.fail(`no answer matching ${want} on port ${port}; last: ${JSON.stringify(last)}`);
}


/** Processes whose command line names `id` (a container's shim names it). */
function processesNaming(id: string): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(id)) out.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Mounts under a directory (the daemon's roots). */
function mountsUnder(dir: string): number {
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.split(' ')[4]?.startsWith(dir)).length;
}

/**
 * The ticks in a log, checked to be 0, 1, 2, ... with none repeated or out of order, and none
 * missing — except, with `inFlight`, one: a kill -9 can land between the daemon's read of a line
 * from the container's FIFO and its write to the log file (the reference's daemon has the same
 * window); what the pipe held while the daemon was away is all there.
 */
function ticksInOrder(log: string, inFlight = false): number {
  const ticks = log.split('\n').filter((l) => l.startsWith('tick ')).map((l) => Number(l.slice(5)));
  const gaps = ticks.map((n, i) => n - (i === 0 ? -1 : ticks[i - 1]!)).filter((step) => step !== 1);
  assert.ok(gaps.every((step) => step === 2) && gaps.length <= (inFlight ? 1 : 0), `ticks in order, none repeated, none lost${inFlight ? ' but the one in flight at the kill' : ''}: ${ticks.join(' ')}`);
  return ticks.length;
}

describe('live restore', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  before(async () => {
    d = await startDaemon({ bridge: true, args: ['--live-restore'] });
    imgs = await testImages();
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(async () => {
    try {
      const ctrs = (await docker(d, ['ps', '-aq'])).stdout.trim().split('\n').filter(Boolean);
      if (ctrs.length) await docker(d, ['rm', '-f', ...ctrs]);
    } finally {
      await d?.cleanup();
    }
  });

  for (const how of ['SIGTERM', 'SIGKILL'] as const) {
    test(`a daemon ${how === 'SIGTERM' ? 'stop' : 'kill -9'}: the containers run on and are adopted — same pid, output with no gap, the port answering, stop and wait`, async () => {
      const tick = `tick-${how}`;
      const web = `web-${how}`;
      const mountsBefore = mountsUnder(d.dataRoot);
      await dk('run', '-d', '--name', tick, imgs.tag, 'sh', '-c', TICKER);
      await dk('run', '-d', '--name', web, '-p', '127.0.0.1::80', '--health-cmd', 'true', '--health-interval', '300ms', imgs.tag, 'sh', '-c', HTTPD);
      const port = Number((await dk('port', web, '80/tcp')).split(':').pop());
      await httpEventually(port, new RegExp(`hello-`));
      const pid = Number(await dk('inspect', '-f', '{{.State.Pid}}', tick));
      const webPid = Number(await dk('inspect', '-f', '{{.State.Pid}}', web));
      assert.ok(pid > 0 && webPid > 0);
      await sleep(500);

      await d.stop({ signal: how });
      assert.ok(pidAlive(pid), 'the container outlived the daemon');
      assert.ok(pidAlive(webPid));
      await sleep(1000);
      assert.ok(pidAlive(pid), 'and keeps running while the daemon is away');
      await d.restart();

      assert.equal(await dk('inspect', '-f', '{{.State.Running}} {{.State.Pid}}', tick), `true ${pid}`);
      assert.equal(await dk('inspect', '-f', '{{.State.Running}} {{.State.Pid}}', web), `true ${webPid}`);
      await httpEventually(port, new RegExp(`hello-`));
      // Its healthcheck runs on: new probes are logged after the adoption.
      const lastProbe = async () => JSON.parse(await dk('inspect', '-f', '{{json .State.Health}}', web)) as { Status: string; Log: { End: string }[] };
      const adoptedAt = new Date().toISOString();
      let h = await lastProbe();
      for (let i = 0; i < 50 && !(h.Log.at(-1)?.End && h.Log.at(-1)!.End > adoptedAt); i++) {
        await sleep(100);
        h = await lastProbe();
      }
      assert.ok(h.Log.at(-1)!.End > adoptedAt, `a probe after the adoption: ${JSON.stringify(h.Log.at(-1))}`);
      assert.equal(h.Status, 'healthy');
      // The ticks written while the daemon was away (a few hundred bytes: within the pipe) are in the log, in order.
      await sleep(500);
      const n = ticksInOrder(await dk('logs', tick), how === 'SIGKILL');
      assert.ok(n >= 15, `${n} ticks: the ones of the second the daemon was away are there`);
      // Its output keeps flowing, and exec, stop and wait work on the adopted run.
      await sleep(300);
      assert.ok(ticksInOrder(await dk('logs', tick), how === 'SIGKILL') > n, 'new ticks after the adoption');
      assert.equal(await dk('exec', tick, 'echo', 'in-adopted'), 'in-adopted');
      await dk('stop', '-t', '1', tick);
      assert.equal(await dk('wait', tick), '137', 'sh ignores SIGTERM as pid 1: killed after the grace');
      assert.equal(await dk('inspect', '-f', '{{.State.Running}} {{.State.ExitCode}}', tick), 'false 137');
      assert.ok(!pidAlive(pid));
      const ids = [await dk('inspect', '-f', '{{.Id}}', tick), await dk('inspect', '-f', '{{.Id}}', web)];
      await dk('rm', '-f', tick, web);
      assert.equal(await httpGet(port, 1000), '', 'the port is released once the adopted container is gone');
      // Nothing left behind: no shim, no FIFO or state directory, no mount.
      for (const id of ids) {
        assert.deepEqual(processesNaming(id), [], `no process names ${id}`);
        for (const root of [d.execRoot, d.dataRoot]) {
          const left = readdirSync(root, { recursive: true }).map(String).filter((p) => p.includes(id));
          assert.deepEqual(left, [], `nothing of ${id} under ${root}`);
        }
      }
      assert.equal(mountsUnder(d.dataRoot), mountsBefore, 'the root filesystems are unmounted');
    });
  }

  test('without --live-restore, containers stop with the daemon', async () => {
    const plain = await startDaemon({ args: [] });
    try {
      const pdk = dockerOk(() => plain);
      await pdk('load', '-i', imgs.dockerArchive);
      await pdk('run', '-d', '--name', 'goes', '--stop-timeout', '1', imgs.tag, 'sleep', '300');
      const pid = Number(await pdk('inspect', '-f', '{{.State.Pid}}', 'goes'));
      await plain.stop();
      assert.ok(!pidAlive(pid), 'stopped with the daemon');
    } finally {
      await plain.cleanup();
    }
  });
});
