// IPv6 networking seen from outside: the daemon's --ipv6 --fixed-cidr-v6 give the default bridge
// an IPv6 subnet (containers get an address and the bridge as their route), `network create
// --ipv6 --subnet <v6>` a dual-stack user network whose embedded DNS answers AAAA, --ip6 a static
// address, --ip6tables the same rules in ip6tables (gone with the network); docker-py and
// dockerode create IPv6 networks; the reference's refusals for half-asked IPv6.
// The daemon runs with --ip-forward=false: nothing here needs routing off the bridge, and the
// host's forwarding switches stay as they are.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, dockerode, pythonDocker, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup } from './harness/setup.ts';

const hex = () => randomInt(0x100, 0xffff).toString(16);
// Unique per run: fd<random>:<random>:<n>::/64.
const BASE = `fd${randomInt(0x10, 0xff).toString(16)}:${hex()}`;
const v6net = (n: number) => `${BASE}:${n}::`;
const oct = randomInt(100, 250);

function ip6rules(): string {
  return execFileSync('ip6tables', ['-S'], { encoding: 'utf8' }) + execFileSync('ip6tables', ['-t', 'nat', '-S'], { encoding: 'utf8' });
}


describe('IPv6: --ipv6 --fixed-cidr-v6 --ip6tables, dual-stack user networks', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  before(async () => {
    d = await startDaemon({ bridge: true, args: ['--ipv6', '--fixed-cidr-v6', `${v6net(1)}/64`, '--ip6tables', '--ip-forward=false'] });
    imgs = await testImages();
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(() => removeAllAndCleanup(d));

  test('the default bridge: an IPv6 address for the container, the bridge as its gateway, shown by inspect', async () => {
    const bridge = JSON.parse(await dk('network', 'inspect', 'bridge'))[0];
    assert.equal(bridge.EnableIPv6, true);
    assert.deepEqual(bridge.IPAM.Config[1], { Subnet: `${v6net(1)}/64`, Gateway: `${v6net(1)}1` });
    await dk('run', '-d', '--name', 'b6', imgs.tag, 'sleep', '300');
    const ns = JSON.parse(await dk('inspect', 'b6'))[0].NetworkSettings;
    assert.match(ns.GlobalIPv6Address, new RegExp(`^${v6net(1)}\\d+$`));
    assert.equal(ns.GlobalIPv6PrefixLen, 64);
    assert.equal(ns.IPv6Gateway, `${v6net(1)}1`);
    assert.equal(ns.Networks.bridge.GlobalIPv6Address, ns.GlobalIPv6Address);
    const addr = await dk('exec', 'b6', 'ip', '-6', 'addr', 'show', 'dev', 'eth0');
    assert.match(addr, new RegExp(`inet6 ${ns.GlobalIPv6Address}/64`));
    const route = await dk('exec', 'b6', 'ip', '-6', 'route', 'show', 'default');
    assert.match(route, new RegExp(`default via ${v6net(1)}1 dev eth0`));
    assert.match(await dk('exec', 'b6', 'ping6', '-c', '1', '-W', '3', `${v6net(1)}1`), /1 packets received/);
    assert.match(await dk('exec', 'b6', 'cat', '/etc/hosts'), new RegExp(`${ns.GlobalIPv6Address}\\t`));
    const members = JSON.parse(await dk('network', 'inspect', 'bridge'))[0].Containers;
    assert.equal((Object.values(members)[0] as { IPv6Address: string }).IPv6Address, `${ns.GlobalIPv6Address}/64`);
    await dk('rm', '-f', 'b6');
  });

  test('a dual-stack user network: names answer AAAA, containers reach each other over IPv6, --ip6, ip6tables rules come and go', async () => {
    const id = await dk('network', 'create', '--ipv6', '--subnet', `10.${oct}.7.0/24`, '--subnet', `${v6net(2)}/64`, 'v6net');
    const bridge = `br-${id.slice(0, 12)}`;
    const inspect = JSON.parse(await dk('network', 'inspect', 'v6net'))[0];
    assert.equal(inspect.EnableIPv6, true);
    assert.deepEqual(inspect.IPAM.Config, [{ Subnet: `10.${oct}.7.0/24`, Gateway: `10.${oct}.7.1` }, { Subnet: `${v6net(2)}/64`, Gateway: `${v6net(2)}1` }]);
    assert.ok(ip6rules().split('\n').some((l) => l.includes(bridge)), 'ip6tables rules name the bridge');
    assert.ok(ip6rules().split('\n').some((l) => l.includes('MASQUERADE') && l.includes(`${v6net(2)}/64`)), 'the IPv6 subnet is masqueraded');

    await dk('run', '-d', '--network', 'v6net', '--name', 'srv', '--ip6', `${v6net(2)}99`, imgs.tag, 'sleep', '300');
    assert.equal(await dk('inspect', '-f', '{{.NetworkSettings.Networks.v6net.GlobalIPv6Address}}', 'srv'), `${v6net(2)}99`);
    assert.equal(await dk('inspect', '-f', '{{.NetworkSettings.Networks.v6net.IPv6Gateway}}', 'srv'), `${v6net(2)}1`);
    const client = (cmd: string) => docker(d, ['run', '--rm', '--network', 'v6net', imgs.tag, 'sh', '-c', cmd]);
    const look = await client('nslookup -type=AAAA srv');
    assert.match(look.stdout, new RegExp(`Address:\\s+${v6net(2)}99`), look.stdout + look.stderr);
    let ping = '';
    for (let i = 0; i < 5 && !/1 packets received/.test(ping); i++) ping = (await client('ping6 -c 1 -W 3 srv')).stdout;
    assert.match(ping, /1 packets received/);

    const taken = await docker(d, ['run', '--rm', '--network', 'v6net', '--ip6', `${v6net(2)}99`, imgs.tag, 'true']);
    assert.notEqual(taken.code, 0);
    assert.match(taken.stderr, /Address already in use/);
    const outside = await docker(d, ['run', '--rm', '--network', 'v6net', '--ip6', `${v6net(9)}5`, imgs.tag, 'true']);
    assert.notEqual(outside.code, 0);
    assert.match(outside.stderr, /not a free host address|not in subnet/);

    const members = JSON.parse(await dk('network', 'inspect', 'v6net'))[0].Containers;
    assert.deepEqual(Object.values(members).map((c) => (c as { IPv6Address: string }).IPv6Address), [`${v6net(2)}99/64`]);
    await dk('rm', '-f', 'srv');
    await dk('network', 'rm', 'v6net');
    assert.ok(!ip6rules().split('\n').some((l) => l.includes(bridge)), 'no ip6tables rule names the removed bridge');
  });

  test('half-asked IPv6 is refused with the reference messages; docker-py and dockerode create IPv6 networks', async () => {
    const noSubnet = await docker(d, ['network', 'create', '--ipv6', 'nov6pool']);
    assert.notEqual(noSubnet.code, 0);
    assert.match(noSubnet.stderr, /could not find an available, non-overlapping IPv6 address pool/);
    const notEnabled = await docker(d, ['network', 'create', '--subnet', `${v6net(3)}/64`, 'notenabled']);
    assert.notEqual(notEnabled.code, 0);
    assert.match(notEnabled.stderr, /IPv6 is not enabled/);
    assert.equal(await dk('network', 'ls', '--filter', 'type=custom', '-q'), '');

    const out = await pythonDocker(d, `
      from docker.types import IPAMConfig, IPAMPool
      net = client.networks.create('pyv6', enable_ipv6=True, ipam=IPAMConfig(pool_configs=[IPAMPool(subnet='10.${oct}.8.0/24'), IPAMPool(subnet='${v6net(4)}/64')]))
      c = client.containers.run('${imgs.tag}', ['sleep', '300'], network='pyv6', detach=True, name='py6')
      c.reload()
      print(json.dumps([net.attrs['EnableIPv6'], c.attrs['NetworkSettings']['Networks']['pyv6']['GlobalIPv6Address']]))
      c.remove(force=True)
      net.remove()
    `);
    assert.deepEqual(JSON.parse(out.trim().split('\n').pop()!), [true, `${v6net(4)}2`]);

    const api = dockerode(d);
    const n = await api.createNetwork({ Name: 'dode6', EnableIPv6: true, IPAM: { Config: [{ Subnet: `${v6net(5)}/64` }] } });
    const info = await n.inspect();
    assert.equal(info.EnableIPv6, true);
    assert.ok((info.IPAM?.Config ?? []).some((p) => p.Subnet === `${v6net(5)}/64`));
    await n.remove();
  });
});
