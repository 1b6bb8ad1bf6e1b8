// RunNetwork.plumb: the ports published and the interface attached side by side; a publish refused
// while the attach is still under way is the plumb's failure, never an unhandled rejection, and
// the plumb settles only once both have.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RunNetwork } from '../../../reconcilers/container/run-network.ts';
import type { ContainerReconcilerDeps } from '../../../reconcilers/container/deps.ts';
import type { ReconcilerStore } from '../../../reconcilers/store-like.ts';
import type { StagedStatus } from '../../../reconcilers/container/staged-status.ts';
import type { ContainerEndpoint, ContainerSpec } from '../../../store/kinds/container.ts';

const spec = { name: '/wanter', hostConfig: { PortBindings: { '80/tcp': [{ HostPort: '8080' }] } }, config: {} } as unknown as ContainerSpec;
const ep = { NetworkID: 'n1', EndpointID: 'e1', IPAddress: '172.30.0.2' } as unknown as ContainerEndpoint;

function networkOf(ports: { publish(): Promise<unknown[]> }, attach: () => Promise<void>): RunNetwork {
  const deps = { ports, network: { attach } } as unknown as ContainerReconcilerDeps;
  return new RunNetwork({} as ReconcilerStore, deps, {} as StagedStatus);
}

test('a publish refused during a slow attach: the plumb fails with it, after the attach, and nothing is unhandled', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  try {
    let attached = false;
    const n = networkOf(
      { publish: async () => { throw new Error('Bind for 0.0.0.0:8080 failed: port is already allocated'); } },
      async () => { await new Promise((r) => setTimeout(r, 50)); attached = true; },
    );
    await assert.rejects(n.plumb('c1', spec, ep, 1234, Promise.resolve()), /port is already allocated/);
    assert.ok(attached, 'the attach had settled before the plumb failed');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});

test('an attach that fails is the plumb\'s failure even when the publish succeeds; both succeed: the ports', async () => {
  const ok = [{ containerPort: 80, proto: 'tcp', hostIp: '0.0.0.0', hostPort: 8080 }];
  const bad = networkOf({ publish: async () => ok }, async () => { throw new Error('no such namespace'); });
  await assert.rejects(bad.plumb('c1', spec, ep, 1234, Promise.resolve()), /no such namespace/);
  const good = networkOf({ publish: async () => ok }, async () => {});
  assert.deepEqual(await good.plumb('c1', spec, ep, 1234, Promise.resolve()), ok);
});
