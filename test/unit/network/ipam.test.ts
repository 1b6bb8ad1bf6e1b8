// Address allocation: durable records, lowest free address after the gateway, reuse by the same
// container, release on removal, never two containers on one address, across restarts too.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { isCode } from '../../../lib/errors.ts';
import { NetworkAttacher, resolveNetworkMode } from '../../../reconcilers/network/attacher.ts';
import { hostVethName } from '../../../drivers/network/veth.ts';
import { ensureDefaultNetwork } from '../../../reconcilers/network/default-network.ts';
import { findNetworkByName } from '../../../store/kinds/network.ts';
import type { NetworkDriverPort, NetworkStore } from '../../../reconcilers/network/deps.ts';
import { IpamAllocations } from '../../../store/kinds/ipam-allocation.ts';
import { Networks } from '../../../store/kinds/network.ts';
import { openStore } from '../../../store/store.ts';
import { FakeStore } from './fake-store.ts';
import { silentLog, suffix } from './helpers.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { loose } from '../store/test-kind.ts';

// The attacher never touches the host in these tests.
const noDriver = {
  attachContainer: async () => assert.fail('no attach expected'),
  detachContainer: async () => false,
  ensureBridge: async () => ({ created: false, repaired: [] }),
} satisfies Pick<NetworkDriverPort, 'attachContainer' | 'detachContainer' | 'ensureBridge'>;

const cid = (n: number) => n.toString(16).padStart(2, '0').repeat(32);

function addContainer(store: NetworkStore, id: string): void {
  store.create(loose(Containers), id, { id }, {});
}

test('default networks are created once and follow option changes', async () => {
  const store = new FakeStore();
  const br = `entest${suffix()}`;
  const a = await ensureDefaultNetwork(store, { bridge: br, bip: '10.213.5.1/24' });
  assert.match(a.bridge!.spec.id, /^[0-9a-f]{64}$/);
  assert.equal(a.bridge!.name, a.bridge!.spec.id);
  assert.deepEqual(a.bridge!.spec.ipam.Config, [{ Subnet: '10.213.5.0/24', Gateway: '10.213.5.1' }]);
  assert.equal(a.bridge!.spec.options['com.docker.network.bridge.name'], br);
  assert.equal(a.host.spec.driver, 'host');
  assert.equal(a.none.spec.driver, 'null');

  const again = await ensureDefaultNetwork(store, { bridge: br, bip: '10.213.5.1/24' });
  assert.equal(again.bridge!.spec.id, a.bridge!.spec.id);
  assert.equal(again.bridge!.generation, a.bridge!.generation, 'unchanged options: no new generation');
  assert.equal(store.list(Networks).length, 3);

  const moved = await ensureDefaultNetwork(store, { bridge: br, bip: '10.213.6.1/24', mtu: 1400, icc: false });
  assert.equal(moved.bridge!.spec.id, a.bridge!.spec.id);
  assert.ok(moved.bridge!.generation > a.bridge!.generation);
  assert.equal(moved.bridge!.spec.bridge!.mtu, 1400);
  assert.equal(moved.bridge!.spec.options['com.docker.network.bridge.enable_icc'], 'false');

  // Defaults: engine0, 172.17.0.1/16.
  const d = await ensureDefaultNetwork(new FakeStore(), {});
  assert.deepEqual(d.bridge!.spec.ipam.Config, [{ Subnet: '172.17.0.0/16', Gateway: '172.17.0.1' }]);
  assert.equal(d.bridge!.spec.bridge!.bridgeName, 'engine0');

  // -b with a user-made bridge and no --bip: its address.
  const u = await ensureDefaultNetwork(new FakeStore(), { bridge: 'mybr0' }, {
    driver: { inspectBridge: async () => ({ ipv4: ['10.213.7.1/24'], isBridge: true }) },
  });
  assert.deepEqual(u.bridge!.spec.ipam.Config, [{ Subnet: '10.213.7.0/24', Gateway: '10.213.7.1' }]);

  // --bridge none: the bridge record goes away (marked removed for the reconciler).
  const none = await ensureDefaultNetwork(store, { bridge: 'none' });
  assert.equal(none.bridge, null);
  assert.equal(store.get(Networks, a.bridge!.name)!.spec.desired, 'removed');

  await assert.rejects(ensureDefaultNetwork(new FakeStore(), { bip: '10.213.5.1/24', fixedCidr: '10.213.9.0/25' }), (e) => isCode(e, 'InvalidArgument'));
  await assert.rejects(ensureDefaultNetwork(new FakeStore(), { bip: '10.213.5.1/24', defaultGateway: '10.1.1.1' }), (e) => isCode(e, 'InvalidArgument'));
});

