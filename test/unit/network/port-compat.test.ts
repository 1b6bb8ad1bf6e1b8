// The attacher is what cmd hands the container reconciler as its NetworkPort: keep them compatible.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NetworkPort } from '../../../reconcilers/container/deps.ts';
import type { NetworkAttacher } from '../../../reconcilers/network/attacher.ts';
import type { NetworkStore } from '../../../reconcilers/network/deps.ts';
import type { Store } from '../../../store/store.ts';
import type { BridgeDriver } from '../../../drivers/network/bridge-driver.ts';
import type { NetworkDriverPort } from '../../../reconcilers/network/deps.ts';

type Assignable<A, B> = A extends B ? true : false;

test('NetworkAttacher fits NetworkPort; Store fits NetworkStore; BridgeDriver fits NetworkDriverPort', () => {
  const a: Assignable<NetworkAttacher, NetworkPort> = true;
  const s: Assignable<Store, NetworkStore> = true;
  const d: Assignable<BridgeDriver, NetworkDriverPort> = true;
  assert.deepEqual([a, s, d], [true, true, true]);
});
