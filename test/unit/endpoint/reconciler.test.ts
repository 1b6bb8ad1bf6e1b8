// The EndpointReconciler against an in-memory store and a fake network port: plugged into the
// running container as eth1, eth2; detached when the run ends and plugged again into the next;
// a failed attach is retried; removal unplugs, frees the address and deletes the record; a
// container gone takes its endpoints with it; the migration of EndpointsConfig into records.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fakeLog } from '../controllers/fake-log.ts';
import { FakeStore } from '../network/fake-store.ts';
import { EndpointReconciler } from '../../../reconcilers/endpoint/reconciler.ts';
import { migrateEndpoints } from '../../../reconcilers/endpoint/migrate.ts';
import type { EndpointNetworkPort } from '../../../reconcilers/endpoint/deps.ts';
import { EMPTY_ENDPOINT_STATUS, endpointName, endpointsFromCreate, Endpoints } from '../../../store/kinds/endpoint.ts';
import { Networks } from '../../../store/kinds/network.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { loose } from '../store/test-kind.ts';


const ctx = { signal: new AbortController().signal, log: fakeLog() };

function world() {
  const store = new FakeStore();
  const calls: string[] = [];
  let failNext = '';
  const port: EndpointNetworkPort = {
    async attachExtra(cid, pid, nid, index, opts) {
      if (failNext) {
        const m = failNext;
        failNext = '';
        throw new Error(m);
      }
      calls.push(`attach ${nid} pid=${pid} eth${index}${opts.ipv4 ? ` ip=${opts.ipv4}` : ''}`);
      const addresses = { EndpointID: `ep-${nid}`, MacAddress: '02:42:00:00:00:02', Gateway: '', IPAddress: `10.${index}.0.2`, IPPrefixLen: 24, IPv6Gateway: '', GlobalIPv6Address: '', GlobalIPv6PrefixLen: 0 };
      return { ifName: `eth${index}`, hostVeth: `vx${cid}${index}`, addresses };
    },
    async unplugExtra(veth) {
      calls.push(`unplug ${veth}`);
    },
    releaseOn(cid, nid) {
      calls.push(`release ${cid} ${nid}`);
    },
  };
  for (const id of ['n1', 'n2']) store.create(loose(Networks), id, { id, name: `net-${id}`, driver: 'bridge', desired: 'present' }, {});
  const container = (phase: string, pid: number) => {
    if (store.get(loose(Containers), 'c')) store.updateStatus(loose(Containers), 'c', (s: object) => ({ ...s, phase, pid }));
    else store.create(loose(Containers), 'c', { id: 'c', hostConfig: { NetworkMode: 'bridge' } }, { phase, pid });
  };
  const endpoint = (nid: string, config = {}) =>
    store.create(Endpoints, endpointName('c', nid), { containerId: 'c', networkId: nid, networkName: `net-${nid}`, config, desired: 'present' }, EMPTY_ENDPOINT_STATUS);
  const status = (nid: string) => store.get(Endpoints, endpointName('c', nid))?.status;
  return { store, calls, port, container, endpoint, status, failWith: (m: string) => (failNext = m) };
}

