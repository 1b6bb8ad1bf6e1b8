// Bridge create / repair / teardown on a test bridge of our own.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { deleteBridge, ensureBridge, inspectBridge } from '../../../drivers/network/bridge.ts';
import { quiet, sh, suffix } from './helpers.ts';

const BR = `entest${suffix()}`;
after(async () => {
  await quiet('ip', ['link', 'del', BR]);
});

test('ensureBridge creates, repairs and leaves alone', async () => {
  const cfg = { name: BR, address: '10.213.1.1/24', mtu: 1450 };
  assert.equal(await inspectBridge(BR), null);

  const first = await ensureBridge(cfg);
  assert.deepEqual(first, { created: true, repaired: [] });
  const st = (await inspectBridge(BR))!;
  assert.equal(st.isBridge, true);
  assert.equal(st.up, true);
  assert.equal(st.mtu, 1450);
  assert.deepEqual(st.ipv4, ['10.213.1.1/24']);

  assert.deepEqual(await ensureBridge(cfg), { created: false, repaired: [] }, 'idempotent');

  // Someone takes it down, strips the address and adds a stray one.
  await sh('ip', ['link', 'set', BR, 'down']);
  await sh('ip', ['addr', 'flush', 'dev', BR]);
  await sh('ip', ['addr', 'add', '10.213.1.99/24', 'dev', BR]);
  const fixed = await ensureBridge(cfg);
  assert.equal(fixed.created, false);
  assert.deepEqual(fixed.repaired.sort(), ['address', 'stale address 10.213.1.99/24', 'up'].sort());
  const st2 = (await inspectBridge(BR))!;
  assert.deepEqual(st2.ipv4, ['10.213.1.1/24']);
  assert.equal(st2.up, true);

  // Deleted outright: created again.
  await sh('ip', ['link', 'del', BR]);
  assert.equal((await ensureBridge(cfg)).created, true);

  assert.equal(await deleteBridge(BR), true);
  assert.equal(await deleteBridge(BR), false, 'already gone is fine');
  assert.equal(await inspectBridge(BR), null);
});

test('ensureBridge refuses an interface that is not a bridge', async () => {
  const s = suffix();
  const name = `entveA${s}`;
  await sh('ip', ['link', 'add', name, 'type', 'veth', 'peer', 'name', `entveB${s}`]);
  try {
    await assert.rejects(ensureBridge({ name, address: '10.213.1.1/24', mtu: 1500 }), (e: { code?: string }) => e.code === 'FailedPrecondition');
  } finally {
    await quiet('ip', ['link', 'del', name]);
  }
});

test('an IPv6 bridge: the gateway address given at create (canonical), put back when removed', async () => {
  const cfg = { name: BR, address: '10.213.1.1/24', address6: 'fd00:213:1:0::1/64', mtu: 1500 };
  assert.equal((await ensureBridge(cfg)).created, true);
  assert.deepEqual((await inspectBridge(BR))!.ipv6, ['fd00:213:1::1/64']);
  assert.deepEqual(await ensureBridge(cfg), { created: false, repaired: [] }, 'idempotent');
  await sh('ip', ['-6', 'addr', 'del', 'fd00:213:1::1/64', 'dev', BR]);
  assert.deepEqual((await ensureBridge(cfg)).repaired, ['ipv6 address']);
  assert.deepEqual((await inspectBridge(BR))!.ipv6, ['fd00:213:1::1/64']);
  assert.equal(await deleteBridge(BR), true);
});
