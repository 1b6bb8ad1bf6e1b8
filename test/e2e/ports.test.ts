// Published ports through real clients: an HTTP server (busybox httpd) in a container reached
// from the host through an ephemeral and a fixed port (loopback through the userland proxy, the
// bridge's address through the DNAT), `-P` with an exposed port, another container reaching a
// published port through the gateway, a taken host port refused and free again after the stop,
// UDP, `docker port`/ps/inspect, docker-py and dockerode, and a daemon with --userland-proxy=false.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSocket } from 'node:dgram';
import { connect, createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, dockerode, pythonDocker, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';

const HTTPD = 'mkdir -p /www && echo hello-$(hostname) > /www/index.html && exec httpd -f -p 80 -h /www';

/** An HTTP/1.0 GET over a plain socket; resolves to the whole answer, '' when the connection fails. */
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

/** Retries while the server in the container starts. */
async function httpEventually(host: string, port: number, want: RegExp): Promise<string> {
  let last = '';
  for (let i = 0; i < 30; i++) {
    last = await httpGet(host, port);
    if (want.test(last)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.fail(`no answer matching ${want} from ${host}:${port}; last: ${JSON.stringify(last)}`);
}

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

describe('published ports', () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  let imgs: TestImages;
  let img: string;
  let gateway: string;

  before(async () => {
    d = await startDaemon({ bridge: true });
    imgs = await testImages();
    await dk('load', '-i', imgs.dockerArchive);
    img = imgs.tag;
    gateway = d.bip.split('/')[0]!;
  });
  after(async () => {
    try {
      const ctrs = (await docker(d, ['ps', '-aq'])).stdout.trim().split('\n').filter(Boolean);
      if (ctrs.length) await docker(d, ['rm', '-f', ...ctrs]);
    } finally {
      await d?.cleanup();
    }
  });

  test('an ephemeral port on 127.0.0.1 and a fixed one: reached from the host, shown by docker port, ps and inspect', async () => {
    const fixed = await freePort();
    await dk('run', '-d', '--name', 'web', '--hostname', 'web', '-p', '127.0.0.1::80', '-p', `${fixed}:80`, '--stop-timeout', '1', img, 'sh', '-c', HTTPD);
    const ports = (await dk('port', 'web')).split('\n').sort();
    const eph = ports.find((l) => l.includes('127.0.0.1:'))!;
    assert.match(eph, /^80\/tcp -> 127\.0\.0\.1:\d+$/);
    assert.ok(ports.includes(`80/tcp -> 0.0.0.0:${fixed}`), ports.join('; '));
    const ephPort = Number(eph.split(':').pop());
    // Loopback goes through the userland proxy; the bridge's address through the DNAT rule.
    await httpEventually('127.0.0.1', ephPort, /hello-web/);
    await httpEventually('127.0.0.1', fixed, /hello-web/);
    await httpEventually(gateway, fixed, /hello-web/);
    assert.deepEqual((await dk('port', 'web', '80/tcp')).split('\n').sort(), [`0.0.0.0:${fixed}`, `127.0.0.1:${ephPort}`].sort());
    const psPorts = await dk('ps', '--filter', 'name=web', '--format', '{{.Ports}}');
    assert.match(psPorts, new RegExp(`0\\.0\\.0\\.0:${fixed}->80/tcp`));
    assert.match(psPorts, new RegExp(`127\\.0\\.0\\.1:${ephPort}->80/tcp`));
    const insp = JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Ports}}', 'web'));
    assert.equal(insp['80/tcp'].length, 2);
    // Another container reaches the published port through the gateway.
    const viaGw = await dk('run', '--rm', img, 'sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${gateway} ${fixed}`);
    assert.match(viaGw, /hello-web/);
    await dk('stop', 'web');
    assert.equal(await httpGet('127.0.0.1', fixed, 1000), '', 'nothing answers once the container stopped');
    assert.equal(JSON.stringify(JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Ports}}', 'web'))), '{}');
    await dk('rm', 'web');
  });

  test('a host port held by another container is refused at start; free again after that one stops', async () => {
    const port = await freePort();
    await dk('run', '-d', '--name', 'holder', '-p', `${port}:80`, '--stop-timeout', '1', img, 'sh', '-c', HTTPD);
    await dk('create', '--name', 'wanter', '-p', `${port}:80`, '--stop-timeout', '1', img, 'sh', '-c', HTTPD);
    const r = await docker(d, ['start', 'wanter']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, new RegExp(`driver failed programming external connectivity on endpoint wanter \\([0-9a-f]+\\): Bind for 0\\.0\\.0\\.0:${port} failed: port is already allocated`));
    await dk('stop', 'holder');
    await dk('start', 'wanter');
    await httpEventually('127.0.0.1', port, /hello-/);
    await dk('rm', '-f', 'holder', 'wanter');
  });

  test('a port a host process holds: the userland proxy cannot bind it and the start fails with the reason', async () => {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '0.0.0.0', () => r()));
    const port = (srv.address() as { port: number }).port;
    try {
      const r = await docker(d, ['run', '-d', '--name', 'clash', '-p', `${port}:80`, img, 'sleep', '5']);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /address already in use/);
    } finally {
      srv.close();
      await docker(d, ['rm', '-f', 'clash']);
    }
  });

  test('-P publishes the exposed ports on ephemeral host ports; a UDP port is proxied and DNATed', async () => {
    await dk('run', '-d', '--name', 'pall', '--expose', '80', '-P', '--stop-timeout', '1', img, 'sh', '-c', HTTPD);
    const line = await dk('port', 'pall', '80/tcp');
    const port = Number(line.split('\n')[0]!.split(':').pop());
    assert.ok(port > 1024, line);
    await httpEventually('127.0.0.1', port, /hello-/);
    await dk('rm', '-f', 'pall');

    // UDP: busybox has no UDP server to answer, so the host side is what is checked: the proxy holds
    // the host port and the DNAT rule is there (the proxy's forwarding has its own unit test).
    await dk('run', '-d', '--name', 'udp', '-p', '127.0.0.1::9999/udp', img, 'sleep', '30');
    const up = Number((await dk('port', 'udp', '9999/udp')).split(':').pop());
    const sock = createSocket('udp4');
    const bindErr = await new Promise<string>((resolve) => {
      sock.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? String(err)));
      sock.bind(up, '127.0.0.1', () => resolve('bound'));
    });
    sock.close();
    assert.equal(bindErr, 'EADDRINUSE');
    const nat = execFileSync('iptables', ['-t', 'nat', '-S'], { encoding: 'utf8' });
    assert.match(nat, new RegExp(`-d 127\\.0\\.0\\.1/32 ! -i ${d.bridge} -p udp -m udp --dport ${up} -j DNAT --to-destination [0-9.]+:9999`));
    await dk('rm', '-f', 'udp');
    assert.doesNotMatch(execFileSync('iptables', ['-t', 'nat', '-S'], { encoding: 'utf8' }), new RegExp(`--dport ${up} -j DNAT`));
  });

  test('docker-py and dockerode publish ports', async () => {
    const port = await freePort();
    const out = await pythonDocker(d, `
      c = client.containers.run('${img}', ['sh', '-c', '${HTTPD}'], detach=True, name='pyweb', ports={'80/tcp': ('127.0.0.1', ${port})}, stop_signal='KILL')
      c.reload()
      print(c.ports['80/tcp'][0]['HostIp'], c.ports['80/tcp'][0]['HostPort'])
    `);
    assert.equal(out.trim(), `127.0.0.1 ${port}`);
    await httpEventually('127.0.0.1', port, /hello-/);
    await dk('rm', '-f', 'pyweb');
    const api = dockerode(d);
    const c = await api.createContainer({ Image: img, Cmd: ['sh', '-c', HTTPD], ExposedPorts: { '80/tcp': {} }, HostConfig: { PortBindings: { '80/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } } });
    await c.start();
    const info = await c.inspect();
    const hp = Number(info.NetworkSettings.Ports['80/tcp']![0]!.HostPort);
    await httpEventually('127.0.0.1', hp, /hello-/);
    await c.remove({ force: true });
  });

  test('a daemon killed with ports published: at the next start the rules are gone and the port is free again', async () => {
    const port = await freePort();
    await dk('run', '-d', '--name', 'crashy', '-p', `${port}:80`, img, 'sh', '-c', HTTPD);
    await httpEventually('127.0.0.1', port, /hello-/);
    await d.stop({ signal: 'SIGKILL' });
    await d.restart();
    assert.doesNotMatch(execFileSync('iptables', ['-t', 'nat', '-S'], { encoding: 'utf8' }), new RegExp(`--dport ${port} -j DNAT`));
    await dk('rm', '-f', 'crashy');
    await dk('run', '-d', '--name', 'again', '-p', `${port}:80`, '--stop-timeout', '1', img, 'sh', '-c', HTTPD);
    await httpEventually('127.0.0.1', port, /hello-/);
    await dk('rm', '-f', 'again');
  });

  test('docker-compose: a service with a published port answers from the host', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engine-compose-ports-'));
    const project = `prt${Math.random().toString(36).slice(2, 7)}`;
    const port = await freePort();
    const compose = (...args: string[]) => {
      try {
        return { code: 0, out: execFileSync('docker-compose', ['-p', project, ...args], { cwd: dir, encoding: 'utf8', env: { ...process.env, DOCKER_HOST: d.dockerHost }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 }) };
      } catch (err) {
        const e = err as { status?: number; stdout?: string; stderr?: string };
        return { code: e.status ?? 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
      }
    };
    try {
      writeFileSync(join(dir, 'docker-compose.yml'), [
        'version: "3.7"',
        'services:',
        '  web:',
        `    image: ${img}`,
        `    command: ["sh", "-c", "${HTTPD.replaceAll('$', () => '$$')}"]`,
        '    stop_grace_period: 1s',
        `    ports: ["127.0.0.1:${port}:80"]`,
        '',
      ].join('\n'));
      const up = compose('up', '-d');
      assert.equal(up.code, 0, up.out);
      await httpEventually('127.0.0.1', port, /hello-/);
      assert.match(compose('port', 'web', '80').out, new RegExp(`127\\.0\\.0\\.1:${port}`));
    } finally {
      const down = compose('down');
      rmSync(dir, { recursive: true, force: true });
      assert.equal(down.code, 0, down.out);
    }
  });

  test('bad port specifications answer 400 and create nothing', async () => {
    const r = await docker(d, ['create', '--name', 'badport', '-p', '99999:80', img, 'true']);
    assert.notEqual(r.code, 0);
    assert.equal((await docker(d, ['inspect', 'badport'])).code, 1);
  });
});

describe('published ports without the userland proxy', () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);

  before(async () => {
    d = await startDaemon({ bridge: true, args: ['--userland-proxy=false'] });
    const imgs = await testImages();
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

  test('loopback and the bridge address still reach the container (DNAT, route_localnet)', async () => {
    const port = await freePort();
    const imgs = await testImages();
    await dk('run', '-d', '--name', 'np', '-p', `${port}:80`, '--stop-timeout', '1', imgs.tag, 'sh', '-c', HTTPD);
    await httpEventually('127.0.0.1', port, /hello-/);
    await httpEventually(d.bip.split('/')[0]!, port, /hello-/);
    await dk('rm', '-f', 'np');
    assert.equal(await httpGet('127.0.0.1', port, 1000), '');
  });
});
