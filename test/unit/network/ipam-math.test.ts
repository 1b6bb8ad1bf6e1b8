// The pure address search of IPAM: lowest free address, reserved addresses skipped, static
// addresses, claims kept or let go, conflicts and exhausted pools, IPv4 and IPv6.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isCode } from '../../../lib/errors.ts';
import { type AddressRequest, type HeldAddress, pickIpv4, pickIpv6 } from '../../../drivers/network/ipam-math.ts';

const network = { name: 'appnet', id: 'abc123' };
const pool4 = { Subnet: '10.9.0.0/24', Gateway: '10.9.0.1' };
const held = (containerId: string, address: string, prefixLen = 24): HeldAddress => ({ containerId, address, prefixLen });
const req = (over: Partial<AddressRequest> = {}): AddressRequest => ({ pool: pool4, held: [], containerId: 'c1', network, ...over });

test('IPv4: the lowest free address after the gateway; a used one is skipped', () => {
  assert.deepEqual(pickIpv4(req()), { address: '10.9.0.2', prefixLen: 24, release: [] });
  assert.deepEqual(pickIpv4(req({ held: [held('c2', '10.9.0.2'), held('c3', '10.9.0.4')] })), { address: '10.9.0.3', prefixLen: 24, release: [] });
});

test('IPv4: gateway and auxiliary addresses are reserved; the range bounds handed-out addresses', () => {
  const pool = { Subnet: '10.9.0.0/24', Gateway: '10.9.0.2', AuxiliaryAddresses: { a: '10.9.0.1', b: '10.9.0.3' } };
  assert.deepEqual(pickIpv4(req({ pool })), { address: '10.9.0.4', prefixLen: 24, release: [] });
  const ranged = { ...pool4, IPRange: '10.9.0.128/25' };
  assert.equal((pickIpv4(req({ pool: ranged })) as { address: string }).address, '10.9.0.128');
  // A static address may lie outside the range, but not on a reserved one or outside the subnet.
  assert.equal((pickIpv4(req({ pool: ranged, want: '10.9.0.7' })) as { address: string }).address, '10.9.0.7');
  assert.throws(() => pickIpv4(req({ want: '10.9.0.1' })), (e) => isCode(e, 'InvalidArgument') && /not a free host address of subnet 10\.9\.0\.0\/24/.test((e as Error).message));
  assert.throws(() => pickIpv4(req({ want: '10.8.0.5' })), (e) => isCode(e, 'InvalidArgument'));
});

test('IPv4: the container keeps a valid claim and lets go of one made under another prefix', () => {
  assert.deepEqual(pickIpv4(req({ held: [held('c2', '10.9.0.2'), held('c1', '10.9.0.3')] })), { keep: 1, release: [] });
  // Claimed under a /16 before the subnet became a /24: released, and the lowest free address taken anew.
  assert.deepEqual(pickIpv4(req({ held: [held('c1', '10.9.0.5', 16)] })), { address: '10.9.0.2', prefixLen: 24, release: [0] });
  // Another static address asked for: the old claim goes.
  assert.deepEqual(pickIpv4(req({ held: [held('c1', '10.9.0.2')], want: '10.9.0.9' })), { address: '10.9.0.9', prefixLen: 24, release: [0] });
});

test('IPv4: a static address someone holds is a conflict; an exhausted pool is unavailable', () => {
  assert.throws(
    () => pickIpv4(req({ held: [held('c2', '10.9.0.9')], want: '10.9.0.9' })),
    (e) => isCode(e, 'Conflict') && (e as Error).message === 'Address already in use: 10.9.0.9 on network appnet',
  );
  const tiny = { Subnet: '10.9.1.0/30', Gateway: '10.9.1.1' };
  assert.deepEqual(pickIpv4(req({ pool: tiny })), { address: '10.9.1.2', prefixLen: 30, release: [] });
  assert.throws(
    () => pickIpv4(req({ pool: tiny, held: [held('c2', '10.9.1.2', 30)] })),
    (e) => isCode(e, 'Unavailable') && (e as Error).message === "no available IPv4 addresses on this network's address pools: appnet (abc123)",
  );
});

test('IPv6: lowest free, reserved skipped, static, conflict and exhaustion', () => {
  const pool = { Subnet: 'fd00:9::/64', Gateway: 'fd00:9::1', AuxiliaryAddresses: { gw: 'fd00:9::2' } };
  const r6 = (over: Partial<AddressRequest> = {}) => req({ pool, ...over });
  assert.deepEqual(pickIpv6(r6()), { address: 'fd00:9::3', prefixLen: 64, release: [] });
  assert.deepEqual(pickIpv6(r6({ held: [held('c2', 'fd00:9::3', 64)] })), { address: 'fd00:9::4', prefixLen: 64, release: [] });
  assert.deepEqual(pickIpv6(r6({ held: [held('c1', 'fd00:9::3', 64)] })), { keep: 0, release: [] });
  assert.deepEqual(pickIpv6(r6({ held: [held('c1', 'fd00:9::3', 48)] })), { address: 'fd00:9::3', prefixLen: 64, release: [0] });
  assert.deepEqual(pickIpv6(r6({ want: 'fd00:9::abcd' })), { address: 'fd00:9::abcd', prefixLen: 64, release: [] });
  assert.throws(() => pickIpv6(r6({ want: 'fd00:9::1' })), (e) => isCode(e, 'InvalidArgument'));
  assert.throws(() => pickIpv6(r6({ held: [held('c2', 'fd00:9::abcd', 64)], want: 'fd00:9::abcd' })), (e) => isCode(e, 'Conflict'));
  const tiny = { Subnet: 'fd00:9::/126', Gateway: 'fd00:9::1' };
  const full = [held('c2', 'fd00:9::2', 126), held('c3', 'fd00:9::3', 126)];
  assert.throws(
    () => pickIpv6(req({ pool: tiny, held: full })),
    (e) => isCode(e, 'Unavailable') && (e as Error).message === "no available IPv6 addresses on this network's address pools: appnet (abc123)",
  );
});