describe('endpoint reconciler', () => {
  test('plugged into the running container as eth1 and eth2; detached when it stops; plugged again into the next run', async () => {
    const w = world();
    const r = new EndpointReconciler(w.store, w.port);
    w.container('created', 0);
    w.endpoint('n1', { IPAMConfig: { IPv4Address: '10.1.0.9' } });
    w.endpoint('n2');
    await r.reconcile('c/n1', ctx);
    assert.equal(w.status('n1')!.phase, 'detached');
    assert.equal(w.status('n1')!.conditions[0]!.reason, 'ContainerNotRunning');
    w.container('running', 100);
    await Promise.all([r.reconcile('c/n1', ctx), r.reconcile('c/n2', ctx)]);
    assert.deepEqual(w.calls.sort(), ['attach n1 pid=100 eth1 ip=10.1.0.9', 'attach n2 pid=100 eth2']);
    assert.equal(w.status('n2')!.phase, 'attached');
    assert.equal(w.status('n2')!.ifName, 'eth2');
    assert.equal(w.status('n2')!.conditions[0]!.status, 'True');
    w.calls.length = 0;
    await r.reconcile('c/n1', ctx);
    assert.deepEqual(w.calls, [], 'nothing to do while plugged into the current run');
    w.container('exited', 0);
    await r.reconcile('c/n1', ctx);
    assert.equal(w.status('n1')!.phase, 'detached');
    assert.equal(w.status('n1')!.pid, 0);
    w.container('running', 200);
    await r.reconcile('c/n1', ctx);
    assert.deepEqual(w.calls, ['attach n1 pid=200 eth1 ip=10.1.0.9']);
  });

  test('a stale attachment (a new run the reconciler did not see end) is plugged again; a restarted daemon keeps a current one', async () => {
    const w = world();
    w.container('running', 100);
    w.endpoint('n1');
    await new EndpointReconciler(w.store, w.port).reconcile('c/n1', ctx);
    w.calls.length = 0;
    await new EndpointReconciler(w.store, w.port).reconcile('c/n1', ctx);
    assert.deepEqual(w.calls, [], 'restored from status: plugged into pid 100 already');
    w.container('running', 300);
    await new EndpointReconciler(w.store, w.port).reconcile('c/n1', ctx);
    assert.deepEqual(w.calls, ['attach n1 pid=300 eth1']);
  });

  test('a failed attach is failed with the message, and retried', async () => {
    const w = world();
    const r = new EndpointReconciler(w.store, w.port);
    w.container('running', 100);
    w.endpoint('n1');
    w.failWith('Address already in use');
    await assert.rejects(r.reconcile('c/n1', ctx), /Address already in use/);
    assert.equal(w.status('n1')!.phase, 'failed');
    assert.equal(w.status('n1')!.error, 'Address already in use');
    await r.reconcile('c/n1', ctx);
    assert.equal(w.status('n1')!.phase, 'attached');
  });

  test('removal unplugs a live endpoint, frees its address, deletes the record; a container gone takes its endpoints', async () => {
    const w = world();
    const r = new EndpointReconciler(w.store, w.port);
    w.container('running', 100);
    w.endpoint('n1');
    w.endpoint('n2');
    await r.reconcile('c/n1', ctx);
    await r.reconcile('c/n2', ctx);
    w.calls.length = 0;
    w.store.updateSpec(Endpoints, 'c/n1', (s) => ({ ...s, desired: 'removed' }));
    await r.reconcile('c/n1', ctx);
    assert.deepEqual(w.calls, ['unplug vxc1', 'release c n1']);
    assert.equal(w.status('n1'), undefined);
    w.calls.length = 0;
    w.store.delete(Containers, 'c');
    await r.reconcile('c/n2', ctx);
    assert.deepEqual(w.calls, ['release c n2'], 'no run to unplug from');
    assert.equal(w.status('n2'), undefined);
  });

  test('a primary endpoint the start step plugged in is adopted (no attach); disconnected, it is unplugged; connected again while running, it is plugged as another interface', async () => {
    const w = world();
    const r = new EndpointReconciler(w.store, w.port);
    w.store.create(loose(Containers), 'c', { id: 'c', hostConfig: { NetworkMode: 'net-n1' } }, {
      phase: 'running', pid: 100, endpoint: { NetworkID: 'n1', EndpointID: 'e1', Gateway: '10.0.0.1', IPAddress: '10.0.0.2', IPPrefixLen: 24, MacAddress: 'm' },
    });
    w.store.create(Endpoints, 'c/n1', { containerId: 'c', networkId: 'n1', networkName: 'net-n1', config: {}, primary: true, desired: 'present' }, EMPTY_ENDPOINT_STATUS);
    await r.reconcile('c/n1', ctx);
    assert.deepEqual(w.calls, []);
    assert.equal(w.status('n1')!.phase, 'attached');
    assert.equal(w.status('n1')!.pluggedBy, 'start');
    assert.equal(w.status('n1')!.ifName, 'eth0');
    assert.equal(w.status('n1')!.addresses!.IPAddress, '10.0.0.2');
    w.store.updateSpec(Endpoints, 'c/n1', (sp) => ({ ...sp, desired: 'removed' }));
    await r.reconcile('c/n1', ctx);
    assert.deepEqual(w.calls, ['unplug vethc', 'release c n1']);
    // The container reconciler lets go of status.endpoint; a connect again writes a new record.
    w.store.updateStatus(loose(Containers), 'c', (s: object) => ({ ...s, endpoint: null }));
    w.calls.length = 0;
    w.store.create(Endpoints, 'c/n1', { containerId: 'c', networkId: 'n1', networkName: 'net-n1', config: {}, primary: true, desired: 'present' }, EMPTY_ENDPOINT_STATUS);
    await r.reconcile('c/n1', ctx);
    assert.deepEqual(w.calls, ['attach n1 pid=100 eth1']);
    assert.equal(w.status('n1')!.pluggedBy, 'endpoint');
  });

  test('an endpoint whose network is gone is detached with NetworkNotFound', async () => {
    const w = world();
    w.container('running', 100);
    w.endpoint('n1');
    w.store.delete(Networks, 'n1');
    await new EndpointReconciler(w.store, w.port).reconcile('c/n1', ctx);
    assert.equal(w.status('n1')!.phase, 'detached');
    assert.equal(w.status('n1')!.conditions[0]!.reason, 'NetworkNotFound');
    assert.deepEqual(w.calls, []);
  });
});

