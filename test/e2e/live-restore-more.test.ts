// --live-restore, the rest of what an adopted container keeps: the option turned on (and off) by
// editing the watched config file; its restart policy (killed from the host, it is restarted) and
// `docker wait` with the real exit code of an adopted run ending by itself (and of one that ended
// while the daemon was away, a --restart always one then started again at boot); `logs -f`, attach
// (output and stdin) and pause/unpause; its networking taken over, not re-created (same address,
// its name resolved on a user-defined network by another container, a published port reached
// through the bridge's gateway — the DNAT path); and an exec running when the daemon went down,
// forgotten as the reference forgets it (execs live in memory: 404 "No such exec instance"),
// its process and FIFOs gone with the container.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { DOCKER_CLI, docker, dockerode, dockerOk, type TestImages } from './harness/clients.ts';
import { pidAlive } from './harness/processes.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const HTTPD = 'mkdir -p /www && echo hello-$(hostname) > /www/index.html && exec httpd -f -p 80 -h /www';
const TICKER = 'i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.1; done';


function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '0.0.0.0', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
    s.on('error', reject);
  });
}

/** An HTTP/1.0 GET over a plain socket; '' when the connection fails. */
function httpGet(host: string, port: number, timeoutMs = 3000): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
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

async function httpEventually(host: string, port: number, want: RegExp): Promise<void> {
  let last = '';
  for (let i = 0; i < 50; i++) {
    last = await httpGet(host, port);
    if (want.test(last)) return;
    await sleep(200);
  }
  assert.fail(`no answer matching ${want} on ${host}:${port}; last: ${JSON.stringify(last)}`);
}

