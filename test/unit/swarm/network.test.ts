// Overlay network allocation (lib/swarm/network.ts): the next free subnet of the swarm's pools, the
// next VXLAN id, the view the reference gives a swarm network.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { gatewayOf, nextSubnet, nextVni, swarmNetworkView, type SwarmNetworkRecord } from '../../../lib/swarm/network.ts';

describe('swarm networks', () => {
  test('subnets: the first /size of the pools that overlaps none taken; none left: undefined', () => {
    assert.equal(nextSubnet(['10.0.0.0/8'], 24, []), '10.0.0.0/24');
    assert.equal(nextSubnet(['10.0.0.0/8'], 24, ['10.0.0.0/24', '10.0.2.0/24']), '10.0.1.0/24');
    assert.equal(nextSubnet(['10.0.0.0/8'], 24, ['10.0.0.0/16']), '10.1.0.0/24', 'a wider subnet taken covers many');
    assert.equal(nextSubnet(['192.168.0.0/30', '10.9.0.0/16'], 30, ['192.168.0.0/30']), '10.9.0.0/30', 'the next pool');
    assert.equal(nextSubnet(['192.168.0.0/30'], 30, ['192.168.0.0/30']), undefined);
    assert.equal(gatewayOf('10.20.0.0/24'), '10.20.0.1');
  });

  test('VXLAN ids count up from 4096, filling gaps; the view', () => {
    assert.equal(nextVni([]), 4096);
    assert.equal(nextVni([4096, 4098]), 4097);
    const rec: SwarmNetworkRecord = { ID: 'x', Name: 'ov', Created: 't', Options: { a: 'b' }, Attachable: true, Internal: false, EnableIPv6: false, Ingress: false, IPAM: { Driver: 'default', Options: null, Config: [{ Subnet: '10.0.0.0/24', Gateway: '10.0.0.1' }] }, VNI: 4097 };
    const v = swarmNetworkView(rec);
    assert.deepEqual([v['Scope'], v['Driver'], v['Labels'], v['Containers'], v['Options']], ['swarm', 'overlay', null, null, { 'com.docker.network.driver.overlay.vxlanid_list': '4097', a: 'b' }]);
  });
});
