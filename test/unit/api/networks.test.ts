// Network routes against the real store holding the daemon's builtin networks, as
// ensureDefaultNetwork writes them at start-up, and containers with and without endpoints.
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { networkRoutes, USER_DEFINED_UNSUPPORTED } from '../../../api/networks/routes.ts';
import { ensureDefaultNetwork } from '../../../reconcilers/network/default-network.ts';
import { type ContainerEndpoint, type ContainerStatus, Containers } from '../../../store/kinds/container.ts';

import { EMPTY_ENDPOINT_STATUS, endpointName, Endpoints } from '../../../store/kinds/endpoint.ts';
import type { Store } from '../../../store/store.ts';
import { containerRecord } from '../container/fake-world.ts';
import { routeHarness } from './route-harness.ts';
import { Networks } from '../../../store/kinds/network.ts';

const cid = (n: number) => n.toString(16).padStart(2, '0').repeat(32);

/** The network routes on a fresh real store holding the builtin networks; closed when the test ends. */
async function setup(t: TestContext, opts: { bridge?: boolean } = {}) {
  const h = await routeHarness((store) => [networkRoutes({ store })]);
  t.after(() => h.close());
  const nets = await ensureDefaultNetwork(h.store, opts.bridge === false ? { bridge: 'none' } : { bridge: 'etunit0', bip: '10.231.7.1/24' });
  return { store: h.store, app: h.app, nets };
}

function addContainer(store: Store, n: number, name: string, mode: string, phase: ContainerStatus['phase'], endpoint?: ContainerEndpoint): string {
  const id = cid(n);
  const r = containerRecord(id, { spec: { name: `/${name}`, desired: 'running' }, hostConfig: { NetworkMode: mode }, status: { phase, endpoint: endpoint ?? null } });
  store.create(Containers, id, r.spec, r.status);
  // As create writes it: the record of its NetworkMode network, when that is a bridge network.
  const net = store.list(Networks).find((x) => x.spec.name === (mode === 'default' ? 'bridge' : mode) && x.spec.driver === 'bridge' && x.spec.desired !== 'removed');
  if (net) store.create(Endpoints, endpointName(id, net.spec.id), { containerId: id, networkId: net.spec.id, networkName: net.spec.name, config: {}, primary: true, desired: 'present' }, EMPTY_ENDPOINT_STATUS);
  return id;
}

function endpointOn(networkId: string, ip: string): ContainerEndpoint {
  return { NetworkID: networkId, EndpointID: 'e'.repeat(64), Gateway: '10.231.7.1', IPAddress: ip, IPPrefixLen: 24, MacAddress: '02:42:0a:e7:07:02' };
}

