// The network API as clients use it: `docker network ls/inspect/rm/create/prune`, dockerode,
// docker-py and testcontainers (which inspects the `bridge` network to find the docker host when
// it runs inside a container) — against a daemon with its own default bridge, and one without.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker, dockerOk, dockerode, pythonDocker, testImages } from './harness/clients.ts';

function subnetOf(bip: string): { subnet: string; gateway: string } {
  const [addr, len] = bip.split('/');
  const o = addr.split('.').map(Number);
  const bits = Number(len);
  const n = ((o[0] << 24) | (o[1] << 16) | (o[2] << 8) | o[3]) >>> 0;
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  const net = (n & mask) >>> 0;
  return { subnet: `${[net >>> 24, (net >>> 16) & 255, (net >>> 8) & 255, net & 255].join('.')}/${bits}`, gateway: addr };
}

describe('networks on a daemon with its default bridge', () => {
  let d: DaemonHandle;
  let imgs: Awaited<ReturnType<typeof testImages>>;
  const dk = dockerOk(() => d);
  before(async () => {
    d = await startDaemon({ bridge: true });
    imgs = await testImages();
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(async () => {
    await d?.cleanup();
  });

  test('docker network ls shows bridge, host and none', async () => {
    const out = await dk('network', 'ls', '--format', '{{.Name}} {{.Driver}} {{.Scope}}');
    assert.deepEqual(out.split('\n').sort(), ['bridge bridge local', 'host host local', 'none null local']);
    assert.equal(await dk('network', 'ls', '--filter', 'name=bridge', '--format', '{{.Name}}'), 'bridge');
    assert.equal(await dk('network', 'ls', '--filter', 'type=custom', '-q'), '');
    assert.equal((await dk('network', 'ls', '--filter', 'type=builtin', '-q')).split('\n').length, 3);
    assert.equal(await dk('network', 'ls', '--filter', 'driver=null', '--format', '{{.Name}}'), 'none');
  });

  test('docker network inspect bridge: the daemon --bip and a running container', async () => {
    const id = await dk('run', '-d', '--name', 'netweb', imgs.tag, 'sleep', '300');
    try {
      const ip = await dk('inspect', '-f', '{{.NetworkSettings.IPAddress}}', id);
      assert.match(ip, /^\d+\.\d+\.\d+\.\d+$/);
      const [n] = JSON.parse(await dk('network', 'inspect', 'bridge'));
      const { subnet, gateway } = subnetOf(d.bip);
      assert.equal(n.Name, 'bridge');
      assert.equal(n.Driver, 'bridge');
      assert.equal(n.Scope, 'local');
      assert.deepEqual(n.IPAM.Config, [{ Subnet: subnet, Gateway: gateway }]);
      assert.equal(n.Options['com.docker.network.bridge.name'], d.bridge);
      assert.equal(n.Options['com.docker.network.bridge.default_bridge'], 'true');
      const c = n.Containers[id];
      assert.ok(c, `container ${id} in ${JSON.stringify(n.Containers)}`);
      assert.equal(c.Name, 'netweb');
      assert.equal(c.IPv4Address, `${ip}/${subnet.split('/')[1]}`);
      assert.equal(c.EndpointID, await dk('inspect', '-f', '{{.NetworkSettings.EndpointID}}', id));
      assert.equal(c.MacAddress, await dk('inspect', '-f', '{{.NetworkSettings.MacAddress}}', id));
      assert.equal(await dk('inspect', '-f', '{{.NetworkSettings.Networks.bridge.NetworkID}}', id), n.Id);

      // By id and id prefix too; the same document.
      const [byId] = JSON.parse(await dk('network', 'inspect', n.Id));
      assert.equal(byId.Id, n.Id);
      assert.equal(await dk('network', 'inspect', '-f', '{{.Name}}', n.Id.slice(0, 12)), 'bridge');

      const host = JSON.parse(await dk('network', 'inspect', 'host', 'none'));
      assert.deepEqual(host.map((x: { Driver: string }) => x.Driver), ['host', 'null']);
      assert.deepEqual(host[1].Containers, {});
    } finally {
      await dk('rm', '-f', 'netweb');
    }
    const [after] = JSON.parse(await dk('network', 'inspect', 'bridge'));
    assert.deepEqual(after.Containers, {});
  });

  test('a run on a bridge joins a namespace made for it before its task, plumbed there; a restart makes a new one; stop and rm leave none', async () => {
    const id = await dk('run', '-d', imgs.tag, 'sleep', '300');
    const nsFile = join(d.execRoot, 'netns', id);
    const mounted = () => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === nsFile);
    try {
      assert.ok(existsSync(nsFile) && mounted(), `${nsFile} mounted while it runs`);
      const pid = await dk('inspect', '-f', '{{.State.Pid}}', id);
      assert.equal(statSync(nsFile).ino, statSync(`/proc/${pid}/ns/net`).ino, 'the process runs in that namespace');
      const ip = await dk('inspect', '-f', '{{.NetworkSettings.IPAddress}}', id);
      assert.match(execFileSync('nsenter', [`--net=${nsFile}`, 'ip', '-4', 'addr', 'show', 'eth0'], { encoding: 'utf8' }), new RegExp(`inet ${ip.replace(/\./g, '\\.')}/`));
      // A mark in this run's namespace (namespace inode numbers are reused, so they cannot tell).
      execFileSync('nsenter', [`--net=${nsFile}`, 'ip', 'addr', 'add', '127.0.0.77/32', 'dev', 'lo']);
      await dk('restart', '-t', '0', id);
      const pid2 = await dk('inspect', '-f', '{{.State.Pid}}', id);
      assert.equal(statSync(nsFile).ino, statSync(`/proc/${pid2}/ns/net`).ino);
      const addrs = execFileSync('nsenter', [`--net=${nsFile}`, 'ip', '-o', 'addr', 'show'], { encoding: 'utf8' });
      assert.ok(!addrs.includes('127.0.0.77') && addrs.includes('eth0'), `a new namespace for the new run:\n${addrs}`);
      await dk('stop', '-t', '0', id);
      assert.ok(!existsSync(nsFile) && !mounted(), 'gone once the run ended');
      // A run without a network of its own has none made.
      const none = await dk('run', '-d', '--network', 'none', imgs.tag, 'sleep', '300');
      assert.ok(!existsSync(join(d.execRoot, 'netns', none)));
      await dk('rm', '-f', none);
    } finally {
      await dk('rm', '-f', id);
    }
    assert.ok(!existsSync(nsFile) && !mounted());
  });

  test('unknown networks, rm of builtin networks, create of a builtin name, prune', async () => {
    const missing = await docker(d, ['network', 'inspect', 'nosuchnet']);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /network nosuchnet not found/);

    for (const name of ['bridge', 'host', 'none']) {
      const rm = await docker(d, ['network', 'rm', name]);
      assert.notEqual(rm.code, 0);
      assert.match(rm.stderr, new RegExp(`${name} is a pre-defined network and cannot be removed`));
    }
    const create = await docker(d, ['network', 'create', 'bridge']);
    assert.notEqual(create.code, 0);
    assert.match(create.stderr, /operation is not permitted on predefined bridge network/);

    const prune = await docker(d, ['network', 'prune', '-f']);
    assert.equal(prune.code, 0, prune.stderr);
    assert.equal((await dk('network', 'ls', '-q')).split('\n').length, 3);
  });

  test('--add-host name:host-gateway is the default bridge address', async () => {
    const hosts = await dk('run', '--rm', '--add-host', 'hg:host-gateway', imgs.tag, 'cat', '/etc/hosts');
    assert.match(hosts, new RegExp(`${subnetOf(d.bip).gateway.replace(/\./g, '\\.')}\\thg`));
  });

  test('dockerode and docker-py read the networks', async () => {
    const dd = dockerode(d);
    const list = await dd.listNetworks();
    assert.deepEqual(list.map((n) => n.Name).sort(), ['bridge', 'host', 'none']);
    const bridge = await dd.getNetwork('bridge').inspect();
    assert.equal(bridge.IPAM?.Config?.[0]?.Gateway, subnetOf(d.bip).gateway);
    await assert.rejects(dd.getNetwork('nope').inspect(), (err: { statusCode?: number }) => err.statusCode === 404);

    const out = await pythonDocker(d, `
      names = sorted(n.name for n in client.networks.list())
      br = client.networks.get('bridge')
      print(json.dumps({'names': names, 'subnet': br.attrs['IPAM']['Config'][0]['Subnet'], 'builtin': len(api.networks(filters={'type': 'builtin'}))}))
      try:
          client.networks.get('nope')
          print('found?')
      except docker.errors.NotFound as e:
          print('notfound', e.explanation)
    `);
    const [first, second] = out.trim().split('\n');
    assert.deepEqual(JSON.parse(first), { names: ['bridge', 'host', 'none'], subnet: subnetOf(d.bip).subnet, builtin: 3 });
    assert.equal(second, 'notfound network nope not found');
  });
});

describe('networks on a daemon without a default bridge (--bridge none)', () => {
  let d: DaemonHandle;
  before(async () => {
    d = await startDaemon();
  });
  after(async () => {
    await d?.cleanup();
  });

  test('only host and none exist; bridge is not found', async () => {
    const ls = await docker(d, ['network', 'ls', '--format', '{{.Name}}']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.deepEqual(ls.stdout.trim().split('\n').sort(), ['host', 'none']);
    const inspect = await docker(d, ['network', 'inspect', 'bridge']);
    assert.notEqual(inspect.code, 0);
    assert.match(inspect.stderr, /network bridge not found/);
    const rm = await docker(d, ['network', 'rm', 'host']);
    assert.notEqual(rm.code, 0);
    assert.match(rm.stderr, /host is a pre-defined network and cannot be removed/);
  });
});
