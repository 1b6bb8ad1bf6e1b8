// Which networks a container wants beside its NetworkMode one, and plugging/unplugging toward that.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { syncExtraNetworks, wantedExtraNetworks } from '../../../reconcilers/container/network-sync.ts';
import type { ContainerSpec, ContainerStatus, ExtraEndpoint } from '../../../store/types.ts';

const ids: Record<string, string> = { bridge: 'B', front: 'F', back: 'K', side: 'S' };
function spec(mode: string, eps: string[]): ContainerSpec {
  return { hostConfig: { NetworkMode: mode }, networkingConfig: { EndpointsConfig: Object.fromEntries(eps.map((e) => [e, {}])) } } as unknown as ContainerSpec;
}

test('the EndpointsConfig entries beyond the NetworkMode network, unknown ones skipped', () => {
  const net = { networkIdOf: (r: string) => ids[r] };
  assert.deepEqual(wantedExtraNetworks(spec('front', ['front']), net), []);
  assert.deepEqual(wantedExtraNetworks(spec('front', ['front', 'back', 'gone']), net), ['K']);
  assert.deepEqual(wantedExtraNetworks(spec('bridge', ['default', 'side']), net), ['S']);
  assert.deepEqual(wantedExtraNetworks(spec('host', ['back']), net), []);
});

test('sync plugs in what is wanted (lowest free ethN), unplugs what is not', async () => {
  let status = { extraEndpoints: [] } as unknown as ContainerStatus;
  const staged = { get: () => status, stage: (_: string, fn: (s: ContainerStatus) => ContainerStatus) => (status = fn(status)) };
  const calls: string[] = [];
  const net = {
    networkIdOf: (r: string) => ids[r],
    attachExtra: async (_c: string, _p: number, netId: string, i: number) => {
      calls.push(`+${netId}${i}`);
      return { NetworkID: netId, ifName: `eth${i}`, hostVeth: `v${i}`, network: netId } as ExtraEndpoint;
    },
    detachExtra: async (_c: string, ep: ExtraEndpoint) => void calls.push(`-${ep.NetworkID}`),
  };
  await syncExtraNetworks('c', 1, spec('front', ['front', 'back', 'side']), net as never, staged as never);
  assert.deepEqual(calls, ['+K1', '+S2']);
  await syncExtraNetworks('c', 1, spec('front', ['front', 'side', 'bridge']), net as never, staged as never);
  assert.deepEqual(calls.slice(2), ['-K', '+B1']);
  assert.deepEqual(status.extraEndpoints!.map((e) => e.ifName).sort(), ['eth1', 'eth2']);
});
