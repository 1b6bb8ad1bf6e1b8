// Network create: address pools (first free subnet, never overlapping networks or host routes)
// and the checks of a create request, as pure functions.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildNetworkSpec, type CreateRequest, type NetworkDefaults } from '../../../admission/networks/network-spec.ts';
import { DEFAULT_POOLS, pickSubnet } from '../../../admission/networks/pools.ts';
import type { NetworkResource } from '../../../api/networks/views.ts';
import { parseCidr } from '../../../lib/cidr.ts';

const defaults = (over: Partial<NetworkDefaults> = {}): NetworkDefaults => ({
  mtu: 1500, iptables: true, ip6tables: false, ipForward: true, userlandProxy: true, chainPrefix: 'ENGINE', pools: [], driverOpts: {}, hostRoutes: () => [], ...over,
});

function net(name: string, subnet: string, bridgeName = `br-${name}`): NetworkResource {
  return { kind: 'network', name: name.padEnd(64, '0'), generation: 1, resourceVersion: 1, createdAt: '', status: { observedGeneration: 1, phase: 'ready', error: '', lastRepair: '', lastRepairAt: '' }, spec: {
    id: name.padEnd(64, '0'), name, driver: 'bridge', scope: 'local', created: '', enableIPv6: false, internal: false, attachable: false, ingress: false,
    ipam: { Driver: 'default', Options: {}, Config: [{ Subnet: subnet, Gateway: '' }] }, options: {}, labels: {},
    bridge: { bridgeName, mtu: 1500, icc: true, ipMasq: true, iptables: true, ipForward: true, userlandProxy: true, chainPrefix: 'ENGINE', defaultGateway: '' }, desired: 'present',
  } } as NetworkResource;
}

const ID = 'a'.repeat(64);
const build = (req: Partial<CreateRequest>, existing: NetworkResource[] = [], d = defaults()) => buildNetworkSpec(ID, '2026-01-01T00:00:00Z', { Name: 'mynet', ...req }, existing, d);

describe('address pools', () => {
  test('the first subnet free of networks and host routes', () => {
    assert.equal(pickSubnet([], []), '172.17.0.0/16');
    assert.equal(pickSubnet([], [parseCidr('172.17.0.0/16')]), '172.18.0.0/16');
    assert.equal(pickSubnet([], [parseCidr('172.17.0.0/16'), parseCidr('172.18.5.0/24')]), '172.19.0.0/16');
    assert.equal(pickSubnet([{ base: '10.10.0.0/16', size: 24 }], [parseCidr('10.10.0.0/24')]), '10.10.1.0/24');
    const all = DEFAULT_POOLS.map((p) => parseCidr(p.base));
    assert.throws(() => pickSubnet([], all), /could not find an available, non-overlapping IPv4 address pool/);
  });
});

