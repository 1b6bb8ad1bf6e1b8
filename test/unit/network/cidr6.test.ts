// IPv6 arithmetic: parsing every textual form, the canonical (RFC 5952) text, subnets.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cidr6Text, contains6, firstHost6, formatIpv6, overlaps6, parseCidr6, parseIpv6 } from '../../../lib/cidr6.ts';

test('parse and format: compression, leading zeros, case, an IPv4 tail', () => {
  const cases: Array<[string, string]> = [
    ['::', '::'],
    ['::1', '::1'],
    ['FD00:0DB8:0000:0000:0000:0000:0000:0001', 'fd00:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['::ffff:192.0.2.1', '::ffff:c000:201'],
    ['fe80::', 'fe80::'],
  ];
  for (const [input, want] of cases) assert.equal(formatIpv6(parseIpv6(input)), want, input);
  for (const bad of ['', '1.2.3.4', ':::', '1::2::3', 'fd00:1:2:3:4:5:6:7:8', 'g::1', 'fe80::1%eth0', '::1.2.3']) {
    assert.throws(() => parseIpv6(bad), /invalid IPv6 address/, bad);
  }
});

test('subnets: network, last, containment, overlap, first host', () => {
  const c = parseCidr6('fd00:1::5/64');
  assert.equal(cidr6Text(c), 'fd00:1::/64');
  assert.equal(formatIpv6(c.last), 'fd00:1::ffff:ffff:ffff:ffff');
  assert.equal(formatIpv6(firstHost6(c)), 'fd00:1::1');
  assert.ok(contains6(c, parseIpv6('fd00:1::abcd')));
  assert.ok(!contains6(c, parseIpv6('fd00:2::1')));
  assert.ok(overlaps6(parseCidr6('fd00::/16'), c));
  assert.ok(!overlaps6(parseCidr6('fd00:2::/64'), c));
  assert.throws(() => parseCidr6('fd00::/129'), /invalid CIDR/);
});
