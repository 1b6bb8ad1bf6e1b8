// NetworkDns against an in-memory store: the names a container answers to on a network (its
// name, short id, the aliases of its endpoint record there), and where other names are asked (the
// asking container's own --dns, else the daemon's upstreams).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fakeLog } from '../controllers/fake-log.ts';
import { FakeStore } from './fake-store.ts';
import { NetworkDns } from '../../../reconcilers/network/dns.ts';
import { EMPTY_ENDPOINT_STATUS, endpointName, Endpoints } from '../../../store/kinds/endpoint.ts';
import { Networks } from '../../../store/kinds/network.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { loose } from '../store/test-kind.ts';


function world() {
  const store = new FakeStore();
  store.create(loose(Networks), 'N', { id: 'N', name: 'front', driver: 'bridge', desired: 'present' }, {});
  const run = (id: string, name: string, ip: string, dns: string[] | null, aliases: string[] = []) => {
    store.create(loose(Containers), id, { id, name: `/${name}`, hostConfig: { NetworkMode: 'front', Dns: dns } }, { phase: 'running', pid: 1, endpoint: { NetworkID: 'N', IPAddress: ip } });
    store.create(Endpoints, endpointName(id, 'N'), { containerId: id, networkId: 'N', networkName: 'front', config: { Aliases: aliases }, primary: true, desired: 'present' }, EMPTY_ENDPOINT_STATUS);
  };
  run('a'.repeat(64), 'web', '10.0.0.2', null, ['api']);
  run('b'.repeat(64), 'client', '10.0.0.3', ['10.9.9.9']);
  const dns = new NetworkDns(store, { start: async () => ({ close: async () => {} }) }, () => ['192.0.2.53'], fakeLog());
  return { store, dns };
}

test('a container answers to its name, short id and the aliases of its endpoint record', () => {
  const { store, dns } = world();
  const web = store.get(Containers, 'a'.repeat(64))!;
  assert.deepEqual(dns.namesOf(web as never, { id: 'N', name: 'front' }), ['web', 'a'.repeat(12), 'api']);
});

test("other names go to the asking container's own --dns, else to the daemon's upstreams", () => {
  const { dns } = world();
  assert.deepEqual(dns.upstreamsFor('N', '10.0.0.3'), ['10.9.9.9']);
  assert.deepEqual(dns.upstreamsFor('N', '10.0.0.2'), ['192.0.2.53']);
  assert.deepEqual(dns.upstreamsFor('N', '10.0.0.99'), ['192.0.2.53'], 'an address no container here has');
  assert.deepEqual(dns.upstreamsFor('N'), ['192.0.2.53']);
});

/**
 * Two networks, each with its server (front on 10.0.0.1, back on 10.1.0.1): `linker` has front as
 * its NetworkMode network and was connected to back with `--link other:alias`; `other` is on back only.
 */
async function twoNetworks() {
  const store = new FakeStore();
  const ipam = (subnet: string, gw: string) => ({ Driver: 'default', Options: null, Config: [{ Subnet: subnet, Gateway: gw }] });
  store.create(loose(Networks), 'F', { id: 'F', name: 'front', driver: 'bridge', desired: 'present', ipam: ipam('10.0.0.0/24', '10.0.0.1') }, {});
  store.create(loose(Networks), 'B', { id: 'B', name: 'back', driver: 'bridge', desired: 'present', ipam: ipam('10.1.0.0/24', '10.1.0.1') }, {});
  const linker = 'a'.repeat(64);
  const other = 'b'.repeat(64);
  store.create(loose(Containers), linker, { id: linker, name: '/linker', hostConfig: { NetworkMode: 'front' } }, { phase: 'running', pid: 11, endpoint: { NetworkID: 'F', IPAddress: '10.0.0.2' } });
  store.create(Endpoints, endpointName(linker, 'F'), { containerId: linker, networkId: 'F', networkName: 'front', config: {}, primary: true, desired: 'present' }, EMPTY_ENDPOINT_STATUS);
  const plugged = (pid: number, ip: string) => ({ ...EMPTY_ENDPOINT_STATUS, phase: 'attached' as const, pid, ifName: 'eth1', hostVeth: 'vx', addresses: { EndpointID: 'e', MacAddress: '', Gateway: '10.1.0.1', IPAddress: ip, IPPrefixLen: 24, IPv6Gateway: '', GlobalIPv6Address: '', GlobalIPv6PrefixLen: 0 } });
  store.create(Endpoints, endpointName(linker, 'B'), { containerId: linker, networkId: 'B', networkName: 'back', config: { Aliases: ['lnk'], Links: ['other:alias'] }, desired: 'present' }, plugged(11, '10.1.0.5'));
  store.create(loose(Containers), other, { id: other, name: '/other', hostConfig: { NetworkMode: 'back' } }, { phase: 'running', pid: 12, endpoint: { NetworkID: 'B', IPAddress: '10.1.0.2' } });
  store.create(Endpoints, endpointName(other, 'B'), { containerId: other, networkId: 'B', networkName: 'back', config: {}, primary: true, desired: 'present' }, EMPTY_ENDPOINT_STATUS);
  type Source = { lookup(name: string, type: 'A' | 'AAAA', from?: string): string[] | null; reverse?(ip: string, from?: string): string | null };
  const sources = new Map<string, Source>();
  const dns = new NetworkDns(store, { start: async (o) => (sources.set(o.address, o.source), { close: async () => {} }) }, () => [], fakeLog());
  await dns.ensure(store.get(Networks, 'F')!);
  await dns.ensure(store.get(Networks, 'B')!);
  return { front: sources.get('10.0.0.1')!, back: sources.get('10.1.0.1')! };
}

test('a link given at connect resolves on the server of the linking container\'s own network (127.0.0.11 goes there)', async () => {
  const { front, back } = await twoNetworks();
  assert.deepEqual(front.lookup('alias', 'A', '10.0.0.2'), ['10.1.0.2'], 'asked from its front address');
  assert.deepEqual(back.lookup('alias', 'A', '10.1.0.5'), ['10.1.0.2'], 'asked on back directly');
  assert.equal(front.lookup('alias', 'A'), null, 'nobody known asking');
  assert.equal(back.lookup('alias', 'A', '10.1.0.2'), null, 'the link is the linking container\'s alone');
});

test("a container's names on its other networks: answered to it, not to the others of the network asked", async () => {
  const { front, back } = await twoNetworks();
  assert.deepEqual(front.lookup('other', 'A', '10.0.0.2'), ['10.1.0.2']);
  assert.deepEqual(front.lookup('linker', 'A', '10.0.0.2'), ['10.0.0.2'], 'the network asked comes first');
  assert.deepEqual(back.lookup('lnk', 'A', '10.1.0.2'), ['10.1.0.5'], 'an alias given at connect');
  assert.equal(front.lookup('lnk', 'A', '10.0.0.99'), null);
  assert.equal(front.reverse?.('10.1.0.2', '10.0.0.2'), 'other.back');
  assert.equal(front.reverse?.('10.1.0.2'), null);
});