describe('network create request', () => {
  test('a plain create: bridge br-<id>, the next free subnet, its first host as gateway', () => {
    const s = build({ Labels: { a: 'b' } }, [net('bridge', '172.17.0.0/16', 'engine0')], defaults({ hostRoutes: () => ['172.18.0.0/16'] }));
    assert.equal(s.bridge?.bridgeName, `br-${ID.slice(0, 12)}`);
    assert.deepEqual(s.ipam.Config, [{ Subnet: '172.19.0.0/16', Gateway: '172.19.0.1' }]);
    assert.deepEqual(s.labels, { a: 'b' });
    assert.equal(s.driver, 'bridge');
  });

  test('subnet, range, gateway and aux addresses as asked, checked', () => {
    const s = build({ IPAM: { Config: [{ Subnet: '10.5.0.0/16', IPRange: '10.5.1.0/24', Gateway: '10.5.0.254', AuxiliaryAddresses: { r: '10.5.0.9' } }] } });
    assert.deepEqual(s.ipam.Config[0], { Subnet: '10.5.0.0/16', IPRange: '10.5.1.0/24', Gateway: '10.5.0.254', AuxiliaryAddresses: { r: '10.5.0.9' } });
    const bad: Array<[Partial<CreateRequest>, RegExp]> = [
      [{ IPAM: { Config: [{ Subnet: '10.5.1.0/16' }] } }, /invalid subnet 10.5.1.0\/16: it should be 10.5.0.0\/16/],
      [{ IPAM: { Config: [{ Subnet: '10.5.0.0/16', IPRange: '10.6.0.0/24' }] } }, /must be a subset of subnet/],
      [{ IPAM: { Config: [{ Subnet: '10.5.0.0/16', Gateway: '10.6.0.1' }] } }, /must be within subnet/],
      [{ IPAM: { Config: [{ Gateway: '10.6.0.1' }] } }, /needs a subnet/],
      [{ IPAM: { Config: [{ Subnet: 'nonsense' }] } }, /invalid CIDR address/],
      [{ IPAM: { Config: [{ Subnet: 'fd00::/64' }] } }, /IPv6 is not enabled/],
      [{ Driver: 'overlay' }, /plugin "overlay" not found/],
      [{ Driver: 'host' }, /only one instance of "host" network is allowed/],
      [{ Options: { 'com.docker.network.bridge.enable_icc': 'maybe' } }, /ParseBool/],
      [{ Options: { 'com.docker.network.driver.mtu': '20' } }, /invalid MTU/],
      [{ Options: { 'com.docker.network.bridge.name': 'much-too-long-bridge' } }, /invalid bridge name/],
    ];
    for (const [req, msg] of bad) assert.throws(() => build(req), msg, JSON.stringify(req));
  });

  test('EnableIPv6: an IPv4 pool (picked) and the asked IPv6 one, canonical; the checks of each', () => {
    const s = build({ EnableIPv6: true, IPAM: { Config: [{ Subnet: 'fd00:0db8:0001:0::/64' }] } });
    assert.equal(s.enableIPv6, true);
    assert.deepEqual(s.ipam.Config, [{ Subnet: '172.17.0.0/16', Gateway: '172.17.0.1' }, { Subnet: 'fd00:db8:1::/64', Gateway: 'fd00:db8:1::1' }]);
    const both = build({ EnableIPv6: true, IPAM: { Config: [{ Subnet: 'fd00:1::/64', Gateway: 'fd00:1::fe', IPRange: 'fd00:1::100/120' }, { Subnet: '10.9.0.0/24' }] } });
    assert.deepEqual(both.ipam.Config, [{ Subnet: '10.9.0.0/24', Gateway: '10.9.0.1' }, { Subnet: 'fd00:1::/64', IPRange: 'fd00:1::100/120', Gateway: 'fd00:1::fe' }]);
    const bad: Array<[Partial<CreateRequest>, RegExp]> = [
      [{ EnableIPv6: true, IPAM: { Config: [{ Subnet: 'fd00:1::1/64' }] } }, /should be fd00:1::\/64/],
      [{ EnableIPv6: true, IPAM: { Config: [{ Subnet: 'fd00:1::/64', Gateway: 'fd00:2::1' }] } }, /must be within subnet/],
      [{ EnableIPv6: true, IPAM: { Config: [{ Subnet: 'fd00:1::/64', IPRange: 'fd00:2::/80' }] } }, /must be a subset/],
      [{ EnableIPv6: true, IPAM: { Config: [{ Subnet: 'fd00:1::/64' }, { Subnet: 'fd00:2::/64' }] } }, /one IPv6 subnet/],
      [{ EnableIPv6: true, IPAM: { Config: [{ Subnet: 'fd00:1:::/64' }] } }, /invalid IPv6 address/],
    ];
    for (const [req, msg] of bad) assert.throws(() => build(req), msg, JSON.stringify(req));
    // No IPv6 defaults to cut a subnet from, as the reference daemon: 403.
    assert.throws(() => build({ EnableIPv6: true }), (err: { code?: string; message: string }) => err.code === 'PermissionDenied' && /non-overlapping IPv6 address pool/.test(err.message));
    const other = net('v6', '10.1.0.0/16');
    other.spec.enableIPv6 = true;
    other.spec.ipam.Config.push({ Subnet: 'fd00:1::/48', Gateway: 'fd00:1::1' });
    assert.throws(() => build({ EnableIPv6: true, IPAM: { Config: [{ Subnet: 'fd00:1:0:5::/64' }] } }, [other]), /Pool overlaps/);
  });

  test('an asked subnet overlapping another network is refused (403)', () => {
    assert.throws(() => build({ IPAM: { Config: [{ Subnet: '172.17.5.0/24' }] } }, [net('bridge', '172.17.0.0/16')]), (err: { code?: string; message: string }) => err.code === 'PermissionDenied' && /Pool overlaps/.test(err.message));
  });

  test('driver options: bridge name, MTU, icc, masquerade; --default-network-opt under them; internal has no masquerade', () => {
    const s = build(
      { Internal: true, Options: { 'com.docker.network.bridge.name': 'mybr0', 'com.docker.network.bridge.enable_icc': 'false' } },
      [],
      defaults({ driverOpts: { bridge: { 'com.docker.network.driver.mtu': '1400' } } }),
    );
    assert.equal(s.bridge?.bridgeName, 'mybr0');
    assert.equal(s.bridge?.mtu, 1400);
    assert.equal(s.bridge?.icc, false);
    assert.equal(s.bridge?.ipMasq, false);
    assert.equal(s.internal, true);
    assert.equal(s.options['com.docker.network.driver.mtu'], '1400');
    assert.throws(() => build({ Options: { 'com.docker.network.bridge.name': 'mybr0' } }, [net('other', '10.9.0.0/16', 'mybr0')]), /already used/);
  });
});
