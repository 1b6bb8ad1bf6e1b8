// Endpoint settings per network, through real clients: what `docker run` (--mac-address, --ip,
// --network-alias) and `docker network connect` (--alias, --ip, --link) ask, and a create's
// NetworkingConfig.EndpointsConfig for two networks (dockerode, docker-py): Aliases, MacAddress,
// IPAMConfig and DriverOpts are kept, shown by inspect and applied (the MAC and the address are the
// interface's inside the container); a link given at connect is an alias the connected container
// resolves on its embedded DNS (127.0.0.11). A create naming a network that does not exist fails
// with 404 and leaves nothing behind.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, dockerode, pythonDocker, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface EndpointView {
  Aliases: string[] | null;
  Links: string[] | null;
  MacAddress: string;
  IPAddress: string;
  IPAMConfig: { IPv4Address?: string; IPv6Address?: string } | null;
  DriverOpts: Record<string, string> | null;
  NetworkID: string;
}

describe('endpoint settings per network', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  before(async () => {
    ({ d, imgs } = await startWithImages());
  });
  after(() => removeAllAndCleanup(d));

  const networksOf = async (c: string): Promise<Record<string, EndpointView>> => JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', c));
  /** The interface inside `c` that holds `ip`, with its MAC (from `ip -o addr` and `ip -o link`). */
  async function ifaceWith(c: string, ip: string): Promise<{ name: string; mac: string }> {
    const addrs = await dk('exec', c, 'ip', '-o', '-4', 'addr');
    const line = addrs.split('\n').find((l) => new RegExp(`inet ${esc(ip)}/`).test(l));
    assert.ok(line, `an interface of ${c} has ${ip}:\n${addrs}`);
    const name = line!.split(/\s+/)[1]!;
    const link = await dk('exec', c, 'ip', '-o', 'link', 'show', name);
    const mac = /link\/ether ([0-9a-f:]+)/.exec(link)?.[1] ?? '';
    return { name, mac };
  }
  /** `nslookup name` inside `c` on its resolv.conf nameserver (the embedded DNS); retried briefly. */
  async function lookupIn(c: string, name: string, want: string): Promise<string> {
    let out = '';
    for (let i = 0; i < 3; i++) {
      const r = await docker(d, ['exec', c, 'nslookup', name]);
      out = r.stdout + r.stderr;
      if (new RegExp(`Address:\\s+${esc(want)}\\b`).test(out)) break;
    }
    return out;
  }

  test('docker run --mac-address --ip --network-alias, network connect --alias --ip --link: kept, shown, applied; the link alias resolves on 127.0.0.11', async () => {
    await dk('network', 'create', '--subnet', '10.241.1.0/24', 'es-n1');
    await dk('network', 'create', '--subnet', '10.241.2.0/24', 'es-n2');
    const mac = '02:42:0a:f1:01:0a';
    await dk('run', '-d', '--name', 'es-c', '--network', 'es-n1', '--mac-address', mac, '--ip', '10.241.1.10', '--network-alias', 'a1', '--stop-timeout', '1', imgs.tag, 'sleep', '300');
    await dk('run', '-d', '--name', 'es-other', '--network', 'es-n2', '--stop-timeout', '1', imgs.tag, 'sleep', '300');
    const otherIp = (await networksOf('es-other'))['es-n2']!.IPAddress;
    assert.match(otherIp, /^10\.241\.2\.\d+$/);

    let nets = await networksOf('es-c');
    const n1 = nets['es-n1']!;
    assert.equal(n1.MacAddress, mac);
    assert.equal(n1.IPAddress, '10.241.1.10');
    assert.equal(n1.IPAMConfig?.IPv4Address, '10.241.1.10');
    assert.ok(n1.Aliases?.includes('a1'), JSON.stringify(n1.Aliases));
    assert.equal(await dk('inspect', '-f', '{{.NetworkSettings.MacAddress}}', 'es-c'), mac);
    assert.deepEqual(await ifaceWith('es-c', '10.241.1.10'), { name: 'eth0', mac });
    assert.match(await lookupIn('es-c', 'a1', '10.241.1.10'), /Address:\s+10\.241\.1\.10\b/);

    await dk('network', 'connect', '--alias', 'a2', '--ip', '10.241.2.20', '--link', 'es-other:alias', 'es-n2', 'es-c');
    nets = await networksOf('es-c');
    const n2 = nets['es-n2']!;
    assert.equal(n2.IPAddress, '10.241.2.20');
    assert.equal(n2.IPAMConfig?.IPv4Address, '10.241.2.20');
    assert.ok(n2.Aliases?.includes('a2'), JSON.stringify(n2.Aliases));
    assert.deepEqual(n2.Links, ['es-other:alias']);
    assert.match(n2.MacAddress, /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    const eth = await ifaceWith('es-c', '10.241.2.20');
    assert.equal(eth.name, 'eth1');
    assert.equal(eth.mac, n2.MacAddress, 'the interface has the MAC inspect shows');
    assert.match(await dk('exec', 'es-c', 'cat', '/etc/resolv.conf'), /nameserver 127\.0\.0\.11/);
    // The link: an alias the connected container resolves on its embedded DNS, others do not.
    const look = await lookupIn('es-c', 'alias', otherIp);
    assert.match(look, new RegExp(`Address:\\s+${esc(otherIp)}\\b`), look);
    const fromOther = await docker(d, ['exec', 'es-other', 'nslookup', 'alias']);
    assert.doesNotMatch(fromOther.stdout, new RegExp(`Address:\\s+${esc(otherIp)}\\b`), 'the link alias is the linking container\'s alone');
    // The alias given at connect: the others on es-n2 resolve it to the connect's address.
    assert.match(await lookupIn('es-other', 'a2', '10.241.2.20'), /Address:\s+10\.241\.2\.20\b/);
    // A name on the container's other network resolves too (its sandbox knows both networks).
    assert.match(await lookupIn('es-c', 'es-other', otherIp), new RegExp(`Address:\\s+${esc(otherIp)}\\b`));

    // A new run: the same settings again.
    await dk('restart', '-t', '0', 'es-c');
    assert.deepEqual(await ifaceWith('es-c', '10.241.1.10'), { name: 'eth0', mac });
    assert.equal((await ifaceWith('es-c', '10.241.2.20')).name, 'eth1');
    const again = await lookupIn('es-c', 'alias', otherIp);
    assert.match(again, new RegExp(`Address:\\s+${esc(otherIp)}\\b`), again);
  });

  test('dockerode: EndpointsConfig for two networks at create (Aliases, MacAddress, IPAMConfig, DriverOpts) and a connect with them', async () => {
    const api = dockerode(d);
    await api.createNetwork({ Name: 'es-n3', IPAM: { Config: [{ Subnet: '10.241.3.0/24' }] } });
    await api.createNetwork({ Name: 'es-n4', IPAM: { Config: [{ Subnet: '10.241.4.0/24' }] } });
    await api.createNetwork({ Name: 'es-n5', IPAM: { Config: [{ Subnet: '10.241.5.0/24' }] } });
    const mac3 = '02:42:0a:f1:03:21';
    const mac4 = '02:42:0a:f1:04:22';
    const c = await api.createContainer({
      name: 'es-ode', Image: imgs.tag, Cmd: ['sleep', '300'], StopTimeout: 1,
      HostConfig: { NetworkMode: 'es-n3' },
      NetworkingConfig: {
        EndpointsConfig: {
          'es-n3': { Aliases: ['three'], MacAddress: mac3, IPAMConfig: { IPv4Address: '10.241.3.33' }, DriverOpts: { 'com.example.opt': 'x3' } },
          'es-n4': { Aliases: ['four'], MacAddress: mac4, IPAMConfig: { IPv4Address: '10.241.4.44' }, DriverOpts: { 'com.example.opt': 'x4' } },
        },
      },
    });
    // Created, not started: the settings are there already.
    let nets = (await c.inspect()).NetworkSettings.Networks as unknown as Record<string, EndpointView>;
    assert.deepEqual(Object.keys(nets).sort(), ['es-n3', 'es-n4']);
    assert.deepEqual(nets['es-n3']!.DriverOpts, { 'com.example.opt': 'x3' });
    assert.deepEqual(nets['es-n4']!.IPAMConfig?.IPv4Address, '10.241.4.44');
    assert.ok(nets['es-n4']!.Aliases?.includes('four'));

    await c.start();
    nets = (await c.inspect()).NetworkSettings.Networks as unknown as Record<string, EndpointView>;
    for (const [net, alias, mac, ip, opt] of [['es-n3', 'three', mac3, '10.241.3.33', 'x3'], ['es-n4', 'four', mac4, '10.241.4.44', 'x4']] as const) {
      const ep = nets[net]!;
      assert.ok(ep.Aliases?.includes(alias), `${net} aliases ${JSON.stringify(ep.Aliases)}`);
      assert.equal(ep.MacAddress, mac, `${net} MacAddress`);
      assert.equal(ep.IPAddress, ip, `${net} IPAddress`);
      assert.equal(ep.IPAMConfig?.IPv4Address, ip, `${net} IPAMConfig`);
      assert.deepEqual(ep.DriverOpts, { 'com.example.opt': opt }, `${net} DriverOpts`);
      assert.equal((await ifaceWith('es-ode', ip)).mac, mac, `${net}: the interface has the MAC asked for`);
    }
    assert.equal((await ifaceWith('es-ode', '10.241.3.33')).name, 'eth0');
    // Each alias answers on its own network.
    await dk('run', '-d', '--name', 'es-peer', '--network', 'es-n4', '--stop-timeout', '1', imgs.tag, 'sleep', '300');
    assert.match(await lookupIn('es-peer', 'four', '10.241.4.44'), /Address:\s+10\.241\.4\.44\b/);

    // Connect with the same settings, through the API.
    const mac5 = '02:42:0a:f1:05:23';
    await api.getNetwork('es-n5').connect({
      Container: 'es-ode',
      EndpointConfig: { Aliases: ['five'], MacAddress: mac5, IPAMConfig: { IPv4Address: '10.241.5.55' }, DriverOpts: { 'com.example.opt': 'x5' } },
    });
    const n5 = ((await c.inspect()).NetworkSettings.Networks as unknown as Record<string, EndpointView>)['es-n5']!;
    assert.equal(n5.MacAddress, mac5);
    assert.equal(n5.IPAddress, '10.241.5.55');
    assert.equal(n5.IPAMConfig?.IPv4Address, '10.241.5.55');
    assert.deepEqual(n5.DriverOpts, { 'com.example.opt': 'x5' });
    assert.ok(n5.Aliases?.includes('five'));
    assert.equal((await ifaceWith('es-ode', '10.241.5.55')).mac, mac5);
    // The network's view of it: the MAC and address as plugged in.
    const inN5 = Object.values((await api.getNetwork('es-n5').inspect()).Containers as Record<string, { Name: string; MacAddress: string; IPv4Address: string }>);
    assert.deepEqual(inN5.map((x) => [x.Name, x.MacAddress, x.IPv4Address]), [['es-ode', mac5, '10.241.5.55/24']]);
  });

  test('docker-py (5.x, no MAC argument): EndpointsConfig for two networks at create and a connect, with aliases, addresses, driver options and a link', async () => {
    await dk('network', 'create', '--subnet', '10.241.6.0/24', 'es-n6');
    await dk('network', 'create', '--subnet', '10.241.8.0/24', 'es-n8');
    await dk('network', 'create', '--subnet', '10.241.9.0/24', 'es-n9');
    await dk('run', '-d', '--name', 'es-py-target', '--network', 'es-n9', '--stop-timeout', '1', imgs.tag, 'sleep', '300');
    const out = await pythonDocker(d, `
      nc = api.create_networking_config({
        'es-n8': api.create_endpoint_config(aliases=['p8'], ipv4_address='10.241.8.88', driver_opt={'com.example.opt': 'p8'}),
        'es-n6': api.create_endpoint_config(aliases=['p6'], ipv4_address='10.241.6.66', driver_opt={'com.example.opt': 'p6'}),
      })
      c = api.create_container('${imgs.tag}', ['sleep', '300'], name='es-py', networking_config=nc, host_config=api.create_host_config(network_mode='es-n8'))
      api.start(c)
      api.connect_container_to_network('es-py', 'es-n9', aliases=['p9'], ipv4_address='10.241.9.99', links=[('es-py-target', 'tgt')], driver_opt={'com.example.opt': 'p9'})
      nets = api.inspect_container('es-py')['NetworkSettings']['Networks']
      print(json.dumps({n: {k: ep[k] for k in ['Aliases', 'Links', 'MacAddress', 'IPAddress', 'IPAMConfig', 'DriverOpts']} for n, ep in nets.items()}))
    `);
    const nets = JSON.parse(out.trim().split('\n').pop()!) as Record<string, EndpointView>;
    assert.deepEqual(Object.keys(nets).sort(), ['es-n6', 'es-n8', 'es-n9']);
    for (const [net, alias, ip, opt] of [['es-n8', 'p8', '10.241.8.88', 'p8'], ['es-n6', 'p6', '10.241.6.66', 'p6'], ['es-n9', 'p9', '10.241.9.99', 'p9']] as const) {
      const ep = nets[net]!;
      assert.ok(ep.Aliases?.includes(alias), `${net} aliases ${JSON.stringify(ep.Aliases)}`);
      assert.equal(ep.IPAddress, ip, `${net} IPAddress`);
      assert.equal(ep.IPAMConfig?.IPv4Address, ip, `${net} IPAMConfig`);
      assert.deepEqual(ep.DriverOpts, { 'com.example.opt': opt }, `${net} DriverOpts`);
      assert.equal((await ifaceWith('es-py', ip)).mac, ep.MacAddress, `${net}: the interface has the MAC inspect shows`);
    }
    assert.deepEqual(nets['es-n9']!.Links, ['es-py-target:tgt']);
    const targetIp = JSON.parse(await dk('inspect', '-f', '{{json .NetworkSettings.Networks}}', 'es-py-target'))['es-n9'].IPAddress as string;
    const look = await lookupIn('es-py', 'tgt', targetIp);
    assert.match(look, new RegExp(`Address:\\s+${esc(targetIp)}\\b`), look);
  });

  test('a create whose NetworkingConfig names a missing network: 404 network NAME not found, nothing left behind', async () => {
    const api = dockerode(d);
    await dk('network', 'create', '--subnet', '10.241.7.0/24', 'es-n7');
    const before = { ctrs: await dk('ps', '-aq'), vols: await dk('volume', 'ls', '-q') };
    const err = await api.createContainer({
      name: 'es-ghost', Image: imgs.tag, Cmd: ['true'], Volumes: { '/anon': {} },
      HostConfig: { NetworkMode: 'es-n7', Binds: ['es-ghost-vol:/data'] },
      NetworkingConfig: { EndpointsConfig: { 'es-n7': { Aliases: ['g'] }, 'es-nosuch': { Aliases: ['h'] } } },
    }).then(() => null, (e: { statusCode?: number; json?: { message?: string } }) => e);
    assert.ok(err, 'the create fails');
    assert.equal(err.statusCode, 404);
    assert.equal(err.json?.message, 'network es-nosuch not found');
    assert.equal((await docker(d, ['inspect', 'es-ghost'])).code, 1, 'no container es-ghost');
    assert.equal(await dk('ps', '-aq'), before.ctrs);
    assert.equal(await dk('volume', 'ls', '-q'), before.vols, 'no volume made');
    assert.deepEqual(JSON.parse(await dk('network', 'inspect', '-f', '{{json .Containers}}', 'es-n7')), {});
    // The name is free: a create without the missing network works.
    await dk('create', '--name', 'es-ghost', '--network', 'es-n7', imgs.tag, 'true');
    await dk('rm', 'es-ghost');
    // Also when the missing one is the only entry beside the default mode.
    const alone = await api.createContainer({ Image: imgs.tag, Cmd: ['true'], NetworkingConfig: { EndpointsConfig: { 'es-nosuch2': {} } } })
      .then(() => null, (e: { statusCode?: number; json?: { message?: string } }) => e);
    assert.equal(alone?.statusCode, 404);
    assert.equal(alone?.json?.message, 'network es-nosuch2 not found');
    assert.equal(await dk('ps', '-aq'), before.ctrs);
  });
});
