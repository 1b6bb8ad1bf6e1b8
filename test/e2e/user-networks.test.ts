// User-defined bridge networks through real clients: create (subnet from the address pools, or
// as asked), inspect, ls, rm, prune, events; docker-py and dockerode. Every network a test makes
// is removed at the end, its bridge too, also when a test fails.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import dnsPacket from 'dns-packet';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, dockerode, pythonDocker, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { linkExists } from './harness/reap.ts';

function addressesOf(link: string): string {
  return execFileSync('ip', ['-o', '-4', 'addr', 'show', 'dev', link], { encoding: 'utf8' });
}

describe('user-defined networks', () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  const tag = Math.random().toString(36).slice(2, 7);
  /** Bridge names of networks made here, for the cleanup of last resort. */
  const bridges = new Set<string>();

  async function create(...args: string[]): Promise<{ id: string; bridge: string }> {
    const id = await dk('network', 'create', ...args);
    const bridge = await dk('network', 'inspect', '-f', '{{index .Options "com.docker.network.bridge.name"}}', id).catch(() => '');
    const name = bridge && bridge !== '<no value>' ? bridge : `br-${id.slice(0, 12)}`;
    bridges.add(name);
    return { id, bridge: name };
  }

  let imgs: TestImages;
  before(async () => {
    d = await startDaemon({ bridge: true });
    imgs = await testImages();
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(async () => {
    try {
      const ctrs = (await docker(d, ['ps', '-aq'])).stdout.trim().split('\n').filter(Boolean);
      if (ctrs.length) await docker(d, ['rm', '-f', ...ctrs]);
      const ids = (await docker(d, ['network', 'ls', '--filter', 'type=custom', '-q'])).stdout.trim().split('\n').filter(Boolean);
      if (ids.length) await docker(d, ['network', 'rm', ...ids]);
    } finally {
      await d?.cleanup();
      for (const b of bridges) if (linkExists(b)) execFileSync('ip', ['link', 'del', b], { stdio: 'ignore' });
    }
  });

  test('create from the address pools, inspect, ls, a second create of the name refused, rm', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    const { id, bridge } = await create('mynet');
    assert.match(id, /^[0-9a-f]{64}$/);
    const [driver, subnet, gateway] = (await dk('network', 'inspect', '-f', '{{.Driver}} {{(index .IPAM.Config 0).Subnet}} {{(index .IPAM.Config 0).Gateway}}', 'mynet')).split(' ');
    assert.equal(driver, 'bridge');
    assert.match(subnet!, /^\d+\.\d+\.\d+\.0\/\d+$/);
    assert.ok(linkExists(bridge), `bridge ${bridge} exists`);
    assert.match(addressesOf(bridge), new RegExp(`inet ${gateway!.replace(/\./g, '\\.')}/`));
    assert.equal(await dk('network', 'ls', '--filter', 'type=custom', '--format', '{{.Name}}'), 'mynet');
    const again = await docker(d, ['network', 'create', 'mynet']);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /network with name mynet already exists/);

    await dk('network', 'rm', 'mynet');
    assert.equal(linkExists(bridge), false, 'the bridge goes with the network');
    const gone = await docker(d, ['network', 'inspect', 'mynet']);
    assert.match(gone.stderr, /network mynet not found/);
    const until = Math.floor(Date.now() / 1000) + 1;
    const ev = await dk('events', '--since', String(since), '--until', String(until), '--filter', 'type=network', '--format', '{{.Action}} {{.Actor.Attributes.name}}');
    assert.deepEqual(ev.split('\n'), ['create mynet', 'destroy mynet']);
  });

  test('subnet, gateway, range, labels and bridge options as asked; an overlapping subnet is refused', async () => {
    const name = `ebr${tag}`;
    const { bridge } = await create(
      '--subnet', '10.77.0.0/24', '--gateway', '10.77.0.254', '--ip-range', '10.77.0.128/25', '--label', 'team=a',
      '-o', `com.docker.network.bridge.name=${name}`, '-o', 'com.docker.network.driver.mtu=1400', 'asked',
    );
    assert.equal(bridge, name);
    const view = JSON.parse(await dk('network', 'inspect', 'asked'))[0];
    assert.deepEqual(view.IPAM.Config, [{ Subnet: '10.77.0.0/24', IPRange: '10.77.0.128/25', Gateway: '10.77.0.254' }]);
    assert.deepEqual(view.Labels, { team: 'a' });
    assert.equal(view.Options['com.docker.network.driver.mtu'], '1400');
    assert.match(addressesOf(name), /inet 10\.77\.0\.254\/24/);
    assert.match(execFileSync('ip', ['-o', 'link', 'show', 'dev', name], { encoding: 'utf8' }), /mtu 1400/);
    const overlap = await docker(d, ['network', 'create', '--subnet', '10.77.0.0/16', 'overlap']);
    assert.notEqual(overlap.code, 0);
    assert.match(overlap.stderr, /Pool overlaps with other one on this address space/);
    const badGw = await docker(d, ['network', 'create', '--subnet', '10.79.0.0/24', '--gateway', '10.80.0.1', 'badgw']);
    assert.notEqual(badGw.code, 0);
    assert.match(badGw.stderr, /no matching subnet for gateway|must be within subnet/);
    await dk('network', 'rm', 'asked');
    assert.equal(linkExists(name), false);
  });

  test('prune removes unused user networks, leaves the builtin ones', async () => {
    await create('p1');
    await create('--label', 'keep=yes', 'p2');
    const out = await dk('network', 'prune', '-f', '--filter', 'label!=keep=yes');
    assert.match(out, /p1/);
    assert.equal(await dk('network', 'ls', '--filter', 'type=custom', '--format', '{{.Name}}'), 'p2');
    await dk('network', 'prune', '-f');
    assert.equal(await dk('network', 'ls', '--filter', 'type=custom', '-q'), '');
    assert.equal((await dk('network', 'ls', '-q')).split('\n').length, 3);
  });

  test('containers on a user network reach each other; another network is isolated; rm refused while attached', async () => {
    await create('--subnet', '10.81.0.0/24', 'appnet');
    await create('--subnet', '10.82.0.0/24', 'othernet');
    const serve = 'mkdir -p /www && echo hello-from-web > /www/index.html && exec httpd -f -p 80 -h /www';
    await dk('run', '-d', '--network', 'appnet', '--name', 'web', imgs.tag, 'sh', '-c', serve);
    const ip = await dk('inspect', '-f', '{{.NetworkSettings.Networks.appnet.IPAddress}}', 'web');
    assert.match(ip, /^10\.81\.0\.\d+$/);
    assert.equal(await dk('inspect', '-f', '{{.NetworkSettings.Networks.appnet.Gateway}}', 'web'), '10.81.0.1');
    const fetch = `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${ip} 80`;
    let body = '';
    for (let i = 0; i < 20 && !body.includes('hello-from-web'); i++) {
      body = (await docker(d, ['run', '--rm', '--network', 'appnet', imgs.tag, 'sh', '-c', fetch])).stdout;
    }
    assert.match(body, /hello-from-web/);
    const other = await docker(d, ['run', '--rm', '--network', 'othernet', imgs.tag, 'sh', '-c', fetch]);
    assert.doesNotMatch(other.stdout, /hello-from-web/, 'othernet cannot reach appnet');
    const inspect = JSON.parse(await dk('network', 'inspect', 'appnet'))[0];
    assert.deepEqual(Object.values(inspect.Containers).map((c) => (c as { Name: string }).Name), ['web']);
    const rm = await docker(d, ['network', 'rm', 'appnet']);
    assert.notEqual(rm.code, 0);
    assert.match(rm.stderr, /has active endpoints/);
    const missing = await docker(d, ['run', '--rm', '--network', 'nosuchnet', imgs.tag, 'true']);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /network nosuchnet not found/);
    await dk('rm', '-f', 'web');
    await dk('network', 'rm', 'appnet', 'othernet');
  });

  test('names resolve on a user network (name, alias, short id) through its embedded DNS; not on the default bridge', async () => {
    await create('--subnet', '10.83.0.0/24', 'dnsnet');
    const serve = 'mkdir -p /www && echo hello-by-name > /www/index.html && exec httpd -f -p 80 -h /www';
    const id = await dk('run', '-d', '--network', 'dnsnet', '--network-alias', 'webalias', '--stop-timeout', '1', '--name', 'named', imgs.tag, 'sh', '-c', serve);
    const ip = await dk('inspect', '-f', '{{.NetworkSettings.Networks.dnsnet.IPAddress}}', 'named');
    const client = (cmd: string) => docker(d, ['run', '--rm', '--network', 'dnsnet', imgs.tag, 'sh', '-c', cmd]);
    // As with the reference, the container asks 127.0.0.11 (redirected to the network's server).
    const resolvConf = (await client('cat /etc/resolv.conf')).stdout;
    assert.match(resolvConf, /nameserver 127\.0\.0\.11/);
    assert.match(resolvConf, /options .*ndots:0/);
    for (const name of ['named', 'webalias', id.slice(0, 12)]) {
      const r = await client(`nslookup ${name}`);
      assert.match(r.stdout, new RegExp(`Address:\\s+${ip.replace(/\./g, '\\.')}`), `${name}: ${r.stdout}${r.stderr}`);
    }
    const body = await client(`printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 webalias 80`);
    assert.match(body.stdout, /hello-by-name/);
    const missing = await client('nslookup nosuchname');
    assert.doesNotMatch(missing.stdout, /Name:\s+nosuchname/, 'an unknown name is not answered by the network');
    // The default bridge keeps the host's resolvers (no embedded DNS there).
    const legacy = await docker(d, ['run', '--rm', imgs.tag, 'cat', '/etc/resolv.conf']);
    assert.doesNotMatch(legacy.stdout, /nameserver (10\.83\.0\.1|127\.0\.0\.11)/);

    // After a daemon restart the network, its DNS and the container's name work again.
    await d.restart();
    await dk('start', 'named');
    const ip2 = await dk('inspect', '-f', '{{.NetworkSettings.Networks.dnsnet.IPAddress}}', 'named');
    let again = '';
    for (let i = 0; i < 20 && !again.includes(ip2); i++) again = (await client('nslookup named')).stdout;
    assert.match(again, new RegExp(`Address:\\s+${ip2.replace(/\./g, '\\.')}`));
    await dk('rm', '-f', 'named');
    await dk('network', 'rm', 'dnsnet');
  });

  test('docker-compose: two services on a network, one reaches the other by service name', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engine-compose-'));
    const project = `cmp${tag}`;
    try {
      writeFileSync(join(dir, 'docker-compose.yml'), [
        'version: "3.7"',
        'services:',
        '  web:',
        `    image: ${imgs.tag}`,
        '    command: ["sh", "-c", "mkdir -p /www && echo hello-compose > /www/index.html && exec httpd -f -p 80 -h /www"]',
        '    stop_grace_period: 1s',
        '    networks: [appnet]',
        '  client:',
        `    image: ${imgs.tag}`,
        `    command: ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 web 80 && exit 0; sleep 0.5; done; exit 1"]`,
        '    depends_on: [web]',
        '    networks: [appnet]',
        'networks:',
        '  appnet: {}',
        '',
      ].join('\n'));
      const compose = (...args: string[]) => {
        try {
          const out = execFileSync('docker-compose', ['-p', project, ...args], { cwd: dir, encoding: 'utf8', env: { ...process.env, DOCKER_HOST: d.dockerHost }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
          return { code: 0, out };
        } catch (err) {
          const e = err as { status?: number; stdout?: string; stderr?: string };
          return { code: e.status ?? 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
        }
      };
      const up = compose('up', '--no-color', '--exit-code-from', 'client');
      assert.equal(up.code, 0, up.out);
      assert.match(up.out, /hello-compose/);
      const net = await dk('network', 'inspect', '-f', '{{.Name}} {{index .Labels "com.docker.compose.project"}}', `${project}_appnet`);
      assert.equal(net, `${project}_appnet ${project}`);
      const down = compose('down');
      assert.equal(down.code, 0, down.out);
      const left = await docker(d, ['network', 'inspect', `${project}_appnet`]);
      assert.notEqual(left.code, 0, 'compose down removed the network');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an internal network: inspect says so; its containers reach each other by name, nothing is masqueraded', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    const { bridge } = await create('--internal', '--subnet', '10.84.0.0/24', 'inner');
    assert.equal(await dk('network', 'inspect', '-f', '{{.Internal}}', 'inner'), 'true');
    await dk('run', '-d', '--network', 'inner', '--stop-timeout', '1', '--name', 'innerweb', imgs.tag, 'sh', '-c', 'mkdir -p /www && echo inside > /www/index.html && exec httpd -f -p 80 -h /www');
    let body = '';
    for (let i = 0; i < 10 && !body.includes('inside'); i++) {
      body = (await docker(d, ['run', '--rm', '--network', 'inner', imgs.tag, 'sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 innerweb 80`])).stdout;
    }
    assert.match(body, /inside/);
    const nat = execFileSync('iptables', ['-t', 'nat', '-S', 'POSTROUTING'], { encoding: 'utf8' });
    assert.doesNotMatch(nat, /10\.84\.0\.0\/24.*MASQUERADE/);
    const filter = execFileSync('iptables', ['-S'], { encoding: 'utf8' });
    assert.match(filter, new RegExp(`! -d 10\\.84\\.0\\.0/24 -i ${bridge} -j DROP`));
    await dk('rm', '-f', 'innerweb');
    await dk('network', 'rm', 'inner');
    const ev = await dk('events', '--since', String(since), '--until', String(Math.floor(Date.now() / 1000) + 1), '--filter', 'network=inner', '--format', '{{.Action}}');
    const actions = ev.split('\n');
    for (const a of ['create', 'connect', 'disconnect', 'destroy']) assert.ok(actions.includes(a), `network event ${a} in ${actions}`);
  });

  test('connect a running container to a second network (with an alias), reach it there, disconnect it', async () => {
    await create('--subnet', '10.85.0.0/24', 'front');
    await create('--subnet', '10.86.0.0/24', 'back');
    await dk('run', '-d', '--network', 'front', '--stop-timeout', '1', '--name', 'multi', imgs.tag, 'sh', '-c', 'mkdir -p /www && echo two-nets > /www/index.html && exec httpd -f -p 80 -h /www');
    const fromBack = (target: string) => docker(d, ['run', '--rm', '--network', 'back', imgs.tag, 'sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 ${target} 80`]);
    assert.doesNotMatch((await fromBack('multi')).stdout, /two-nets/, 'not on back yet');

    await dk('network', 'connect', '--alias', 'api', 'back', 'multi');
    const nets = JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', 'multi'));
    assert.deepEqual(Object.keys(nets).sort(), ['back', 'front']);
    assert.match(nets.back.IPAddress, /^10\.86\.0\.\d+$/);
    assert.deepEqual(nets.back.Aliases, ['api']);
    assert.match(await dk('exec', 'multi', 'ip', '-o', '-4', 'addr', 'show', 'eth1'), /10\.86\.0\./);
    assert.match((await fromBack('api')).stdout, /two-nets/);
    const again = await docker(d, ['network', 'connect', 'back', 'multi']);
    assert.match(again.stderr, /already exists in network back/);
    const rm = await docker(d, ['network', 'rm', 'back']);
    assert.match(rm.stderr, /has active endpoints/);

    await dk('network', 'disconnect', 'back', 'multi');
    assert.deepEqual(Object.keys(JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', 'multi'))), ['front']);
    assert.doesNotMatch((await fromBack('api')).stdout, /two-nets/);
    const notOn = await docker(d, ['network', 'disconnect', 'back', 'multi']);
    assert.match(notOn.stderr, /is not connected to network back/);

    // Connected while stopped: plugged in at the next start.
    await dk('stop', '-t', '0', 'multi');
    await dk('network', 'connect', 'back', 'multi');
    await dk('start', 'multi');
    assert.match(await dk('inspect', '-f', '{{.NetworkSettings.Networks.back.IPAddress}}', 'multi'), /^10\.86\.0\.\d+$/);
    await dk('rm', '-f', 'multi');
    await dk('network', 'rm', 'front', 'back');
  });

  test('endpoints: run on two networks at once, plugged again into each new run, disconnect while stopped, network inspect and events', async () => {
    await create('--subnet', '10.93.0.0/24', 'ep-a');
    await create('--subnet', '10.93.1.0/24', 'ep-b');
    const since = Math.floor(Date.now() / 1000) - 1;
    await dk('run', '-d', '--network', 'ep-a', '--network', 'name=ep-b,alias=bee', '--stop-timeout', '1', '--name', 'twonet', imgs.tag, 'sleep', '300');
    const nets = JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', 'twonet'));
    assert.deepEqual(Object.keys(nets).sort(), ['ep-a', 'ep-b']);
    assert.match(nets['ep-b'].IPAddress, /^10\.93\.1\.\d+$/);
    assert.deepEqual(nets['ep-b'].Aliases, ['bee']);
    assert.equal(await dk('ps', '--filter', 'network=ep-b', '--format', '{{.Names}}'), 'twonet');
    const idB = await dk('network', 'inspect', '-f', '{{.Id}}', 'ep-b');
    assert.equal(await dk('ps', '-a', '--filter', `network=${idB.slice(0, 10)}`, '--format', '{{.Names}}'), 'twonet');
    assert.equal(await dk('ps', '-a', '--filter', 'network=no-such-net', '--format', '{{.Names}}'), '');
    const inB = JSON.parse(await dk('network', 'inspect', '-f', '{{json .Containers}}', 'ep-b'));
    assert.deepEqual(Object.values(inB).map((c) => (c as { Name: string }).Name), ['twonet']);
    // A new run is a new network namespace: the second network is there again when restart answers.
    await dk('restart', '-t', '0', 'twonet');
    assert.match(await dk('exec', 'twonet', 'ip', '-o', '-4', 'addr', 'show', 'eth1'), /10\.93\.1\./);
    const byAlias = await docker(d, ['run', '--rm', '--network', 'ep-b', imgs.tag, 'nslookup', 'bee', '10.93.1.1']);
    assert.match(byAlias.stdout, new RegExp(`Address:\\s+${nets['ep-b'].IPAddress.replace(/\./g, '\\.')}`), byAlias.stdout + byAlias.stderr);
    // Disconnected while stopped: not plugged in at the next start.
    await dk('stop', '-t', '0', 'twonet');
    await dk('network', 'disconnect', 'ep-b', 'twonet');
    await dk('start', 'twonet');
    assert.deepEqual(Object.keys(JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', 'twonet'))), ['ep-a']);
    const eth1 = await docker(d, ['exec', 'twonet', 'ip', '-o', 'link', 'show', 'eth1']);
    assert.notEqual(eth1.code, 0, 'no eth1 any more');
    const until = Math.floor(Date.now() / 1000) + 1;
    const id = await dk('inspect', '-f', '{{.Id}}', 'twonet');
    const ev = await dk('events', '--since', String(since), '--until', String(until), '--filter', 'type=network', '--filter', 'network=ep-b', '--format', '{{.Action}} {{.Actor.Attributes.container}}');
    // Its run, its restart (the old run's interface goes, the new run's comes), its stop.
    const actions = ev.split('\n').filter((l) => l.endsWith(id)).map((l) => l.split(' ')[0]);
    assert.deepEqual(actions, ['connect', 'disconnect', 'connect', 'disconnect'], ev);
    await dk('rm', '-f', 'twonet');
    await dk('network', 'rm', 'ep-a', 'ep-b');
  });

  test('a running container leaves its NetworkMode network and comes back; the default bridge too', async () => {
    await create('--subnet', '10.91.0.0/24', 'home');
    await create('--subnet', '10.91.1.0/24', 'away');
    await dk('run', '-d', '--network', 'home', '-p', '127.0.0.1::80', '--stop-timeout', '1', '--name', 'mover', imgs.tag, 'sh', '-c', 'mkdir -p /www && echo mover > /www/index.html && exec httpd -f -p 80 -h /www');
    const from = (net: string) => docker(d, ['run', '--rm', '--network', net, imgs.tag, 'sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 mover 80`]);
    assert.match((await from('home')).stdout, /mover/);
    assert.match(await dk('port', 'mover', '80'), /^127\.0\.0\.1:\d+$/);
    await dk('network', 'connect', 'away', 'mover');
    await dk('network', 'disconnect', 'home', 'mover');
    // Its published ports were on the network it left: released.
    assert.equal(await dk('port', 'mover'), '');
    assert.deepEqual(Object.keys(JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', 'mover'))), ['away']);
    assert.equal(await dk('inspect', '-f', '{{.HostConfig.NetworkMode}}', 'mover'), 'home', 'NetworkMode stays as created');
    assert.notEqual((await docker(d, ['exec', 'mover', 'ip', 'link', 'show', 'eth0'])).code, 0, 'eth0 is gone');
    assert.deepEqual(JSON.parse(await dk('network', 'inspect', '-f', '{{json .Containers}}', 'home')), {});
    assert.doesNotMatch((await from('home')).stdout, /mover/);
    assert.match((await from('away')).stdout, /mover/);
    const again = await docker(d, ['network', 'disconnect', 'home', 'mover']);
    assert.match(again.stderr, /is not connected to network home/);

    await dk('network', 'connect', 'home', 'mover');
    assert.deepEqual(Object.keys(JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', 'mover'))).sort(), ['away', 'home']);
    assert.match((await from('home')).stdout, /mover/);
    // A new run: its NetworkMode network is eth0 again, with the default route.
    await dk('restart', '-t', '0', 'mover');
    assert.match(await dk('exec', 'mover', 'ip', 'route'), /default via 10\.91\.0\.1 dev eth0/);
    assert.match((await from('home')).stdout, /mover/);
    // Disconnected while stopped: not on it at the next start.
    await dk('stop', '-t', '0', 'mover');
    await dk('network', 'disconnect', 'home', 'mover');
    await dk('start', 'mover');
    assert.deepEqual(Object.keys(JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', 'mover'))), ['away']);
    assert.match((await from('away')).stdout, /mover/);

    // The default bridge: left and joined again by a running container.
    await dk('run', '-d', '--stop-timeout', '1', '--name', 'onbridge', imgs.tag, 'sleep', '300');
    await dk('network', 'disconnect', 'bridge', 'onbridge');
    assert.deepEqual(JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', 'onbridge')), {});
    assert.equal(await dk('inspect', '-f', '{{.NetworkSettings.IPAddress}}', 'onbridge'), '');
    await dk('network', 'connect', 'bridge', 'onbridge');
    assert.match(await dk('inspect', '-f', '{{.NetworkSettings.Networks.bridge.IPAddress}}', 'onbridge'), /^\d+\.\d+\.\d+\.\d+$/);
    await dk('rm', '-f', 'mover', 'onbridge');
    await dk('network', 'rm', 'home', 'away');
  });

  test("names the network does not know go to the asking container's own --dns (a resolver on the host's loopback here)", async () => {
    await create('--subnet', '10.92.0.0/24', 'asks');
    const upstream = dgram.createSocket('udp4');
    const asked: string[] = [];
    upstream.on('message', (m, r) => {
      const q = dnsPacket.decode(m);
      const name = q.questions?.[0]?.name ?? '';
      asked.push(name);
      const answers = q.questions?.[0]?.type === 'A' ? [{ type: 'A' as const, name, ttl: 60, data: '10.123.45.67' }] : [];
      upstream.send(dnsPacket.encode({ type: 'response', id: q.id, flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE, questions: q.questions, answers }), r.port, r.address);
    });
    await new Promise<void>((resolve, reject) => upstream.once('error', reject).bind(53, '127.0.0.77', () => resolve()));
    try {
      await dk('run', '-d', '--network', 'asks', '--stop-timeout', '1', '--name', 'peer', imgs.tag, 'sleep', '300');
      const out = await dk('run', '--rm', '--network', 'asks', '--dns', '127.0.0.77', imgs.tag, 'sh', '-c', 'nslookup outside.example 2>&1; nslookup peer 2>&1');
      assert.match(out, /10\.123\.45\.67/, out);
      assert.match(out, /Address:\s+10\.92\.0\.\d+/, 'container names still answered by the embedded DNS');
      assert.ok(asked.some((n) => n.startsWith('outside.example')), JSON.stringify(asked));
      const plain = await docker(d, ['run', '--rm', '--network', 'asks', imgs.tag, 'nslookup', 'outside.example']);
      assert.doesNotMatch(plain.stdout, /10\.123\.45\.67/, 'a container without --dns asks the daemon\'s upstreams');
    } finally {
      upstream.close();
      await docker(d, ['rm', '-f', 'peer']);
      await docker(d, ['network', 'rm', 'asks']);
    }
  });

  test('static addresses: --ip at run and connect --ip; taken or on the default bridge refused', async () => {
    await create('--subnet', '10.87.0.0/24', '--ip-range', '10.87.0.128/25', 'fixed');
    await create('--subnet', '10.88.0.0/24', 'fixed2');
    await dk('run', '-d', '--network', 'fixed', '--ip', '10.87.0.50', '--stop-timeout', '1', '--name', 'pinned', imgs.tag, 'sleep', '300');
    assert.equal(await dk('inspect', '-f', '{{.NetworkSettings.Networks.fixed.IPAddress}}', 'pinned'), '10.87.0.50');
    const taken = await docker(d, ['run', '--rm', '--network', 'fixed', '--ip', '10.87.0.50', imgs.tag, 'true']);
    assert.notEqual(taken.code, 0, JSON.stringify(taken));
    assert.match(taken.stderr, /Address already in use/);
    const legacy = await docker(d, ['run', '--rm', '--ip', '10.87.0.51', imgs.tag, 'true']);
    assert.notEqual(legacy.code, 0);
    assert.match(legacy.stderr, /user specified IP address is supported on user defined networks only/);
    await dk('network', 'connect', '--ip', '10.88.0.77', 'fixed2', 'pinned');
    assert.equal(await dk('inspect', '-f', '{{.NetworkSettings.Networks.fixed2.IPAddress}}', 'pinned'), '10.88.0.77');
    await dk('run', '-d', '--network', 'fixed', '--stop-timeout', '1', '--name', 'pinned2', imgs.tag, 'sleep', '300');
    const clash = await docker(d, ['network', 'connect', '--ip', '10.88.0.77', 'fixed2', 'pinned2']);
    assert.notEqual(clash.code, 0);
    assert.match(clash.stderr, /Address already in use/);
    await dk('rm', '-f', 'pinned2');
    await dk('rm', '-f', 'pinned');
    await dk('network', 'rm', 'fixed', 'fixed2');
  });

  test('networks named by id or id prefix are shown by name; connect --link is an alias the linking container resolves', async () => {
    const idA = (await create('--subnet', '10.89.0.0/24', 'byid-a')).id;
    const idB = (await create('--subnet', '10.89.1.0/24', 'byid-b')).id;
    await dk('run', '-d', '--network', idA, '--stop-timeout', '1', '--name', 'keyed', imgs.tag, 'sleep', '300');
    await dk('network', 'connect', idB.slice(0, 12), 'keyed');
    const nets = JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', 'keyed'));
    assert.deepEqual(Object.keys(nets).sort(), ['byid-a', 'byid-b']);
    assert.match(nets['byid-b'].IPAddress, /^10\.89\.1\.\d+$/);
    assert.deepEqual((await dk('ps', '--filter', 'name=keyed', '--format', '{{.Networks}}')).split(',').sort(), ['byid-a', 'byid-b']);
    // Stopped, it keeps the names.
    await dk('stop', '-t', '0', 'keyed');
    assert.deepEqual(Object.keys(JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', 'keyed'))).sort(), ['byid-a', 'byid-b']);
    await dk('start', 'keyed');

    await dk('run', '-d', '--network', 'byid-a', '--stop-timeout', '1', '--name', 'linker', imgs.tag, 'sleep', '300');
    await dk('network', 'connect', '--link', 'keyed:db', 'byid-b', 'linker');
    const keyedIp = await dk('inspect', '-f', '{{(index .NetworkSettings.Networks "byid-b").IPAddress}}', 'keyed');
    // Asked on byid-b's server (the linking container's own is byid-a's).
    const look = await docker(d, ['exec', 'linker', 'nslookup', 'db', '10.89.1.1']);
    assert.match(look.stdout, new RegExp(`Address:\\s+${keyedIp.replace(/\./g, '\\.')}`), look.stdout + look.stderr);
    const other = await docker(d, ['run', '--rm', '--network', 'byid-b', imgs.tag, 'nslookup', 'db', '10.89.1.1']);
    assert.doesNotMatch(other.stdout, new RegExp(`Address:\\s+${keyedIp.replace(/\./g, '\\.')}`), 'the link alias is the linking container\'s alone');
    await dk('rm', '-f', 'keyed', 'linker');
    await dk('network', 'rm', 'byid-a', 'byid-b');
  });

  test('docker-py connects and disconnects a running container with an alias', async () => {
    await create('--subnet', '10.89.0.0/24', 'pyconn');
    await dk('run', '-d', '--stop-timeout', '1', '--name', 'pyc', imgs.tag, 'sleep', '300');
    const out = await pythonDocker(d, `
      net = client.networks.get('pyconn')
      c = client.containers.get('pyc')
      net.connect(c, aliases=['pyalias'])
      c.reload()
      on = c.attrs['NetworkSettings']['Networks']
      net.reload()
      members = [x.name for x in net.containers]
      net.disconnect(c)
      c.reload()
      print(json.dumps({'nets': sorted(on.keys()), 'aliases': on['pyconn']['Aliases'], 'ip': on['pyconn']['IPAddress'], 'members': members, 'after': sorted(c.attrs['NetworkSettings']['Networks'].keys())}))
    `);
    const r = JSON.parse(out.trim().split('\n').pop()!);
    assert.deepEqual(r.nets, ['bridge', 'pyconn']);
    assert.deepEqual(r.aliases, ['pyalias']);
    assert.match(r.ip, /^10\.89\.0\./);
    assert.deepEqual(r.members, ['pyc']);
    assert.deepEqual(r.after, ['bridge']);
    await dk('rm', '-f', 'pyc');
    await dk('network', 'rm', 'pyconn');
  });

  test('docker-py and dockerode create, inspect and remove networks', async () => {
    const out = await pythonDocker(d, `
      from docker.types import IPAMConfig, IPAMPool
      n = client.networks.create('pynet', ipam=IPAMConfig(pool_configs=[IPAMPool(subnet='10.78.0.0/24')]), labels={'by': 'py'})
      n.reload()
      print(json.dumps({'subnet': n.attrs['IPAM']['Config'][0]['Subnet'], 'labels': n.attrs['Labels'], 'id': n.id}))
      n.remove()
    `);
    const py = JSON.parse(out.trim().split('\n').pop()!);
    bridges.add(`br-${py.id.slice(0, 12)}`);
    assert.equal(py.subnet, '10.78.0.0/24');
    assert.deepEqual(py.labels, { by: 'py' });

    const dd = dockerode(d);
    const created = await dd.createNetwork({ Name: 'nodenet', Driver: 'bridge' });
    bridges.add(`br-${created.id.slice(0, 12)}`);
    const info = await dd.getNetwork('nodenet').inspect();
    assert.equal(info.Name, 'nodenet');
    await dd.getNetwork(created.id).remove();
    await assert.rejects(dd.getNetwork('nodenet').inspect(), (err: { statusCode?: number }) => err.statusCode === 404);
  });
});

describe('user-defined network drift; the daemon\'s DNS options', () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  const name = `edr${Math.random().toString(36).slice(2, 7)}`;
  before(async () => {
    // The network reconciler looks for drift every 30 s; this daemon every 300 ms.
    d = await startDaemon({
      bridge: true,
      env: { ENGINE_NETWORK_RECHECK_MS: '300' },
      args: ['--dns', '10.255.0.9', '--dns-search', 'corp.example', '--dns-opt', 'ndots:3'],
    });
  });
  after(async () => {
    try {
      await docker(d, ['network', 'rm', 'drifty']);
    } finally {
      await d?.cleanup();
      if (linkExists(name)) execFileSync('ip', ['link', 'del', name], { stdio: 'ignore' });
    }
  });

  test('a user network bridge deleted by hand comes back with its address and its containers plugged in', async () => {
    const imgs = await testImages();
    await dk('load', '-i', imgs.dockerArchive);
    await dk('network', 'create', '--subnet', '10.90.0.0/24', '-o', `com.docker.network.bridge.name=${name}`, 'drifty');
    assert.ok(linkExists(name));
    await dk('run', '-d', '--network', 'drifty', '--stop-timeout', '1', '--name', 'drifter', imgs.tag, 'sh', '-c', 'mkdir -p /www && echo still-here > /www/index.html && exec httpd -f -p 80 -h /www');
    execFileSync('ip', ['link', 'del', name]);
    let back = false;
    for (let i = 0; i < 100 && !back; i++) {
      back = linkExists(name) && addressesOf(name).includes('10.90.0.1/24');
      if (!back) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(back, 'the bridge was put back');
    // Its container's interface is a port of the new bridge again: reachable from a new container.
    let reply = '';
    for (let i = 0; i < 20 && !/still-here/.test(reply); i++) {
      reply = (await docker(d, ['run', '--rm', '--network', 'drifty', imgs.tag, 'sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 drifter 80`])).stdout;
    }
    assert.match(reply, /still-here/);
    await dk('rm', '-f', 'drifter');
    await dk('network', 'rm', 'drifty');
    assert.equal(linkExists(name), false);
  });

  test("the daemon's --dns, --dns-search and --dns-opt reach a container that sets none; its own --dns wins", async () => {
    const imgs = await testImages();
    await dk('load', '-i', imgs.dockerArchive);
    assert.equal(await dk('run', '--rm', imgs.tag, 'cat', '/etc/resolv.conf'), 'search corp.example\nnameserver 10.255.0.9\noptions ndots:3');
    assert.match(await dk('run', '--rm', '--dns', '10.255.0.8', imgs.tag, 'cat', '/etc/resolv.conf'), /nameserver 10\.255\.0\.8\n/);
  });
});
