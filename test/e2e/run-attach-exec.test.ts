// `docker run` as people type it: attach, exec, the default bridge, live views, restart
// policies — with the docker CLI (interactive ones under a pseudo-terminal via script(1)),
// docker-py's high-level API, dockerode and testcontainers.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker, dockerode, dockerTty, pythonDocker, testImages } from './harness/clients.ts';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


describe('run, attach, exec, bridge and live views', () => {
  let d: DaemonHandle;
  let imgs: Awaited<ReturnType<typeof testImages>>;
  const dk = async (...args: string[]) => {
    const r = await docker(d, args);
    assert.equal(r.code, 0, `docker ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
  before(async () => {
    d = await startDaemon({ bridge: true });
    imgs = await testImages();
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(async () => {
    await d?.cleanup();
  });

  test('docker run --rm prints output and exits with the container code', async () => {
    const r = await docker(d, ['run', '--rm', '--network', 'none', imgs.tag, 'sh', '-c', 'echo hi; echo oops >&2; exit 7']);
    assert.equal(r.code, 7, r.stderr);
    assert.equal(r.stdout, 'hi\n');
    assert.equal(r.stderr, 'oops\n');
    const left = await dk('ps', '-aq');
    assert.equal(left, '');
  });

  test('docker run with stdin piped (-i)', async () => {
    const child = spawn('docker', ['run', '--rm', '-i', '--network', 'none', imgs.tag, 'sh', '-c', 'cat; echo done'], { env: { ...process.env, DOCKER_HOST: d.dockerHost } });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stdin.end('from-stdin\n');
    const code = await new Promise((r) => child.on('close', r));
    assert.equal(code, 0);
    assert.equal(out, 'from-stdin\ndone\n');
  });

  test('docker run -it is interactive', async () => {
    const r = await dockerTty(d, ['run', '-it', '--rm', '--network', 'none', imgs.tag, 'sh'], 'echo tty-$((6*7))\nexit 3\n');
    assert.match(r.out, /tty-42/);
    assert.equal(r.code, 3, r.out);
  });

  test('a 127 for a missing command', async () => {
    const r = await docker(d, ['run', '--rm', '--network', 'none', imgs.tag, 'no-such-binary']);
    assert.equal(r.code, 127, r.stderr);
  });

  test('exec, exec -it, exec exit codes, top, pause, rename, stats', async () => {
    await dk('run', '-d', '--name', 'longrun', '--network', 'none', imgs.tag, 'sleep', '300');
    assert.equal(await dk('exec', 'longrun', 'sh', '-c', 'echo in-exec; id -u'), 'in-exec\n0');
    assert.equal(await dk('exec', '-u', '1000', 'longrun', 'id', '-u'), '1000');
    assert.equal(await dk('exec', '-e', 'X=y', '-w', '/tmp', 'longrun', 'sh', '-c', 'echo $X $(pwd)'), 'y /tmp');
    const failed = await docker(d, ['exec', 'longrun', 'sh', '-c', 'exit 5']);
    assert.equal(failed.code, 5);
    const missing = await docker(d, ['exec', 'longrun', 'nope']);
    assert.ok(missing.code === 126 || missing.code === 127, `exit ${missing.code}`);
    const tty = await dockerTty(d, ['exec', '-it', 'longrun', 'sh'], 'echo via-$((2+3))\nexit\n');
    assert.match(tty.out, /via-5/);
    const top = await dk('top', 'longrun');
    assert.match(top, /sleep 300/);
    await dk('pause', 'longrun');
    assert.match(await dk('ps', '--format', '{{.Status}}', '--filter', 'name=longrun'), /Paused/);
    await dk('unpause', 'longrun');
    await dk('rename', 'longrun', 'renamed');
    const stats = await dk('stats', '--no-stream', '--format', '{{.Name}} {{.MemUsage}}', 'renamed');
    assert.match(stats, /^renamed \d/);
    await dk('rm', '-f', 'renamed');
  });

  test('detach keys, attach again, two attached clients, resize', async () => {
    await dk('run', '-dit', '--name', 'det', '--network', 'none', imgs.tag, 'sh');
    // ctrl-p ctrl-q leaves the container running.
    const a = await dockerTty(d, ['attach', 'det'], 'echo att-$((1+1))\n\x10\x11\n');
    assert.match(a.out, /att-2/);
    assert.equal(await dk('inspect', '--format', '{{.State.Running}}', 'det'), 'true');
    // A custom sequence from --detach-keys.
    const b = await dockerTty(d, ['attach', '--detach-keys', 'ctrl-x,x', 'det'], 'echo again-$((2+2))\n\x18x\n');
    assert.match(b.out, /again-4/);
    assert.equal(await dk('inspect', '--format', '{{.State.Running}}', 'det'), 'true');
    // Two clients attached at once both see the output.
    const watchers = [0, 1].map(() => {
      const child = spawn('docker', ['attach', '--no-stdin', 'det'], { env: { ...process.env, DOCKER_HOST: d.dockerHost } });
      let out = '';
      child.stdout.on('data', (c) => (out += c));
      const closed = new Promise((r) => child.on('close', r));
      return { child, closed, out: () => out };
    });
    await sleep(1000);
    await dk('exec', 'det', 'sh', '-c', 'echo to-both > /proc/1/fd/1');
    for (let i = 0; i < 50 && !watchers.every((w) => w.out().includes('to-both')); i++) await sleep(100);
    for (const w of watchers) assert.match(w.out(), /to-both/);
    // Resize reaches the container's terminal.
    const id = await dk('inspect', '--format', '{{.Id}}', 'det');
    const rs = await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-X', 'POST', '--unix-socket', d.socket, `http://x/containers/${id}/resize?h=33&w=111`]);
    assert.equal(rs.stdout, '200');
    assert.equal(await dk('exec', 'det', 'sh', '-c', 'stty size < /proc/1/fd/0'), '33 111');
    await dk('rm', '-f', 'det');
    await Promise.all(watchers.map((w) => Promise.race([w.closed, sleep(10_000).then(() => w.child.kill('SIGKILL'))])));
  });

  test('docker start -a and attach', async () => {
    await dk('create', '--name', 'att', '--network', 'none', imgs.tag, 'sh', '-c', 'sleep 1; echo attached-out');
    const r = await docker(d, ['start', '-a', 'att']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'attached-out\n');
    await dk('rm', 'att');
  });

  test('docker cp both ways, changes, export', async () => {
    await dk('run', '-d', '--name', 'files', '--network', 'none', imgs.tag, 'sleep', '300');
    const dir = mkdtempSync(join(tmpdir(), 'engine-cp-'));
    try {
      writeFileSync(join(dir, 'in.txt'), 'hello-cp\n');
      await dk('cp', join(dir, 'in.txt'), 'files:/tmp/in.txt');
      assert.equal(await dk('exec', 'files', 'cat', '/tmp/in.txt'), 'hello-cp');
      await dk('exec', 'files', 'sh', '-c', 'echo back > /tmp/out.txt');
      await dk('cp', 'files:/tmp/out.txt', join(dir, 'out.txt'));
      assert.equal(readFileSync(join(dir, 'out.txt'), 'utf8'), 'back\n');
      // An image file changed, one deleted, one added: C, D and A, their directories C.
      await dk('exec', 'files', 'sh', '-c', 'touch /bin/busybox && rm /bin/true');
      const changes = await dk('diff', 'files');
      assert.match(changes, /^A \/tmp\/out.txt$/m);
      assert.match(changes, /^C \/bin\/busybox$/m);
      assert.match(changes, /^D \/bin\/true$/m);
      assert.match(changes, /^C \/bin$/m);
      const bad = await docker(d, ['cp', join(dir, 'in.txt'), 'files:/../../../../tmp/escape-test-engine']);
      assert.equal(bad.code, 0);
      assert.throws(() => readFileSync('/tmp/escape-test-engine'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await dk('rm', '-f', 'files');
    }
  });

  test('default bridge: address, gateway, outbound to the gateway, release on removal', async () => {
    const id = await dk('run', '-d', '--name', 'net1', imgs.tag, 'sleep', '300');
    const ip = await dk('inspect', '-f', '{{.NetworkSettings.IPAddress}}', id);
    assert.match(ip, /^\d+\.\d+\.\d+\.\d+$/);
    const gw = await dk('inspect', '-f', '{{.NetworkSettings.Networks.bridge.Gateway}}', id);
    assert.match(gw, /^\d+\.\d+\.\d+\.1$/);
    const route = await dk('exec', 'net1', 'ip', 'route');
    assert.match(route, new RegExp(`default via ${gw.replace(/\./g, '\\.')}`));
    const ping = await docker(d, ['exec', 'net1', 'ping', '-c', '1', '-W', '2', gw]);
    assert.equal(ping.code, 0, ping.stdout + ping.stderr);
    const id2 = await dk('run', '-d', '--name', 'net2', imgs.tag, 'sleep', '300');
    const ip2 = await dk('inspect', '-f', '{{.NetworkSettings.IPAddress}}', id2);
    assert.notEqual(ip, ip2);
    const shared = await dk('run', '--rm', '--network', 'container:net1', imgs.tag, 'sh', '-c', 'ip -4 addr show eth0');
    assert.match(shared, new RegExp(ip.replace(/\./g, '\\.')));
    // Containers on the bridge reach each other (icc).
    const icc = await docker(d, ['exec', 'net2', 'ping', '-c', '1', '-W', '2', ip]);
    assert.equal(icc.code, 0, icc.stdout + icc.stderr);
    // --network host sees the host's interfaces, the daemon's bridge among them.
    const hostNet = await docker(d, ['run', '--rm', '--network', 'host', imgs.tag, 'cat', `/sys/class/net/${d.bridge}/operstate`]);
    assert.equal(hostNet.code, 0, hostNet.stderr);
    await dk('rm', '-f', 'net1', 'net2');
    // Released addresses are handed out again: the lowest free one is the first container's.
    const id3 = await dk('run', '-d', '--name', 'net3', imgs.tag, 'sleep', '300');
    assert.equal(await dk('inspect', '-f', '{{.NetworkSettings.IPAddress}}', id3), ip);
    await dk('rm', '-f', 'net3');
  });

  test('restart policies and --rm', async () => {
    await dk('run', '-d', '--name', 'onfail', '--network', 'none', '--restart', 'on-failure:2', imgs.tag, 'sh', '-c', 'exit 1');
    for (let i = 0; i < 40; i++) {
      const s = await dk('inspect', '-f', '{{.RestartCount}} {{.State.Status}}', 'onfail');
      if (s === '2 exited') break;
      await sleep(250);
    }
    assert.equal(await dk('inspect', '-f', '{{.RestartCount}} {{.State.Status}}', 'onfail'), '2 exited');
    await dk('rm', 'onfail');
    await dk('run', '-d', '--name', 'always', '--network', 'none', '--restart', 'always', imgs.tag, 'sleep', '300');
    await d.restart();
    for (let i = 0; i < 40; i++) {
      if ((await dk('inspect', '-f', '{{.State.Status}}', 'always')) === 'running') break;
      await sleep(250);
    }
    assert.equal(await dk('inspect', '-f', '{{.State.Status}}', 'always'), 'running');
    await dk('rm', '-f', 'always');
  });

  test('events stream container actions', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    await dk('run', '--rm', '--network', 'none', '--name', 'ev', imgs.tag, 'true');
    const until = Math.floor(Date.now() / 1000) + 1;
    const ev = await dk('events', '--since', String(since), '--until', String(until), '--filter', 'container=ev', '--format', '{{.Action}}');
    const actions = ev.split('\n');
    for (const a of ['create', 'start', 'die', 'destroy']) assert.ok(actions.includes(a), `missing ${a} in ${actions}`);
  });

  test('events of an exec, as dockerd 20.10 logs them: exec_create and exec_start with its command, exec_die with its exit code, each with its execID', async () => {
    await dk('run', '-d', '--network', 'none', '--name', 'evx', imgs.tag, 'sleep', '60');
    const since = Math.floor(Date.now() / 1000) - 1;
    assert.equal((await docker(d, ['exec', 'evx', 'sh', '-c', 'exit 3'])).code, 3);
    const until = Math.floor(Date.now() / 1000) + 1;
    const ev = await dk('events', '--since', String(since), '--until', String(until), '--filter', 'container=evx', '--format', '{{.Action}}|{{.Actor.Attributes.exitCode}}|{{.Actor.Attributes.execID}}');
    const execs = ev.split('\n').filter((l) => l.startsWith('exec_')).map((l) => l.replace(/\|[0-9a-f]{64}$/, '|<execID>'));
    assert.deepEqual(execs, ['exec_create: sh -c exit 3|<no value>|<execID>', 'exec_start: sh -c exit 3|<no value>|<execID>', 'exec_die|3|<execID>'], ev);
    await dk('rm', '-f', 'evx');
  });

  test('docker-py high-level: containers.run, exec_run, put/get archive', async () => {
    const out = await pythonDocker(
      d,
      `
import io, tarfile
out = client.containers.run('${imgs.tag}', ['sh', '-c', 'echo py-run'], network_mode='none', remove=True)
c = client.containers.run('${imgs.tag}', ['sleep', '300'], network_mode='none', detach=True)
code, eo = c.exec_run(['sh', '-c', 'echo exec-py; exit 2'])
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode='w') as t:
    data = b'put-data'
    ti = tarfile.TarInfo('p.txt'); ti.size = len(data)
    t.addfile(ti, io.BytesIO(data))
c.put_archive('/tmp', buf.getvalue())
bits, stat = c.get_archive('/tmp/p.txt')
raw = b''.join(bits)
t = tarfile.open(fileobj=io.BytesIO(raw))
got = t.extractfile('p.txt').read().decode()
c.remove(force=True)
print(json.dumps({'out': out.decode(), 'code': code, 'eo': eo.decode(), 'got': got, 'stat': stat['name']}))
`,
    );
    const r = JSON.parse(out);
    assert.equal(r.out, 'py-run\n');
    assert.equal(r.code, 2);
    assert.equal(r.eo, 'exec-py\n');
    assert.equal(r.got, 'put-data');
    assert.equal(r.stat, 'p.txt');
  });

  test('dockerode: run with hijacked attach, exec', async () => {
    const dd = dockerode(d);
    const c = await dd.createContainer({ Image: imgs.tag, Cmd: ['sh', '-c', 'sleep 0.5; echo node-out'], HostConfig: { NetworkMode: 'none' }, AttachStdout: true, AttachStderr: true });
    const stream = await c.attach({ stream: true, stdout: true, stderr: true, hijack: true });
    let buf = Buffer.alloc(0);
    stream.on('data', (b: Buffer) => (buf = Buffer.concat([buf, b])));
    await c.start();
    const w = await c.wait();
    await sleep(200);
    assert.equal(w.StatusCode, 0);
    assert.equal(buf.subarray(8).toString(), 'node-out\n');
    await c.remove();
  });

  test('testcontainers GenericContainer runs a command and reads its logs', async () => {
    process.env.DOCKER_HOST = d.dockerHost;
    process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
    const { GenericContainer } = await import('testcontainers');
    const started = await new GenericContainer(imgs.tag).withCommand(['sh', '-c', 'echo tc-ready; sleep 300']).withNetworkMode('none').start();
    try {
      const logs = await started.logs();
      const text = await new Promise<string>((resolve) => {
        let acc = '';
        logs.on('data', (l: Buffer | string) => {
          acc += l.toString();
          if (acc.includes('tc-ready')) resolve(acc);
        });
        setTimeout(() => resolve(acc), 5000);
      });
      assert.match(text, /tc-ready/);
      const res = await started.exec(['echo', 'tc-exec']);
      assert.equal(res.output.trim(), 'tc-exec');
    } finally {
      await started.stop();
    }
  });

  test('the daemon survives garbage on the attach path', async () => {
    const { stdout } = await run('curl', ['-sS', '--unix-socket', d.socket, '-X', 'POST', '-o', '/dev/null', '-w', '%{http_code}', 'http://x/containers/nope/attach?stream=1']);
    assert.equal(stdout, '404');
    assert.equal((await run('curl', ['-sS', '--unix-socket', d.socket, 'http://x/_ping'])).stdout, 'OK');
  });
});
