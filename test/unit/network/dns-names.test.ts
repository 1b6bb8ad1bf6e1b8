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
