// The stack reconciler on the real store with the store engine (no API, no HTTP): a document no
// pass can run ends in a TerminalError with the reason in status; a stack's objects carry it as
// their owner; DELETE takes them away level by level, writing and looking again, never waiting.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { checkNetworkRemovable } from '../../../api/networks/views.ts';
import { TerminalError } from '../../../controllers/controller.ts';
import { notFound } from '../../../lib/errors.ts';
import { composeApp } from '../../../lib/compose/schema.ts';
import { storeEngine } from '../../../reconcilers/stack/engine.ts';
import { StackReconciler } from '../../../reconcilers/stack/reconciler.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { Networks } from '../../../store/kinds/network.ts';
import { INITIAL_STACK_STATUS, Stacks } from '../../../store/kinds/stack.ts';
import { STORE_KINDS } from '../../../store/kinds/index.ts';
import { openStore } from '../../../store/store.ts';
import { fakeLog } from '../controllers/fake-log.ts';

const dir = mkdtempSync(join(tmpdir(), 'engine-stack-'));
const store = openStore(join(dir, 'engine.db'), { kinds: STORE_KINDS });
after(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});
const IMAGE = { kind: 'image', name: 'sha256:' + 'e'.repeat(64), spec: { rawConfig: JSON.stringify({ config: { Cmd: ['sh'] } }) } } as never;
const engine = storeEngine({
  containers: {
    store,
    resolveImage: (ref) => {
      if (ref === 'busybox') return IMAGE;
      throw notFound(`No such image: ${ref}`);
    },
    defaults: { runtime: 'stdrt', hasRuntime: () => true, shmSize: 1 << 26, logConfig: { Type: 'json-file', Config: {} }, validateLogConfig: () => {}, validateBind: () => {} },
  },
  networks: { store, defaults: { mtu: 1500, iptables: false, ip6tables: false, ipForward: true, userlandProxy: true, chainPrefix: 'ENGINE', pools: [], driverOpts: {}, hostRoutes: () => [] } },
  checkNetworkRemovable: (net) => checkNetworkRemovable(store, net),
});
const reconciler = new StackReconciler(store, { engine, filesRoot: join(dir, 'stacks') });
const ctx = () => ({ log: fakeLog(), signal: new AbortController().signal, reconcileId: 1 }) as never;
const put = (name: string, doc: unknown) => store.create(Stacks, name, { document: composeApp.parse(doc), desired: 'present', removeVolumes: false, appliedAt: new Date().toISOString() }, INITIAL_STACK_STATUS);

test('an image reference that cannot parse: TerminalError, Degraded with the reason, nothing made', async () => {
  put('bad', { services: { web: { image: 'Not//Valid' } } });
  await assert.rejects(reconciler.reconcile('bad', ctx()), (err: unknown) => err instanceof TerminalError && /web: image "Not\/\/Valid"/.test((err as Error).message));
  const s = store.get(Stacks, 'bad')!.status;
  const degraded = s.conditions.find((c) => c.type === 'Degraded')!;
  assert.equal(degraded.status, 'True');
  assert.equal(degraded.reason, 'InvalidImageReference');
  assert.equal(store.list(Containers).length, 0);
});

test('a stack writes its replicas and network with itself as owner; DELETE removes them level by level', async () => {
  put('shop', { services: { web: { image: 'busybox', deploy: { replicas: 2 } } } });
  const res = await reconciler.reconcile('shop', ctx());
  assert.ok(res && res.requeueAfter > 0, 'not Ready yet: it looks again instead of waiting');
  const mine = store.byIndex(Containers.indexes.owner!, 'stack/shop');
  assert.deepEqual(mine.map((c) => c.spec.name).sort(), ['/shop-web-1', '/shop-web-2']);
  assert.ok(mine.every((c) => c.spec.desired === 'running'));
  assert.deepEqual(store.byIndex(Networks.indexes.owner!, 'stack/shop').map((n) => n.spec.name), ['shop_default']);
  // A second pass with nothing observed yet asks for nothing new (no second start, no second replica).
  await reconciler.reconcile('shop', ctx());
  assert.equal(store.byIndex(Containers.indexes.owner!, 'stack/shop').length, 2);
  assert.ok(store.byIndex(Containers.indexes.owner!, 'stack/shop').every((c) => c.spec.runGeneration === 1));

  store.updateSpec(Stacks, 'shop', (sp) => ({ ...sp, desired: 'removed' }));
  const first = await reconciler.reconcile('shop', ctx());
  assert.ok(first && first.requeueAfter > 0);
  assert.ok(store.byIndex(Containers.indexes.owner!, 'stack/shop').every((c) => c.spec.desired === 'removed'));
  assert.equal(store.byIndex(Networks.indexes.owner!, 'stack/shop')[0]!.spec.desired, 'present', 'the network waits for its containers');
  // The container reconciler removes them; then the network goes; then the record.
  for (const c of store.byIndex(Containers.indexes.owner!, 'stack/shop')) store.delete(Containers, c.name);
  await reconciler.reconcile('shop', ctx());
  assert.equal(store.byIndex(Networks.indexes.owner!, 'stack/shop')[0]!.spec.desired, 'removed');
  for (const n of store.byIndex(Networks.indexes.owner!, 'stack/shop')) store.delete(Networks, n.name);
  assert.equal(await reconciler.reconcile('shop', ctx()), undefined);
  assert.equal(store.get(Stacks, 'shop'), undefined);
});

test('a refusal of admission reaches the stack’s status in the words the create route answers', async () => {
  put('lost', { services: { web: { image: 'nosuch' } } });
  await reconciler.reconcile('lost', ctx());
  const s = store.get(Stacks, 'lost')!.status;
  const degraded = s.conditions.find((c) => c.type === 'Degraded')!;
  assert.equal(degraded.status, 'True');
  // POST /containers/create answers 404 "No such image: nosuch" for the same body (admission-table.test.ts).
  assert.match(degraded.message, /web: lost-web-1: No such image: nosuch$/);
  assert.equal(store.byIndex(Containers.indexes.owner!, 'stack/lost').length, 0, 'nothing written');
});

test('a local part of a cluster stack an earlier version placed here (spec.placed) is taken away, not run', async () => {
  store.create(Stacks, 'placed', { document: composeApp.parse({ services: { web: { image: 'busybox' } } }), desired: 'present', removeVolumes: false, appliedAt: new Date().toISOString(), placed: { web: [{ n: 1 }] } }, INITIAL_STACK_STATUS);
  assert.equal(await reconciler.reconcile('placed', ctx()), undefined, 'nothing left to take away: the record goes');
  assert.equal(store.get(Stacks, 'placed'), undefined);
  assert.equal(store.list(Containers).filter((x) => x.spec.name.startsWith('/placed-')).length, 0, 'no replica made');
});