describe('network routes', () => {
  test('GET /networks lists bridge, host and none in the reference shape', async (t) => {
    const { app, nets } = await setup(t);
    for (const url of ['/networks', '/networks/', '/v1.47/networks']) {
      const r = await app.inject(url);
      assert.equal(r.statusCode, 200, url);
      assert.equal(r.headers['content-type'], 'application/json');
      const list = r.json() as Array<Record<string, any>>;
      assert.deepEqual(list.map((n) => n.Name), ['bridge', 'host', 'none']);
      const bridge = list[0];
      assert.equal(bridge.Id, nets.bridge!.spec.id);
      assert.equal(bridge.Driver, 'bridge');
      assert.equal(bridge.Scope, 'local');
      assert.deepEqual(bridge.IPAM, { Driver: 'default', Options: null, Config: [{ Subnet: '10.231.7.0/24', Gateway: '10.231.7.1' }] });
      assert.deepEqual(bridge.ConfigFrom, { Network: '' });
      assert.equal(bridge.ConfigOnly, false);
      assert.deepEqual(bridge.Containers, {});
      assert.deepEqual(bridge.Labels, {});
      assert.deepEqual(bridge.Options, {
        'com.docker.network.bridge.default_bridge': 'true',
        'com.docker.network.bridge.enable_icc': 'true',
        'com.docker.network.bridge.enable_ip_masquerade': 'true',
        'com.docker.network.bridge.host_binding_ipv4': '0.0.0.0',
        'com.docker.network.bridge.name': 'etunit0',
        'com.docker.network.driver.mtu': '1500',
      });
      assert.equal(list[1].Driver, 'host');
      assert.equal(list[2].Driver, 'null');
      assert.deepEqual(list[2].Options, {});
      assert.deepEqual(list[2].IPAM.Config, []);
    }
  });

  test('without a default bridge there is no bridge network', async (t) => {
    const { app } = await setup(t, { bridge: false });
    assert.deepEqual((await app.inject('/networks')).json().map((n: { Name: string }) => n.Name), ['host', 'none']);
    const r = await app.inject('/networks/bridge');
    assert.equal(r.statusCode, 404);
    assert.deepEqual(r.json(), { message: 'network bridge not found' });
  });

  test('list filters', async (t) => {
    const { app, nets, store } = await setup(t);
    const names = async (filters: unknown) => {
      const r = await app.inject({ url: '/networks', query: { filters: JSON.stringify(filters) } });
      assert.equal(r.statusCode, 200, r.body);
      return r.json().map((n: { Name: string }) => n.Name);
    };
    assert.deepEqual(await names({ name: ['bridge'] }), ['bridge']);
    assert.deepEqual(await names({ name: { o: true } }), ['host', 'none'], 'name matches part of the name');
    assert.deepEqual(await names({ driver: ['null'] }), ['none']);
    assert.deepEqual(await names({ driver: ['nul'] }), [], 'driver is an exact match');
    assert.deepEqual(await names({ id: [nets.host.spec.id.slice(0, 10)] }), ['host']);
    assert.deepEqual(await names({ type: ['builtin'] }), ['bridge', 'host', 'none']);
    assert.deepEqual(await names({ type: ['custom'] }), []);
    assert.deepEqual(await names({ scope: ['local'] }), ['bridge', 'host', 'none']);
    assert.deepEqual(await names({ scope: ['swarm'] }), []);
    assert.deepEqual(await names({ label: ['a=b'] }), []);
    assert.deepEqual(await names({ dangling: ['true'] }), [], 'builtin networks are never dangling');
    assert.deepEqual(await names({ dangling: ['0'] }), ['bridge', 'host', 'none']);
    assert.deepEqual(await names({}), ['bridge', 'host', 'none']);

    for (const [filters, message] of [
      [{ color: ['red'] }, "invalid filter 'color'"],
      [{ type: ['weird'] }, "invalid filter: 'type'='weird'"],
      [{ dangling: ['maybe'] }, `invalid value for filter 'dangling', must be "true" (or "1"), or "false" (or "0")`],
      [{ dangling: ['true', 'false'] }, 'got more than one value for filter key "dangling"'],
    ] as const) {
      const r = await app.inject({ url: '/networks', query: { filters: JSON.stringify(filters) } });
      assert.equal(r.statusCode, 400);
      assert.equal(r.json().message, message);
    }
    const bad = await app.inject({ url: '/networks', query: { filters: '{not json' } });
    assert.equal(bad.statusCode, 400);
    assert.equal(store.list(Networks).length, 3);
  });

  test('GET /networks/{id} by name, full id and unique prefix; Containers holds running containers', async (t) => {
    const { app, nets, store } = await setup(t);
    const bridgeId = nets.bridge!.spec.id;
    const web = addContainer(store, 1, 'web', 'default', 'running', endpointOn(bridgeId, '10.231.7.2'));
    addContainer(store, 2, 'stopped', 'default', 'exited', endpointOn(bridgeId, '10.231.7.3'));
    const h = addContainer(store, 3, 'onhost', 'host', 'running');
    addContainer(store, 4, 'quiet', 'none', 'running');

    for (const ref of ['bridge', bridgeId, bridgeId.slice(0, 12)]) {
      const r = await app.inject(`/networks/${ref}?verbose=false&scope=local`);
      assert.equal(r.statusCode, 200, ref);
      const n = r.json();
      assert.equal(n.Name, 'bridge');
      assert.deepEqual(n.Containers, {
        [web]: { Name: 'web', EndpointID: 'e'.repeat(64), MacAddress: '02:42:0a:e7:07:02', IPv4Address: '10.231.7.2/24', IPv6Address: '' },
      });
    }
    const host = (await app.inject('/networks/host')).json();
    assert.deepEqual(Object.keys(host.Containers), [h]);
    assert.equal(host.Containers[h].Name, 'onhost');
    assert.match(host.Containers[h].EndpointID, /^[0-9a-f]{64}$/);
    assert.equal(host.Containers[h].IPv4Address, '');
    assert.deepEqual(Object.values((await app.inject('/networks/none')).json().Containers).map((c: any) => c.Name), ['quiet']);

    // Lists leave Containers empty (API >= 1.28), older versions fill it.
    assert.deepEqual((await app.inject('/networks')).json()[0].Containers, {});
    assert.deepEqual(Object.keys((await app.inject('/v1.27/networks')).json()[0].Containers), [web]);
  });

  test('GET /networks/{id} errors', async (t) => {
    const { app } = await setup(t);
    const missing = await app.inject('/networks/nope');
    assert.equal(missing.statusCode, 404);
    assert.deepEqual(missing.json(), { message: 'network nope not found' });
    assert.equal((await app.inject('/networks/bridge?scope=swarm')).statusCode, 404);
    const verbose = await app.inject('/networks/bridge?verbose=maybe');
    assert.equal(verbose.statusCode, 400);
    assert.match(verbose.json().message, /^invalid value for verbose: maybe/);
    assert.equal((await app.inject('/networks/bridge?verbose=1')).statusCode, 200);
  });

  test('builtin networks cannot be removed', async (t) => {
    const { app, store } = await setup(t);
    for (const name of ['bridge', 'host', 'none']) {
      const r = await app.inject({ method: 'DELETE', url: `/networks/${name}` });
      assert.equal(r.statusCode, 403);
      assert.deepEqual(r.json(), { message: `${name} is a pre-defined network and cannot be removed` });
    }
    const missing = await app.inject({ method: 'DELETE', url: '/networks/nope' });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().message, 'network nope not found');
    assert.equal(store.list(Networks).length, 3);
  });

  test('POST /networks/create', async (t) => {
    const { app, store } = await setup(t);
    const builtin = await app.inject({ method: 'POST', url: '/networks/create', payload: { Name: 'bridge', Driver: 'bridge' } });
    assert.equal(builtin.statusCode, 403);
    assert.equal(builtin.json().message, 'operation is not permitted on predefined bridge network ');
    // Without the daemon's network defaults (this app has none), user-defined networks are refused.
    const custom = await app.inject({ method: 'POST', url: '/networks/create', payload: { Name: 'mynet', Driver: 'bridge', Labels: { a: 'b' } } });
    assert.equal(custom.statusCode, 400);
    assert.equal(custom.json().message, USER_DEFINED_UNSUPPORTED);
    const badIpam = await app.inject({ method: 'POST', url: '/networks/create', payload: { Name: 'x', IPAM: { Config: [{ Subnet: 7 }] } } });
    assert.equal(badIpam.statusCode, 400);
    assert.match(badIpam.json().message, /^invalid JSON: IPAM.Config.0.Subnet/);
    const lower = await app.inject({ method: 'POST', url: '/networks/create', payload: { name: 'host' } });
    assert.equal(lower.statusCode, 403, 'keys match case-insensitively');
    for (const payload of ['{"Name": 5}', '[]', '"x"', '{"Name":"a","Labels":{"x":1}}']) {
      const r = await app.inject({ method: 'POST', url: '/networks/create', headers: { 'content-type': 'application/json' }, payload });
      assert.equal(r.statusCode, 400, payload);
      assert.equal(typeof r.json().message, 'string');
    }
    const broken = await app.inject({ method: 'POST', url: '/networks/create', headers: { 'content-type': 'application/json' }, payload: '{"Name":' });
    assert.equal(broken.statusCode, 400);
    const empty = await app.inject({ method: 'POST', url: '/networks/create' });
    assert.equal(empty.statusCode, 400);
    assert.equal(store.list(Networks).length, 3);
  });

  test('connect and disconnect on builtin networks', async (t) => {
    const { app, store } = await setup(t);
    const nets = (await app.inject('/networks')).json();
    const bridgeId = nets[0].Id;
    addContainer(store, 1, 'web', 'default', 'running', endpointOn(bridgeId, '10.231.7.2'));
    addContainer(store, 2, 'idle', 'bridge', 'created');
    addContainer(store, 3, 'onhost', 'host', 'running');
    addContainer(store, 4, 'quiet', 'none', 'exited');
    const post = (path: string, payload: unknown) => app.inject({ method: 'POST', url: path, payload: payload as object });

    const cases: Array<[string, unknown, number, string | RegExp]> = [
      ['/networks/bridge/connect', { Container: 'web' }, 403, 'endpoint with name web already exists in network bridge'],
      ['/networks/host/connect', { Container: 'web' }, 400, 'cannot connect container to host network - container must be created in host network mode'],
      ['/networks/none/connect', { Container: 'web' }, 400, 'container cannot be connected to multiple networks with one of the networks in private (none) mode'],
      ['/networks/bridge/connect', { Container: 'onhost' }, 400, 'container sharing network namespace with another container or host cannot be connected to any other network'],
      ['/networks/bridge/connect', { Container: 'quiet' }, 400, 'container cannot be connected to multiple networks with one of the networks in private (none) mode'],
      ['/networks/bridge/connect', { Container: 'nobody' }, 404, 'No such container: nobody'],
      ['/networks/nonet/connect', { Container: 'web' }, 404, 'network nonet not found'],
      ['/networks/bridge/connect', {}, 400, 'invalid name or ID supplied: ""'],
      ['/networks/bridge/connect', { Container: 7 }, 400, /^invalid JSON/],
      ['/networks/host/disconnect', { Container: 'onhost' }, 400, 'container cannot be disconnected from host network or connected to host network'],
      ['/networks/none/disconnect', { Container: 'web', Force: true }, 400, `container ${cid(1)} is not connected to network none`],
      ['/networks/bridge/disconnect', { Container: 'nobody' }, 404, 'No such container: nobody'],
      ['/networks/bridge/disconnect', { Container: 'web', Force: 'yes' }, 400, /^invalid JSON/],
    ];
    for (const [path, payload, status, message] of cases) {
      const r = await post(path, payload);
      assert.equal(r.statusCode, status, `${path} ${JSON.stringify(payload)}: ${r.body}`);
      if (typeof message === 'string') assert.equal(r.json().message, message);
      else assert.match(r.json().message, message);
    }
    // A stopped container already on the network: its settings are the new ones.
    const idle = await post('/networks/bridge/connect', { Container: 'idle', EndpointConfig: { MacAddress: '02:42:00:00:00:09' } });
    assert.equal(idle.statusCode, 200);
    assert.equal(idle.body, '');
    const rec = () => store.get(Endpoints, endpointName(cid(2), bridgeId));
    assert.equal(rec()!.spec.config.MacAddress, '02:42:00:00:00:09');
    // Disconnected from its NetworkMode network while stopped: the record is marked removed (the reconciler deletes it).
    const off = await post('/networks/bridge/disconnect', { Container: 'idle' });
    assert.equal(off.statusCode, 200, off.body);
    assert.equal(rec()!.spec.desired, 'removed');
    const twice = await post('/networks/bridge/disconnect', { Container: 'idle' });
    assert.equal(twice.statusCode, 400);
    assert.equal(twice.json().message, `container ${cid(2)} is not connected to network bridge`);
  });

  test('POST /networks/prune with only builtin networks deletes nothing', async (t) => {
    const { app, store } = await setup(t);
    const r = await app.inject({ method: 'POST', url: '/networks/prune' });
    assert.equal(r.statusCode, 200);
    assert.deepEqual(r.json(), { NetworksDeleted: null });
    const f = await app.inject({ method: 'POST', url: '/networks/prune', query: { filters: JSON.stringify({ until: ['10m'], label: ['a'] }) } });
    assert.equal(f.statusCode, 200);
    const bad = await app.inject({ method: 'POST', url: '/networks/prune', query: { filters: JSON.stringify({ dangling: ['true'] }) } });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().message, "invalid filter 'dangling'");
    const old = await app.inject({ method: 'POST', url: '/v1.24/networks/prune' });
    assert.equal(old.statusCode, 400);
    assert.equal(old.json().message, 'POST /v1.24/networks/prune requires minimum API version 1.25');
    assert.equal(store.list(Networks).length, 3);
  });
});
