// One table of create requests run two ways: through the API's create routes (app.inject on the
// real store) and through the stack reconciler's writes (reconcilers/stack/engine.ts). Both go
// through admission/, so each case is refused with the same class and message, and nothing is
// written; a request admitted both ways writes the same defaults, the stack's with its owner.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AdmissionDeps } from '../../../admission/containers/admit.ts';
import type { CreateDefaults } from '../../../admission/containers/create-request.ts';
import type { NetworkDefaults } from '../../../admission/networks/network-spec.ts';
import { containerRoutes, type ContainerRouteDeps } from '../../../api/containers/routes.ts';
import { networkRoutes } from '../../../api/networks/routes.ts';
import { checkNetworkRemovable } from '../../../api/networks/views.ts';
import { volumeRoutes } from '../../../api/volumes/routes.ts';
import { errorCode, notFound } from '../../../lib/errors.ts';
import { storeEngine, type StackEngine } from '../../../reconcilers/stack/engine.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { Networks } from '../../../store/kinds/network.ts';
import { Volumes } from '../../../store/kinds/volume.ts';
import { routeHarness, type RouteHarness } from '../api/route-harness.ts';

const containerDefaults: CreateDefaults = {
  runtime: 'stdrt',
  hasRuntime: (n) => n === 'stdrt',
  shmSize: 64 * 1024 * 1024,
  logConfig: { Type: 'json-file', Config: {} },
  validateLogConfig: () => {},
  validateBind: () => {},
};
const networkDefaults: NetworkDefaults = { mtu: 1500, iptables: false, ip6tables: false, ipForward: true, userlandProxy: true, chainPrefix: 'ENGINE', pools: [], driverOpts: {}, hostRoutes: () => [] };
const IMAGE = { kind: 'image', name: 'sha256:' + 'e'.repeat(64), spec: { rawConfig: JSON.stringify({ config: { Cmd: ['sh'], Env: ['PATH=/bin'] } }) } } as never;
const resolveImage = (ref: string) => {
  if (ref === 'busybox') return IMAGE;
  throw notFound(`No such image: ${ref}:latest`);
};

let h: RouteHarness;
let engine: StackEngine;
const HTTP: Record<string, number> = { InvalidArgument: 400, PermissionDenied: 403, NotFound: 404, Conflict: 409 };

before(async () => {
  h = await routeHarness((store) => {
    const deps = { store, resolveImage, defaults: containerDefaults, waitTimeoutMs: 200 } as unknown as ContainerRouteDeps;
    return [containerRoutes(deps), networkRoutes({ store, defaults: networkDefaults, waitTimeoutMs: 200 }), volumeRoutes({ store, waitTimeoutMs: 200 } as never)];
  });
  const containers: AdmissionDeps = { store: h.store, resolveImage, defaults: containerDefaults };
  engine = storeEngine({ containers, networks: { store: h.store, defaults: networkDefaults }, checkNetworkRemovable: (net) => checkNetworkRemovable(h.store, net) });
  // What the cases clash with: a container named taken, a network named used.
  engine.runContainer('fixture', 'taken', { Image: 'busybox' });
  engine.createNetwork('fixture', { Name: 'used' });
});
after(() => h.close());

type Case = { what: string; url: string; body: Record<string, unknown>; viaStack: () => unknown; status: number; message: RegExp | string };

const containerCase = (what: string, body: Record<string, unknown>, status: number, message: RegExp | string, name = 'fresh'): Case => ({
  what, url: `/containers/create?name=${name}`, body, viaStack: () => engine.runContainer('shop', name, body), status, message,
});

