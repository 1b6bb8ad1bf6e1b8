// Legacy links on the default bridge through real clients: the hosts entry and the ALIAS_*
// variables, HostConfig.Links as stored, the link's name in `docker ps`, removing a link
// (`docker rm --link`, docker-py), the errors of a link to a stopped or missing container, a MAC
// address asked for at create, and --icc=false letting only linked containers talk.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, pythonDocker, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';

const HTTPD = 'mkdir -p /www && echo hello-linked > /www/index.html && exec httpd -f -p 80 -h /www';
const FETCH = (host: string) => `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 ${host} 80`;

async function removeAll(d: DaemonHandle): Promise<void> {
  const ctrs = (await docker(d, ['ps', '-aq'])).stdout.trim().split('\n').filter(Boolean);
  if (ctrs.length) await docker(d, ['rm', '-f', ...ctrs]);
}

describe('legacy links', () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  let imgs: TestImages;

  before(async () => {
    d = await startDaemon({ bridge: true });
    imgs = await testImages();
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(async () => {
    try {
      await removeAll(d);
    } finally {
      await d?.cleanup();
    }
  });

  test('--link writes the hosts entry and the variables; inspect, ps and rm --link', async () => {
    await dk('run', '-d', '--name', 'db', '--hostname', 'dbhost', '-e', 'FOO=1', '--expose', '5432', '--expose', '5433', img(), 'sleep', '60');
    const dbIp = await dk('inspect', '-f', '{{.NetworkSettings.IPAddress}}', 'db');
    await dk('create', '--name', 'web', '--link', 'db:database', img(), 'sh', '-c', 'cat /etc/hosts; env');
    assert.equal(await dk('inspect', '-f', '{{json .HostConfig.Links}}', 'web'), '["/db:/web/database"]');
    await dk('start', '-a', 'web');
    const out = await dk('logs', 'web');
    assert.match(out, new RegExp(`^${dbIp.replace(/\./g, '\\.')}\\tdatabase dbhost db$`, 'm'));
    for (const v of [
      'DATABASE_NAME=/web/database',
      `DATABASE_PORT=tcp://${dbIp}:5432`,
      `DATABASE_PORT_5432_TCP=tcp://${dbIp}:5432`,
      `DATABASE_PORT_5432_TCP_ADDR=${dbIp}`,
      'DATABASE_PORT_5432_TCP_PORT=5432',
      'DATABASE_PORT_5432_TCP_PROTO=tcp',
      `DATABASE_PORT_5432_TCP_START=tcp://${dbIp}:5432`,
      'DATABASE_PORT_5432_TCP_PORT_END=5433',
      'DATABASE_ENV_FOO=1',
    ]) {
      assert.ok(out.split('\n').includes(v), `${v} in:\n${out}`);
    }
    assert.ok(!/DATABASE_ENV_PATH=/.test(out), 'PATH is not passed on');
    assert.equal(await dk('ps', '-a', '--no-trunc', '--filter', 'name=^/db$', '--format', '{{.Names}}'), 'db,web/database');
    await dk('rm', '--link', '/web/database');
    assert.equal(await dk('inspect', '-f', '{{json .HostConfig.Links}}', 'web'), '[]');
    assert.equal(await dk('ps', '-a', '--no-trunc', '--filter', 'name=^/db$', '--format', '{{.Names}}'), 'db');
    // The next start writes no link line.
    const again = await dk('start', '-a', 'web');
    assert.doesNotMatch(again, /\tdatabase dbhost db$/m);
    assert.doesNotMatch(again, /DATABASE_NAME=/);
    await dk('rm', 'web');
  });

  test('a link to a stopped container fails at start, to a missing one at create (400)', async () => {
    await dk('create', '--name', 'stopped', img(), 'true');
    const r = await docker(d, ['run', '--name', 'webx', '--link', 'stopped:s', img(), 'true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Cannot link to a non running container: \/stopped AS \/webx\/s/);
    const m = await docker(d, ['create', '--link', 'nosuch:n', img(), 'true']);
    assert.notEqual(m.code, 0);
    assert.match(m.stderr, /could not get container for nosuch/);
    assert.doesNotMatch(m.stderr, /pull/i, 'not taken for a missing image');
    await dk('rm', '-f', 'webx', 'stopped');
  });

  test('docker-py: links set variables; remove_container(link=True) takes the link away', async () => {
    const out = await pythonDocker(d, `
      api = client.api
      c1 = api.create_container('${img()}', 'cat', detach=True, stdin_open=True, environment={'FOO': '1'})
      api.start(c1)
      n1 = api.inspect_container(c1)['Name'][1:]
      c3 = api.create_container('${img()}', 'env', host_config=api.create_host_config(links={n1: 'mylink1'}, network_mode='bridge'))
      api.start(c3)
      assert api.wait(c3)['StatusCode'] == 0
      logs = api.logs(c3).decode()
      assert 'MYLINK1_NAME=' in logs and 'MYLINK1_ENV_FOO=1' in logs, logs
      c2 = api.create_container('${img()}', 'cat', host_config=api.create_host_config(links={n1: 'mylink'}))
      api.start(c2)
      link = api.inspect_container(c2)['Name'][1:] + '/mylink'
      api.remove_container(link, link=True)
      assert not [x for x in api.containers(all=True) if link in x['Names']]
      assert len([x for x in api.containers(all=True) if x['Id'] in (c1['Id'], c2['Id'])]) == 2
      for c in (c1, c2, c3):
          api.remove_container(c, force=True)
      print('ok')
    `);
    assert.equal(out.trim(), 'ok');
  });

  test('on a user-defined network a link is an alias that only the linking container resolves', async () => {
    await dk('network', 'create', '--subnet', '10.231.7.0/24', 'linknet');
    try {
      await dk('run', '-d', '--name', 'target', '--network', 'linknet', img(), 'sleep', '60');
      const ip = await dk('inspect', '-f', '{{(index .NetworkSettings.Networks "linknet").IPAddress}}', 'target');
      let seen = '';
      for (let i = 0; i < 5 && !seen.includes(ip); i++) {
        seen = (await docker(d, ['run', '--rm', '--network', 'linknet', '--link', 'target:buddy', img(), 'nslookup', 'buddy'])).stdout;
      }
      assert.match(seen, new RegExp(`Address:\\s+${ip.replace(/\./g, '\\.')}`));
      const other = await docker(d, ['run', '--rm', '--network', 'linknet', img(), 'nslookup', 'buddy']);
      assert.doesNotMatch(other.stdout, new RegExp(ip.replace(/\./g, '\\.')), 'a container without the link does not resolve the alias');
      await dk('rm', '-f', 'target');
    } finally {
      await docker(d, ['network', 'rm', 'linknet']);
    }
  });

  test('a MAC address asked for at create is the one the container gets; a bad one is refused', async () => {
    assert.equal(await dk('run', '--rm', '--mac-address', '02:42:ac:11:ff:01', img(), 'cat', '/sys/class/net/eth0/address'), '02:42:ac:11:ff:01');
    const bad = await docker(d, ['create', '--mac-address', '02:42:zz:11:ff:01', img(), 'true']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /invalid MAC address|is not a valid mac address/);
  });

  function img(): string {
    return imgs.tag;
  }
});

describe('--icc=false', () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  let tag = '';

  before(async () => {
    d = await startDaemon({ bridge: true, args: ['--icc=false'] });
    const imgs = await testImages();
    tag = imgs.tag;
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(async () => {
    try {
      await removeAll(d);
    } finally {
      await d?.cleanup();
    }
  });

  test('containers on the default bridge cannot talk, except through a link on the exposed port', async () => {
    await dk('run', '-d', '--name', 'srv', '--expose', '80', '--stop-timeout', '1', tag, 'sh', '-c', HTTPD);
    const ip = await dk('inspect', '-f', '{{.NetworkSettings.IPAddress}}', 'srv');
    const direct = await docker(d, ['run', '--rm', tag, 'sh', '-c', FETCH(ip)]);
    assert.doesNotMatch(direct.stdout, /hello-linked/, 'direct traffic is dropped');
    let linked = '';
    for (let i = 0; i < 10 && !linked.includes('hello-linked'); i++) {
      linked = (await docker(d, ['run', '--rm', '--link', 'srv:web', tag, 'sh', '-c', FETCH('web')])).stdout;
    }
    assert.match(linked, /hello-linked/);
    await dk('rm', '-f', 'srv');
  });
});
