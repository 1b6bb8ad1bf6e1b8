// The default bridge end to end on this host, under test names: the reconciler sets up a test
// bridge and test chains, containers (processes in their own network namespaces) are attached
// and ping the gateway and each other, the reconciler repairs a deleted bridge and rule, and a
// removed network leaves nothing behind.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { BridgeDriver } from '../../../drivers/network/bridge-driver.ts';
import { inspectBridge } from '../../../drivers/network/bridge.ts';
import { chainNames } from '../../../drivers/network/iptables.ts';
import { NetworkAttacher } from '../../../reconcilers/network/attacher.ts';
import { hostVethName } from '../../../drivers/network/veth.ts';
import { ensureDefaultNetwork } from '../../../reconcilers/network/default-network.ts';
import { NetworkReconciler } from '../../../reconcilers/network/reconciler.ts';
import { Networks } from '../../../store/kinds/network.ts';
import { FakeStore } from './fake-store.ts';
import { ok, purgeIptables, quiet, sh, silentLog, startSleeper, suffix, type Sleeper } from './helpers.ts';
import { IpamAllocations } from '../../../store/kinds/ipam-allocation.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { loose } from '../store/test-kind.ts';

const S = suffix();
const BR = `entest${S}`;
const PREFIX = `ENT${S.toUpperCase()}`;
const NETNS = `entestns${S}`;
const C = chainNames(PREFIX);
const GW = '10.213.3.1';
const SUBNET = '10.213.3.0/24';

const sleepers: Sleeper[] = [];
const cid = (n: number) => `${S}${n.toString(16).padStart(2, '0')}`.padEnd(64, 'c');

after(async () => {
  for (const s of sleepers) s.kill();
  await quiet('ip', ['netns', 'del', NETNS]);
  for (let i = 0; i < 8; i++) await quiet('ip', ['link', 'del', hostVethName(cid(i))]);
  await quiet('ip', ['link', 'del', BR]);
  await purgeIptables([BR, PREFIX], [C.engine, C.isolation1, C.isolation2, C.user]);
});

const ctx = { signal: new AbortController().signal, log: silentLog };

async function inNs(pid: number, args: string[]): Promise<string> {
  return sh('nsenter', [`--net=/proc/${pid}/ns/net`, ...args]);
}

