// The daemon's network and firewall options seen from outside: --mtu on the containers' veths,
// --ip-masq=false (no masquerade for the bridge's subnet), --ip as the default address of
// published ports, --default-network-opt for networks created later, and --iptables=false
// (no rule at all, published ports still answer on loopback through the userland proxy), and
// --fixed-cidr/--default-gateway (addresses from the range, the default route the given one).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { dockerOk, testImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup } from './harness/setup.ts';

const HTTPD = 'mkdir -p /www && echo hello-fw > /www/index.html && exec httpd -f -p 80 -h /www';

function ruleset(): string {
  return execFileSync('iptables', ['-S'], { encoding: 'utf8' }) + execFileSync('iptables', ['-t', 'nat', '-S'], { encoding: 'utf8' });
}

function get(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    let buf = '';
    const t = setTimeout(() => s.destroy(), 2000);
    s.on('connect', () => s.write('GET / HTTP/1.0\r\n\r\n'));
    s.on('data', (d) => (buf += d.toString()));
    s.on('close', () => {
      clearTimeout(t);
      resolve(buf);
    });
    s.on('error', () => {});
  });
}

async function eventually(host: string, port: number): Promise<string> {
  let last = '';
  for (let i = 0; i < 25 && !last.includes('hello-fw'); i++) {
    last = await get(host, port);
    if (!last.includes('hello-fw')) await new Promise((r) => setTimeout(r, 200));
  }
  return last;
}


describe('--mtu, --ip-masq=false, --ip, --default-network-opt', () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  let tag = '';
  before(async () => {
    d = await startDaemon({
      bridge: true,
      args: ['--mtu', '1400', '--ip-masq=false', '--ip', '127.0.0.1', '--default-network-opt', 'bridge=com.docker.network.driver.mtu=1300'],
    });
    const imgs = await testImages();
    tag = imgs.tag;
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(() => removeAllAndCleanup(d));

  test('containers get the MTU; no masquerade for the subnet; published ports default to --ip', async () => {
    assert.equal(await dk('run', '--rm', tag, 'cat', '/sys/class/net/eth0/mtu'), '1400');
    const [a, b, c] = d.bip.split('.');
    const subnet = `${a}.${b}.${c}.0/`;
    const masq = ruleset().split('\n').filter((l) => l.includes('MASQUERADE') && l.includes(subnet) && l.includes(`! -o ${d.bridge}`));
    assert.deepEqual(masq, [], 'no masquerade rule for the bridge subnet');
    await dk('run', '-d', '--name', 'web', '-p', '80', '--stop-timeout', '1', tag, 'sh', '-c', HTTPD);
    const line = await dk('port', 'web', '80/tcp');
    assert.match(line, /^127\.0\.0\.1:\d+$/);
    assert.match(await eventually('127.0.0.1', Number(line.split(':')[1])), /hello-fw/);
    await dk('rm', '-f', 'web');
  });

  test('a network created later takes the --default-network-opt driver options', async () => {
    await dk('network', 'create', '--subnet', '10.232.9.0/24', 'optnet');
    assert.equal(await dk('network', 'inspect', '-f', '{{index .Options "com.docker.network.driver.mtu"}}', 'optnet'), '1300');
    assert.equal(await dk('run', '--rm', '--network', 'optnet', tag, 'cat', '/sys/class/net/eth0/mtu'), '1300');
    await dk('network', 'rm', 'optnet');
  });
});

describe('--iptables=false', () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  let tag = '';
  before(async () => {
    d = await startDaemon({ bridge: true, args: ['--iptables=false'] });
    const imgs = await testImages();
    tag = imgs.tag;
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(() => removeAllAndCleanup(d));

  test('no rule names the bridge, also with a published port, which still answers on loopback', async () => {
    await dk('run', '-d', '--name', 'web', '-p', '127.0.0.1::80', '--stop-timeout', '1', tag, 'sh', '-c', HTTPD);
    const port = Number((await dk('port', 'web', '80/tcp')).split(':')[1]);
    assert.match(await eventually('127.0.0.1', port), /hello-fw/);
    const ours = ruleset().split('\n').filter((l) => l.includes(d.bridge) || l.includes(`--dport ${port} `));
    assert.deepEqual(ours, []);
    await dk('rm', '-f', 'web');
  });
});

describe('--fixed-cidr and --default-gateway', () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  let tag = '';
  // The harness's own --bip is a /24; the options are cut from it.
  let prefix = '';
  const net24 = (bip: string) => bip.split('.').slice(0, 3).join('.');
  before(async () => {
    d = await startDaemon({ bridge: true, argsFromBip: (bip) => ['--fixed-cidr', `${net24(bip)}.128/25`, '--default-gateway', `${net24(bip)}.254`] });
    prefix = net24(d.bip);
    const imgs = await testImages();
    tag = imgs.tag;
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(() => removeAllAndCleanup(d));

  test('addresses come from the fixed range; the default route is the given gateway; inspect shows both', async () => {
    const out = await dk('run', '--rm', tag, 'sh', '-c', 'ip -4 addr show dev eth0; ip route show default');
    const addr = /inet (\d+\.\d+\.\d+\.(\d+))\/24/.exec(out);
    assert.ok(addr, out);
    assert.ok(Number(addr[2]) >= 128, `address ${addr[1]} is in ${prefix}.128/25`);
    assert.match(out, new RegExp(`default via ${prefix.replace(/\./g, '\\.')}\\.254 dev eth0`));
    const bridge = JSON.parse(await dk('network', 'inspect', 'bridge'))[0];
    assert.deepEqual(bridge.IPAM.Config[0], { Subnet: `${prefix}.0/24`, IPRange: `${prefix}.128/25`, Gateway: `${prefix}.1`, AuxiliaryAddresses: { DefaultGatewayIPv4: `${prefix}.254` } });
  });
});