test('allocate hands out the lowest free address after the gateway, reuses and releases', async () => {
  const store = new FakeStore();
  const { bridge } = await ensureDefaultNetwork(store, { bridge: `entest${suffix()}`, bip: '10.213.5.1/24' });
  const att = new NetworkAttacher(store, noDriver, silentLog);
  for (let i = 1; i <= 4; i++) addContainer(store, cid(i));

  const e1 = (await att.allocate(cid(1), 'default'))!;
  assert.deepEqual(e1, {
    IPAMConfig: null,
    Links: null,
    Aliases: null,
    MacAddress: '02:42:0a:d5:05:02',
    DriverOpts: null,
    NetworkID: bridge!.spec.id,
    EndpointID: e1.EndpointID,
    Gateway: '10.213.5.1',
    IPAddress: '10.213.5.2',
    IPPrefixLen: 24,
    IPv6Gateway: '',
    GlobalIPv6Address: '',
    GlobalIPv6PrefixLen: 0,
    DNSNames: null,
  });
  assert.match(e1.EndpointID, /^[0-9a-f]{64}$/);
  assert.equal((await att.allocate(cid(2), ''))!.IPAddress, '10.213.5.3');
  assert.equal((await att.allocate(cid(1), 'bridge'))!.IPAddress, '10.213.5.2', 'same container keeps its address');
  assert.equal(store.list(IpamAllocations).length, 2);

  // Removal frees the address; the next container gets the lowest free one.
  await att.release(cid(1));
  await att.release(cid(1));
  assert.equal((await att.allocate(cid(3), 'default'))!.IPAddress, '10.213.5.2');

  // "Restart": a new attacher over the same store sees every claim.
  const att2 = new NetworkAttacher(store, noDriver, silentLog);
  assert.equal((await att2.allocate(cid(2), 'default'))!.IPAddress, '10.213.5.3');
  assert.equal((await att2.allocate(cid(4), 'default'))!.IPAddress, '10.213.5.4');

  const rec = store.get(IpamAllocations, `${bridge!.spec.id}/10.213.5.4`)!;
  assert.equal(rec.spec.containerId, cid(4));
});

test('many containers at once never share an address', async () => {
  const store = new FakeStore();
  await ensureDefaultNetwork(store, { bridge: `entest${suffix()}`, bip: '10.213.5.1/24' });
  const att = new NetworkAttacher(store, noDriver, silentLog);
  const ids = Array.from({ length: 60 }, (_, i) => cid(i + 10));
  const eps = await Promise.all(ids.map((id) => att.allocate(id, 'default')));
  const ips = eps.map((e) => e!.IPAddress);
  assert.equal(new Set(ips).size, ids.length);
  assert.ok(!ips.includes('10.213.5.1') && !ips.includes('10.213.5.0'));
});

test('fixed-cidr, default-gateway and an exhausted pool', async () => {
  const store = new FakeStore();
  await ensureDefaultNetwork(store, { bridge: `entest${suffix()}`, bip: '10.213.5.1/24', fixedCidr: '10.213.5.128/25', defaultGateway: '10.213.5.129' });
  const att = new NetworkAttacher(store, noDriver, silentLog);
  const e = (await att.allocate(cid(1), 'default'))!;
  assert.equal(e.IPAddress, '10.213.5.128');
  assert.equal(e.Gateway, '10.213.5.129');
  assert.equal((await att.allocate(cid(2), 'default'))!.IPAddress, '10.213.5.130', 'the default gateway is never handed out');

  const tiny = new FakeStore();
  await ensureDefaultNetwork(tiny, { bridge: `entest${suffix()}`, bip: '10.213.6.1/30' });
  const t = new NetworkAttacher(tiny, noDriver, silentLog);
  assert.equal((await t.allocate(cid(1), 'default'))!.IPAddress, '10.213.6.2');
  await assert.rejects(t.allocate(cid(2), 'default'), (err) => isCode(err, 'Unavailable'));
  assert.equal(tiny.list(IpamAllocations).length, 1);
});

test('--ipv6 --fixed-cidr-v6: the default bridge gets an IPv6 pool; containers an IPv6 address beside the IPv4 one', async () => {
  const store = new FakeStore();
  const d = await ensureDefaultNetwork(store, { bridge: `entest${suffix()}`, bip: '10.213.5.1/24', ipv6: true, fixedCidrV6: 'fd00:db8:5::/64', defaultGatewayV6: 'fd00:db8:5::fe' });
  assert.equal(d.bridge!.spec.enableIPv6, true);
  assert.deepEqual(d.bridge!.spec.ipam.Config[1], { Subnet: 'fd00:db8:5::/64', Gateway: 'fd00:db8:5::1', AuxiliaryAddresses: { DefaultGatewayIPv6: 'fd00:db8:5::fe' } });
  const att = new NetworkAttacher(store, noDriver, silentLog);
  const e1 = (await att.allocate(cid(1), 'default'))!;
  assert.equal(e1.IPAddress, '10.213.5.2');
  assert.deepEqual([e1.GlobalIPv6Address, e1.GlobalIPv6PrefixLen, e1.IPv6Gateway], ['fd00:db8:5::2', 64, 'fd00:db8:5::fe']);
  assert.equal((await att.allocate(cid(1), 'default'))!.GlobalIPv6Address, 'fd00:db8:5::2', 'same container keeps its address');
  assert.equal((await att.allocate(cid(2), 'default'))!.GlobalIPv6Address, 'fd00:db8:5::3');
  assert.equal(store.list(IpamAllocations).length, 4);
  await att.release(cid(1));
  assert.equal((await att.allocate(cid(3), 'default'))!.GlobalIPv6Address, 'fd00:db8:5::2', 'released addresses are handed out again');
  // A static IPv6 address only on user-defined networks, as for IPv4.
  await assert.rejects(att.allocate(cid(4), 'default', { ipv6: 'fd00:db8:5::99' }), (e) => isCode(e, 'InvalidArgument'));
  // Without --ipv6 the subnet is ignored; a gateway outside it is refused.
  const off = await ensureDefaultNetwork(new FakeStore(), { bip: '10.213.5.1/24', fixedCidrV6: 'fd00:db8:5::/64' });
  assert.equal(off.bridge!.spec.ipam.Config.length, 1);
  await assert.rejects(ensureDefaultNetwork(new FakeStore(), { bip: '10.213.5.1/24', ipv6: true, fixedCidrV6: 'fd00:db8:5::/64', defaultGatewayV6: 'fd00:1::1' }), (e) => isCode(e, 'InvalidArgument'));
});