describe('EndpointsConfig and endpoint records', () => {
  const find = (ref: string) => (['n1', 'net-n1', 'n2', 'net-n2', 'bridge'].includes(ref) ? { spec: { id: ref.replace('net-', '') === 'bridge' ? 'B' : ref.replace('net-', ''), name: ref } } : undefined);

  test('the NetworkMode entry stays in the spec, the others become records, unknown names stay', () => {
    const nc = { EndpointsConfig: { 'net-n1': { Aliases: ['a'] }, n2: { IPAMConfig: { IPv4Address: '10.0.0.5' } }, gone: {} } };
    const s = endpointsFromCreate('net-n1', nc, find);
    assert.deepEqual(Object.keys((s.networkingConfig as typeof nc).EndpointsConfig).sort(), ['gone', 'net-n1']);
    assert.deepEqual(s.primary, { net: { spec: { id: 'n1', name: 'net-n1' } }, config: { Aliases: ['a'] } });
    assert.deepEqual(s.extras.map((e: { net: { spec: { id: string } }; config: unknown }) => [e.net.spec.id, e.config]), [['n2', { IPAMConfig: { IPv4Address: '10.0.0.5' } }]]);
    assert.deepEqual(endpointsFromCreate('bridge', { EndpointsConfig: { default: {} } }, find).extras, []);
    assert.deepEqual(endpointsFromCreate('host', nc, find).extras, []);
  });

  test('migration: a container written with two networks in EndpointsConfig gets a record of each (its NetworkMode one primary), once', () => {
    const w = world();
    w.store.create(loose(Containers), 'c', { id: 'c', hostConfig: { NetworkMode: 'n1' }, networkingConfig: { EndpointsConfig: { n1: {}, 'net-n2': { Aliases: ['x'] } } } }, { phase: 'running', pid: 1, extraEndpoints: [] });
    assert.equal(migrateEndpoints(w.store as never), 1);
    const rec = w.store.get(Endpoints, 'c/n2')!;
    assert.deepEqual(rec.spec, { containerId: 'c', networkId: 'n2', networkName: 'net-n2', config: { Aliases: ['x'] }, desired: 'present' });
    assert.equal(w.store.get(Endpoints, 'c/n1')!.spec.primary, true);
    const c = w.store.get(loose(Containers), 'c')!;
    assert.deepEqual(c.spec.networkingConfig, { EndpointsConfig: { n1: {} } });
    assert.equal('extraEndpoints' in c.status, false);
    w.store.delete(Endpoints, 'c/n1');
    assert.equal(migrateEndpoints(w.store as never), 0, 'once: a primary record gone later was disconnected');
    assert.equal(w.store.get(Endpoints, 'c/n1'), undefined);
  });
});

test('endpointController: a container change wakes its endpoints (by the store index), a network change the endpoints on it', async () => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { openStore } = await import('../../../store/store.ts');
  const { endpointController } = await import('../../../reconcilers/endpoint/controller.ts');
  const dir = mkdtempSync(join(tmpdir(), 'engine-ept-'));
  const store = openStore(join(dir, 'engine.db'));
  try {
    const ep = (cid: string, nid: string) => store.create(Endpoints, endpointName(cid, nid), { containerId: cid, networkId: nid, networkName: nid, config: {}, desired: 'present' }, EMPTY_ENDPOINT_STATUS);
    ep('c1', 'n1');
    const woken: string[] = [];
    const off = store.watch(null, (ev) => woken.push(...endpointController.keysFor(ev, store)));
    ep('c1', 'n2');
    ep('c2', 'n1');
    woken.length = 0;
    store.create(loose(Containers), 'c1', {}, {});
    assert.deepEqual(woken.sort(), ['c1/n1', 'c1/n2']);
    store.delete(Endpoints, 'c1/n1');
    woken.length = 0;
    store.updateStatus(loose(Containers), 'c1', () => ({ phase: 'running' }));
    assert.deepEqual(woken, ['c1/n2']);
    woken.length = 0;
    store.create(loose(Networks), 'n1', {}, {});
    assert.deepEqual(woken, ['c2/n1']);
    off();
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