const CASES: Case[] = [
  containerCase('no image', { Cmd: ['true'] }, 400, 'No image was specified'),
  containerCase('an image that is not here', { Image: 'nosuch' }, 404, 'No such image: nosuch:latest'),
  containerCase('a bad MAC address', { Image: 'busybox', MacAddress: 'zz' }, 400, 'invalid MAC address: zz'),
  containerCase('a NetworkMode network that does not exist', { Image: 'busybox', HostConfig: { NetworkMode: 'nonet' } }, 400, /network nonet not found/),
  containerCase('an EndpointsConfig network that does not exist', { Image: 'busybox', NetworkingConfig: { EndpointsConfig: { nonet: {} } } }, 404, /network nonet not found/),
  containerCase('a name in use', { Image: 'busybox' }, 409, /The container name "\/taken" is already in use/, 'taken'),
  containerCase('too little memory', { Image: 'busybox', HostConfig: { Memory: 1000 } }, 400, /Minimum memory limit allowed is 6MB/),
  containerCase('an unknown runtime', { Image: 'busybox', HostConfig: { Runtime: 'nort' } }, 400, /unknown or invalid runtime name: nort/),
  { what: 'a predefined network name', url: '/networks/create', body: { Name: 'bridge' }, viaStack: () => engine.createNetwork('shop', { Name: 'bridge' }), status: 403, message: 'operation is not permitted on predefined bridge network ' },
  { what: 'a network name in use', url: '/networks/create', body: { Name: 'used' }, viaStack: () => engine.createNetwork('shop', { Name: 'used' }), status: 409, message: 'network with name used already exists' },
  { what: 'a subnet that is not a network address', url: '/networks/create', body: { Name: 'n2', IPAM: { Config: [{ Subnet: '10.9.0.1/16' }] } }, viaStack: () => engine.createNetwork('shop', { Name: 'n2', IPAM: { Config: [{ Subnet: '10.9.0.1/16' }] } }), status: 400, message: 'invalid subnet 10.9.0.1/16: it should be 10.9.0.0/16' },
  { what: 'a bad volume name', url: '/volumes/create', body: { Name: 'a/b' }, viaStack: () => engine.createVolume('shop', { Name: 'a/b' }), status: 400, message: /^create a\/b: / },
  { what: 'a volume driver that is not here', url: '/volumes/create', body: { Name: 'v1', Driver: 'nodrv' }, viaStack: () => engine.createVolume('shop', { Name: 'v1', Driver: 'nodrv' }), status: 404, message: /plugin "nodrv" not found/ },
];

const counts = () => [Containers, Networks, Volumes].map((k) => h.store.list(k).length).join('/');

for (const c of CASES) {
  test(`refused the same through the API and through a stack: ${c.what}`, async () => {
    const before = counts();
    const res = await h.app.inject({ method: 'POST', url: c.url, payload: c.body });
    assert.equal(res.statusCode, c.status, `API: ${res.body}`);
    const apiMessage = res.json().message as string;
    if (typeof c.message === 'string') assert.equal(apiMessage, c.message);
    else assert.match(apiMessage, c.message);
    let thrown: unknown;
    try {
      c.viaStack();
    } catch (err) {
      thrown = err;
    }
    assert.ok(thrown, 'the stack write is refused too');
    assert.equal(HTTP[errorCode(thrown)], c.status, `stack: ${errorCode(thrown)} ${(thrown as Error).message}`);
    assert.equal((thrown as Error).message, apiMessage);
    assert.equal(counts(), before, 'nothing written either way');
  });
}

test('admitted both ways: the same defaults; the stack’s replica names its owner and is asked to run', async () => {
  const body = { Image: 'busybox', Labels: { a: 'b' }, HostConfig: { Memory: 64 * 1024 * 1024 } };
  const res = await h.app.inject({ method: 'POST', url: '/containers/create?name=viaapi', payload: body });
  // The route then waits for the reconciler (none here): the record is what admission wrote.
  assert.ok([201, 500, 503].includes(res.statusCode));
  const id = engine.runContainer('shop', 'viastack', body);
  const stackRec = h.store.get(Containers, id)!;
  const apiRec = h.store.list(Containers).find((c) => c.spec.name === '/viaapi');
  assert.ok(apiRec, 'the API wrote its record');
  assert.deepEqual(stackRec.spec.hostConfig, apiRec.spec.hostConfig);
  assert.deepEqual({ ...stackRec.spec.config, Hostname: '' }, { ...apiRec.spec.config, Hostname: '' });
  assert.equal(apiRec.spec.ownerRef, undefined);
  assert.deepEqual(stackRec.spec.ownerRef, { kind: 'stack', name: 'shop' });
  assert.equal(stackRec.spec.desired, 'running');
  assert.equal(stackRec.spec.runGeneration, 1);
  assert.deepEqual(h.store.byIndex(Containers.indexes.owner!, 'stack/shop').map((c) => c.name), [id]);
});