test('a changed --bip moves a container to the new subnet', async () => {
  const store = new FakeStore();
  const br = `entest${suffix()}`;
  await ensureDefaultNetwork(store, { bridge: br, bip: '10.213.5.1/24' });
  const att = new NetworkAttacher(store, noDriver, silentLog);
  assert.equal((await att.allocate(cid(1), 'default'))!.IPAddress, '10.213.5.2');
  await ensureDefaultNetwork(store, { bridge: br, bip: '10.213.8.1/24' });
  assert.equal((await att.allocate(cid(1), 'default'))!.IPAddress, '10.213.8.2');
  assert.equal(store.list(IpamAllocations).length, 1);
});

test('host, none, container: and unknown network modes', async () => {
  const store = new FakeStore();
  const nets = await ensureDefaultNetwork(store, { bridge: `entest${suffix()}`, bip: '10.213.5.1/24' });
  const att = new NetworkAttacher(store, noDriver, silentLog);
  assert.equal(await att.allocate(cid(1), 'host'), null);
  assert.equal(await att.allocate(cid(1), 'none'), null);
  const h = att.endpointFor(cid(1), 'host')!;
  assert.equal(h.NetworkID, nets.host.spec.id);
  assert.equal(h.IPAddress, '');
  assert.equal(h.Gateway, '');
  assert.equal(h.MacAddress, '');
  assert.equal(att.endpointFor(cid(1), 'none')!.NetworkID, nets.none.spec.id);
  assert.equal(att.endpointFor(cid(1), 'default'), null);
  assert.equal(await att.allocate(cid(1), 'container:abc'), null);
  assert.equal(store.list(IpamAllocations).length, 0);
  await assert.rejects(att.allocate(cid(1), 'mynet'), (e) => isCode(e, 'NotFound'));
  assert.equal(att.networkNameFor('default'), 'bridge');
  assert.deepEqual(resolveNetworkMode('container:web'), { kind: 'container', networkName: null, target: 'web' });
  assert.deepEqual(resolveNetworkMode('appnet'), { kind: 'user', networkName: 'appnet' });
  assert.equal(hostVethName(cid(171)), 'vethabababababa');

  // With --bridge none, the default mode means none.
  await ensureDefaultNetwork(store, { bridge: 'none' });
  const b = findNetworkByName(store, 'bridge');
  assert.equal(b, undefined);
  assert.equal(att.networkNameFor('default'), 'none');
  assert.equal(await att.allocate(cid(1), 'default'), null);
  assert.equal(att.endpointFor(cid(1), 'default')!.NetworkID, nets.none.spec.id);
});

test('claims survive a daemon restart with the real store', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'entest-ipam-'));
  const path = join(dir, 'store.db');
  const br = `entest${suffix()}`;
  try {
    let store = openStore(path);
    const first = await ensureDefaultNetwork(store, { bridge: br, bip: '10.213.5.1/24' });
    let att = new NetworkAttacher(store, noDriver, silentLog);
    assert.equal((await att.allocate(cid(1), 'default'))!.IPAddress, '10.213.5.2');
    assert.equal((await att.allocate(cid(2), 'default'))!.IPAddress, '10.213.5.3');
    await att.release(cid(1));
    assert.equal((await att.allocate(cid(3), 'default'))!.IPAddress, '10.213.5.2');
    store.close();

    store = openStore(path);
    const second = await ensureDefaultNetwork(store, { bridge: br, bip: '10.213.5.1/24' });
    assert.equal(second.bridge!.spec.id, first.bridge!.spec.id);
    att = new NetworkAttacher(store, noDriver, silentLog);
    assert.equal((await att.allocate(cid(2), 'default'))!.IPAddress, '10.213.5.3');
    assert.equal((await att.allocate(cid(3), 'default'))!.IPAddress, '10.213.5.2');
    assert.equal((await att.allocate(cid(4), 'default'))!.IPAddress, '10.213.5.4');
    store.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
