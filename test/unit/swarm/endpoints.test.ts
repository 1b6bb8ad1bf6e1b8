// Overlay endpoints: free addresses of a subnet, what names resolve to (the reference's embedded
// DNS: vip, dnsrr, tasks.NAME, aliases, only tasks that are up), virtual IP rules and the chain
// they are written as.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { freeAddresses, type SwarmEndpoint } from '../../../lib/swarm/endpoints.ts';
import { lookupName, vipRules } from '../../../lib/swarm/endpoint-names.ts';
import { vipChainLines } from '../../../drivers/network/vip-rules.ts';

const ep = (ip: string, o: Partial<SwarmEndpoint>): SwarmEndpoint => ({ Network: 'n', IP: ip, Mac: '', Node: 'a', Vtep: '10.0.0.1', Owner: ip, ...o });

describe('overlay endpoints', () => {
  test('free addresses: after the gateway, none taken, none past the broadcast', () => {
    assert.deepEqual(freeAddresses('10.0.1.0/24', '10.0.1.1', new Set(['10.0.1.2', '10.0.1.4']), 0, 3), ['10.0.1.3', '10.0.1.5', '10.0.1.6']);
    assert.deepEqual(freeAddresses('10.0.1.0/30', '10.0.1.1', new Set(['10.0.1.2'])), []);
  });

  test('names: vip answers with the virtual IP, dnsrr with the tasks up, tasks.NAME with the tasks, aliases too', () => {
    const eps = [
      ep('10.0.1.2', { Vip: true, ServiceID: 's1', ServiceName: 'web', Node: '', Vtep: '' }),
      ep('10.0.1.3', { ServiceID: 's1', ServiceName: 'web', Up: true, Aliases: ['front'] }),
      ep('10.0.1.4', { ServiceID: 's1', ServiceName: 'web', Up: false }),
      ep('10.0.1.5', { ServiceID: 's2', ServiceName: 'rr', Up: true }),
      ep('10.0.1.6', { ServiceID: 's2', ServiceName: 'rr', Up: true }),
    ];
    assert.deepEqual(lookupName(eps, 'web'), ['10.0.1.2']);
    assert.deepEqual(lookupName(eps, 'WEB.'), ['10.0.1.2']);
    assert.deepEqual(lookupName(eps, 'front'), ['10.0.1.2'], 'an alias of a vip service: its virtual IP');
    assert.deepEqual(lookupName(eps, 'tasks.web'), ['10.0.1.3'], 'only the tasks that are up');
    assert.deepEqual(lookupName(eps, 'rr'), ['10.0.1.5', '10.0.1.6']);
    assert.equal(lookupName(eps, 'nosuch'), null);
    assert.equal(lookupName(eps, 'tasks.nosuch'), null);
  });

  test('virtual IP rules: each VIP to its service\'s tasks that are up; the chain balances evenly', () => {
    const eps = [ep('10.0.1.2', { Vip: true, ServiceID: 's1' }), ep('10.0.1.4', { ServiceID: 's1', Up: true }), ep('10.0.1.3', { ServiceID: 's1', Up: true }), ep('10.0.1.5', { ServiceID: 's1' })];
    const rules = vipRules(eps);
    assert.deepEqual(rules, [{ vip: '10.0.1.2', backends: ['10.0.1.3', '10.0.1.4'] }]);
    assert.deepEqual(vipChainLines([{ vip: '10.0.1.2', backends: ['10.0.1.3', '10.0.1.4', '10.0.1.6'] }]), [
      '-A ENGINE-VIP -d 10.0.1.2/32 -m statistic --mode random --probability 0.3333333333 -j DNAT --to-destination 10.0.1.3',
      '-A ENGINE-VIP -d 10.0.1.2/32 -m statistic --mode random --probability 0.5000000000 -j DNAT --to-destination 10.0.1.4',
      '-A ENGINE-VIP -d 10.0.1.2/32 -j DNAT --to-destination 10.0.1.6',
    ]);
    assert.deepEqual(vipChainLines([{ vip: '10.0.1.2', backends: [] }]), []);
  });
});