test('bridge network: set up, attach, ping, repair, detach, tear down', async (t) => {
  const store = new FakeStore();
  const driver = new BridgeDriver({ log: silentLog });
  const rec = new NetworkReconciler(store, driver);
  const att = new NetworkAttacher(store, driver, silentLog);
  const { bridge } = await ensureDefaultNetwork(store, { bridge: BR, bip: `${GW}/24`, chainPrefix: PREFIX, mtu: 1500, ipForward: false });
  const netId = bridge!.name;
  const status = () => store.get(Networks, netId)!.status;

  // Host set up by the reconciler.
  assert.deepEqual(await rec.reconcile(netId, ctx), { requeueAfter: 30_000 });
  assert.equal(status().phase, 'ready');
  assert.match(status().lastRepair, /created bridge/);
  const st = (await inspectBridge(BR))!;
  assert.deepEqual(st.ipv4, [`${GW}/24`]);
  assert.equal(st.up, true);
  const nat = await sh('iptables', ['-w', '-t', 'nat', '-S', 'POSTROUTING']);
  assert.ok(nat.includes(`-A POSTROUTING -s ${SUBNET} ! -o ${BR} -j MASQUERADE`), nat);
  const rv = store.get(Networks, netId)!.resourceVersion;
  await rec.reconcile(netId, ctx);
  assert.equal(store.get(Networks, netId)!.resourceVersion, rv, 'nothing to repair: no status write');

  // Two containers by pid, one by a named netns path.
  const timings: number[] = [];
  const pids: number[] = [];
  for (let i = 0; i < 2; i++) {
    store.create(loose(Containers), cid(i), { id: cid(i) }, {});
    const ep = (await att.allocate(cid(i), 'default'))!;
    const s = await startSleeper();
    sleepers.push(s);
    pids.push(s.pid);
    const t0 = performance.now();
    await att.attach(cid(i), s.pid, ep);
    timings.push(performance.now() - t0);
  }
  await sh('ip', ['netns', 'add', NETNS]);
  store.create(loose(Containers), cid(2), { id: cid(2) }, {});
  const ep2 = (await att.allocate(cid(2), 'default'))!;
  let t0 = performance.now();
  await att.attach(cid(2), `/run/netns/${NETNS}`, ep2);
  timings.push(performance.now() - t0);

  const addr = await inNs(pids[0]!, ['ip', '-o', '-4', 'addr', 'show', 'dev', 'eth0']);
  assert.match(addr, /inet 10\.213\.3\.2\/24/);
  const link = await inNs(pids[0]!, ['ip', '-o', 'link', 'show', 'dev', 'eth0']);
  assert.match(link, /link\/ether 02:42:0a:d5:03:02/);
  assert.match(link, /mtu 1500/);
  assert.match(await inNs(pids[0]!, ['ip', 'route', 'show', 'default']), /default via 10\.213\.3\.1 dev eth0/);
  assert.match(await sh('ip', ['-o', 'link', 'show', hostVethName(cid(0))]), new RegExp(`master ${BR} .*state UP`));

  assert.ok(await ok('nsenter', [`--net=/proc/${pids[0]}/ns/net`, 'ping', '-c1', '-W1', GW]), 'container 0 reaches the gateway');
  assert.ok(await ok('ip', ['netns', 'exec', NETNS, 'ping', '-c1', '-W1', GW]), 'netns container reaches the gateway');
  assert.ok(await ok('nsenter', [`--net=/proc/${pids[1]}/ns/net`, 'ping', '-c1', '-W1', '10.213.3.2']), 'icc: container 1 reaches container 0');

  // Repair: someone deletes the bridge and the masquerade rule.
  await sh('ip', ['link', 'del', BR]);
  await sh('iptables', ['-w', '-t', 'nat', '-D', 'POSTROUTING', '-s', SUBNET, '!', '-o', BR, '-j', 'MASQUERADE']);
  await rec.reconcile(netId, ctx);
  assert.deepEqual((await inspectBridge(BR))?.ipv4, [`${GW}/24`]);
  assert.match(status().lastRepair, /created bridge/);
  assert.match(status().lastRepair, /iptables: 1 changes/);
  assert.ok((await sh('iptables', ['-w', '-t', 'nat', '-S', 'POSTROUTING'])).includes(`-s ${SUBNET} ! -o ${BR} -j MASQUERADE`));

  // Stop + start again: detach, then attach a new "task" with the same address.
  await att.detach(cid(0));
  assert.equal(await ok('ip', ['link', 'show', hostVethName(cid(0))]), false);
  await att.detach(cid(0));
  const again = (await att.allocate(cid(0), 'default'))!;
  assert.equal(again.IPAddress, '10.213.3.2');
  const s2 = await startSleeper();
  sleepers.push(s2);
  t0 = performance.now();
  await att.attach(cid(0), s2.pid, again);
  timings.push(performance.now() - t0);
  assert.ok(await ok('nsenter', [`--net=/proc/${s2.pid}/ns/net`, 'ping', '-c1', '-W1', GW]));

  // The bridge vanished between checks: attach puts it back instead of failing the start.
  await sh('ip', ['link', 'del', BR]);
  store.create(loose(Containers), cid(3), { id: cid(3) }, {});
  const ep3 = (await att.allocate(cid(3), 'default'))!;
  const s3 = await startSleeper();
  sleepers.push(s3);
  await att.attach(cid(3), s3.pid, ep3);
  assert.ok(await ok('nsenter', [`--net=/proc/${s3.pid}/ns/net`, 'ping', '-c1', '-W1', GW]));

  // A second attach of a running container replaces its pair (retry after a crash).
  await att.attach(cid(3), s3.pid, ep3);

  // Addresses of containers that are gone are collected by the reconciler.
  store.delete(Containers, cid(2));
  await rec.reconcile(netId, ctx);
  assert.equal(store.list(IpamAllocations).length, 3);
  await att.release(cid(3));
  assert.equal(store.list(IpamAllocations).length, 2);

  t.diagnostic(`attach ms: ${timings.map((x) => x.toFixed(1)).join(', ')}`);

  // Removal: bridge and this bridge's rules go, the record and its claims too.
  store.updateSpec(Networks, netId, (s) => ({ ...s, desired: 'removed' }));
  assert.equal(await rec.reconcile(netId, ctx), undefined);
  assert.equal(await inspectBridge(BR), null);
  assert.equal(store.get(Networks, netId), undefined);
  assert.equal(store.list(IpamAllocations).length, 0);
  const left = (await sh('iptables', ['-w', '-S'])) + (await sh('iptables', ['-w', '-t', 'nat', '-S']));
  assert.ok(!left.includes(BR), left);
});

test('a failing reconcile records the error in status and throws', async () => {
  const store = new FakeStore();
  const driver = new BridgeDriver({ log: silentLog });
  const rec = new NetworkReconciler(store, driver);
  // An existing non-bridge interface under the bridge's name.
  const name = `entveA${S}`;
  await sh('ip', ['link', 'add', name, 'type', 'veth', 'peer', 'name', `entveB${S}`]);
  try {
    const { bridge } = await ensureDefaultNetwork(store, { bridge: name, bip: '10.213.4.1/24', chainPrefix: PREFIX, ipForward: false, iptables: false });
    await assert.rejects(rec.reconcile(bridge!.name, ctx), (e: { code?: string }) => e.code === 'FailedPrecondition');
    const st = store.get(Networks, bridge!.name)!.status;
    assert.equal(st.phase, 'failed');
    assert.match(st.error, /not a bridge/);
  } finally {
    await quiet('ip', ['link', 'del', name]);
  }
});
