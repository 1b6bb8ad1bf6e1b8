import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstHost, formatIpv4, macFromIpv4, parseCidr, parseIpv4, subnetOf } from '../../../drivers/network/cidr.ts';
import { isCode } from '../../../lib/errors.ts';

test('MAC derived from the IPv4 address like the reference daemon', () => {
  assert.equal(macFromIpv4('172.17.0.2'), '02:42:ac:11:00:02');
  assert.equal(macFromIpv4('10.213.255.254'), '02:42:0a:d5:ff:fe');
});

test('CIDR parsing and subnet arithmetic', () => {
  const c = parseCidr('172.17.0.1/16');
  assert.equal(formatIpv4(c.network), '172.17.0.0');
  assert.equal(formatIpv4(c.broadcast), '172.17.255.255');
  assert.equal(formatIpv4(firstHost(c)), '172.17.0.1');
  assert.equal(subnetOf('10.213.7.9/24'), '10.213.7.0/24');
  assert.equal(formatIpv4(parseIpv4('255.255.255.255')), '255.255.255.255');
  for (const bad of ['1.2.3', '1.2.3.256', '1.2.3.4/33', 'x/24']) {
    assert.throws(() => parseCidr(bad.includes('/') ? bad : `${bad}/24`), (e) => isCode(e, 'InvalidArgument'), bad);
  }
});