/** A GET on the daemon's socket: status and parsed body. */
function apiGet(d: DaemonHandle, path: string): Promise<{ status: number; body: { message?: string } & Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: d.socket, path, method: 'GET' }, (res) => {
      let buf = '';
      res.on('data', (c) => (buf += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: buf ? JSON.parse(buf) : {} }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A docker CLI command running in the background: its output so far, stdin, and a kill. */
function background(d: DaemonHandle, args: string[]) {
  const child = spawn(DOCKER_CLI, args, { env: { ...process.env, DOCKER_HOST: d.dockerHost }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  child.stdin.on('error', () => {});
  return {
    out: () => out,
    write: (s: string) => child.stdin.write(s),
    kill: () => child.kill('SIGKILL'),
  };
}

async function until(what: string, fn: () => Promise<boolean>, tries = 100, everyMs = 100): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await fn()) return;
    await sleep(everyMs);
  }
  assert.fail(`timed out waiting: ${what}`);
}

const ticks = (s: string) => s.split('\n').filter((l) => /^tick \d+/.test(l)).length;

describe('live restore: reloadable', () => {
  test('turned on by editing the config file: a stop leaves the container running and the next start adopts it; turned off again: it stops with the daemon', async () => {
    const { d, imgs } = await startWithImages({ args: [] });
    try {
      const dk = dockerOk(() => d);
      const info = () => dk('info', '-f', '{{.LiveRestoreEnabled}}');
      assert.equal(await info(), 'false');
      await dk('run', '-d', '--name', 'stays', '--network', 'none', '--stop-timeout', '1', imgs.tag, 'sleep', '300');
      const pid = Number(await dk('inspect', '-f', '{{.State.Pid}}', 'stays'));
      const id = await dk('inspect', '-f', '{{.Id}}', 'stays');
      writeFileSync(d.configFile, JSON.stringify({ 'live-restore': true }));
      await until('live restore on after the edit', async () => (await info()) === 'true');
      await d.stop();
      assert.ok(pidAlive(pid), 'the container outlived the daemon');
      await d.restart();
      await until('adopted', async () => new RegExp(`adopted the running container.*key=${id}`).test(d.logs()), 50);
      assert.equal(await dk('inspect', '-f', '{{.State.Running}} {{.State.Pid}}', 'stays'), `true ${pid}`);
      // And off again by the same path: the next stop stops it.
      writeFileSync(d.configFile, JSON.stringify({ 'live-restore': false }));
      await until('live restore off after the edit', async () => (await info()) === 'false');
      await d.stop();
      assert.ok(!pidAlive(pid), 'stopped with the daemon');
    } finally {
      await removeAllAndCleanup(d);
    }
  });
});

describe('live restore: adopted containers', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  let gateway: string;
  const dk = dockerOk(() => d);
  before(async () => {
    ({ d, imgs } = await startWithImages({ bridge: true, args: ['--live-restore'] }));
    gateway = d.bip.split('/')[0]!;
  });
  after(() => removeAllAndCleanup(d));

  const pidOf = async (name: string) => Number(await dk('inspect', '-f', '{{.State.Pid}}', name));
  /** Stops the daemon (SIGTERM) and starts it again: the containers named are adopted with their pids. */
  async function bounce(...names: string[]): Promise<void> {
    const pids = await Promise.all(names.map(pidOf));
    const ids = await Promise.all(names.map((n) => dk('inspect', '-f', '{{.Id}}', n)));
    const logged = d.logs().length;
    await d.restart();
    // Taken over by this daemon (not only the last life's record read back): its adoption is logged.
    await until('adopted', async () => ids.every((id) => new RegExp(`adopted the running container.*key=${id}`).test(d.logs().slice(logged))), 50);
    for (const [i, n] of names.entries()) assert.equal(await dk('inspect', '-f', '{{.State.Running}} {{.State.Pid}}', n), `true ${pids[i]}`, `${n} adopted`);
  }

  test('restart policy: an adopted --restart always container killed from the host is restarted (new pid, RestartCount grows)', async () => {
    await dk('run', '-d', '--name', 'always', '--restart', 'always', '--network', 'none', imgs.tag, 'sleep', '300');
    const pid = await pidOf('always');
    assert.equal(await dk('inspect', '-f', '{{.RestartCount}}', 'always'), '0');
    await bounce('always');
    process.kill(pid, 'SIGKILL');
    let now = '';
    await until('restarted by its policy', async () => {
      now = await dk('inspect', '-f', '{{.State.Running}} {{.State.Pid}} {{.RestartCount}}', 'always');
      const [running, p, n] = now.split(' ');
      return running === 'true' && Number(p) > 0 && Number(p) !== pid && Number(n) >= 1;
    }, 150);
    assert.ok(!pidAlive(pid));
    await dk('rm', '-f', 'always');
  });

  test('docker wait on an adopted container that ends by itself returns its exit code', async () => {
    await dk('run', '-d', '--name', 'seven', '--network', 'none', imgs.tag, 'sh', '-c', 'sleep 8; exit 7');
    await bounce('seven');
    assert.equal(await dk('wait', 'seven'), '7');
    assert.equal(await dk('inspect', '-f', '{{.State.Running}} {{.State.ExitCode}}', 'seven'), 'false 7');
    await dk('rm', 'seven');
  });

  test('containers that ended while the daemon was away: the real exit code; a --restart always one started again', async () => {
    await dk('run', '-d', '--name', 'five', '--network', 'none', imgs.tag, 'sh', '-c', 'sleep 1; exit 5');
    // Its first run ends while the daemon is away; the run its policy starts stays up.
    await dk('run', '-d', '--name', 'again', '--restart', 'always', '--network', 'none', imgs.tag, 'sh', '-c', 'test -f /done && exec sleep 300; touch /done; sleep 1; exit 3');
    const pid = await pidOf('five');
    const againPid = await pidOf('again');
    await d.stop();
    await until('they end while the daemon is away', async () => !pidAlive(pid) && !pidAlive(againPid), 50);
    await d.restart();
    await until('seen ended', async () => (await dk('inspect', '-f', '{{.State.Running}}', 'five')) === 'false', 50);
    assert.equal(await dk('inspect', '-f', '{{.State.Running}} {{.State.ExitCode}}', 'five'), 'false 5');
    assert.equal(await dk('wait', 'five'), '5');
    let now = '';
    await until('restarted by its policy', async () => {
      now = await dk('inspect', '-f', '{{.State.Running}} {{.State.Pid}} {{.RestartCount}}', 'again');
      const [running, p, n] = now.split(' ');
      return running === 'true' && Number(p) > 0 && Number(p) !== againPid && n !== undefined;
    }, 100);
    // Started again at boot as the reference does (containerStart with its restart manager reset): not a policy restart, the count is 0.
    assert.equal(now.split(' ')[2], '0', now);
    assert.equal(await dk('exec', 'again', 'ls', '/done'), '/done', 'the same container, started again');
    await dk('rm', '-f', 'five', 'again');
  });

  test('logs -f follows, attach gets output and gives input, pause and unpause, on adopted containers', async () => {
    await dk('run', '-d', '--name', 'ticker', '--network', 'none', imgs.tag, 'sh', '-c', TICKER);
    await dk('run', '-d', '-i', '--name', 'reader', '--network', 'none', imgs.tag, 'sh', '-c', 'while read l; do echo got-$l; done');
    await bounce('ticker', 'reader');

    const follow = background(d, ['logs', '-f', '--tail', '0', 'ticker']);
    const attach = background(d, ['attach', '--no-stdin', '--sig-proxy=false', 'ticker']);
    try {
      await until('logs -f and attach show new ticks', async () => ticks(follow.out()) >= 5 && ticks(attach.out()) >= 5, 50);
    } finally {
      follow.kill();
      attach.kill();
    }

    const input = background(d, ['attach', '--sig-proxy=false', 'reader']);
    try {
      await sleep(500);
      input.write('hello\n');
      await until('the adopted container read the attached input', async () => input.out().includes('got-hello'), 50);
    } finally {
      input.kill();
    }
    assert.match(await dk('logs', 'reader'), /got-hello/);

    await dk('pause', 'ticker');
    assert.equal(await dk('inspect', '-f', '{{.State.Status}}', 'ticker'), 'paused');
    await sleep(300);
    const paused = ticks(await dk('logs', 'ticker'));
    await sleep(700);
    assert.equal(ticks(await dk('logs', 'ticker')), paused, 'no output while paused');
    await dk('unpause', 'ticker');
    assert.equal(await dk('inspect', '-f', '{{.State.Status}}', 'ticker'), 'running');
    await until('ticks again after unpause', async () => ticks(await dk('logs', 'ticker')) > paused + 3, 50);
    await dk('rm', '-f', 'ticker', 'reader');
  });

  test('networking taken over: same address, the name resolved and reached on a user network, a published port through the gateway (DNAT)', async () => {
    await dk('network', 'create', 'lrnet');
    const netId = await dk('network', 'inspect', '-f', '{{.Id}}', 'lrnet');
    await dk('run', '-d', '--name', 'srv', '--hostname', 'srv', '--network', 'lrnet', imgs.tag, 'sh', '-c', HTTPD);
    const fixed = await freePort();
    await dk('run', '-d', '--name', 'pub', '--hostname', 'pub', '-p', `${fixed}:80`, imgs.tag, 'sh', '-c', HTTPD);
    const addr = (n: string) => dk('inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', n);
    const [srvIp, pubIp] = [await addr('srv'), await addr('pub')];
    await httpEventually(gateway, fixed, /hello-pub/);
    await bounce('srv', 'pub');

    assert.equal(await dk('network', 'inspect', '-f', '{{.Id}}', 'lrnet'), netId, 'the network is the same one');
    assert.equal(await addr('srv'), srvIp);
    assert.equal(await addr('pub'), pubIp);
    // Another container on the network resolves the adopted one's name (embedded DNS) and reaches it.
    const looked = await dk('run', '--rm', '--network', 'lrnet', imgs.tag, 'nslookup', 'srv');
    assert.ok(looked.includes(srvIp), looked);
    const viaName = await dk('run', '--rm', '--network', 'lrnet', imgs.tag, 'sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 srv 80`);
    assert.match(viaName, /hello-srv/);
    // The published port through the bridge's address: the DNAT rule, from the host and from a container.
    await httpEventually(gateway, fixed, /hello-pub/);
    const viaGw = await dk('run', '--rm', imgs.tag, 'sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${gateway} ${fixed}`);
    assert.match(viaGw, /hello-pub/);
    await dk('rm', '-f', 'srv', 'pub');
    await dk('network', 'rm', 'lrnet');
  });

  test('an exec running when the daemon went down: 404 "No such exec instance" after adoption; its process and FIFOs gone with the container', async () => {
    await dk('run', '-d', '--name', 'execd', '--network', 'none', imgs.tag, 'sleep', '300');
    const id = await dk('inspect', '-f', '{{.Id}}', 'execd');
    const exec = await dockerode(d).getContainer(id).exec({ Cmd: ['sleep', '300'] });
    await exec.start({ Detach: true });
    let execPid = 0;
    await until('the exec runs', async () => {
      const r = await apiGet(d, `/exec/${exec.id}/json`);
      execPid = Number(r.body.Pid ?? 0);
      return r.body.Running === true && execPid > 0;
    }, 50);
    const fifos = () => readdirSync(d.execRoot, { recursive: true }).map(String).filter((p) => p.includes(exec.id));
    assert.ok(fifos().length > 0, 'the exec has FIFOs in the exec root');

    await bounce('execd');
    const r = await apiGet(d, `/exec/${exec.id}/json`);
    assert.equal(r.status, 404);
    assert.equal(r.body.message, `No such exec instance: ${exec.id}`);
    assert.ok(pidAlive(execPid), 'the process of the exec runs on in the adopted container, as with the reference');

    await dk('rm', '-f', 'execd');
    await until('the exec process is gone', async () => !pidAlive(execPid), 50);
    assert.deepEqual(fifos(), [], 'no FIFO of the exec is left');
    assert.deepEqual(readdirSync(d.execRoot, { recursive: true }).map(String).filter((p) => p.includes(id)), [], 'no FIFO directory of the container is left');
    const named = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(id);
      } catch {
        return false;
      }
    });
    assert.deepEqual(named, [], 'no shim left');
  });
});
