// lib/cidr.ts and lib/cidr6.ts over ipaddr.js: the forms accepted and refused stay the daemon's own
// (ipaddr.js alone takes short, hex, octal IPv4 and zone ids), and so do the messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contains, firstHost, formatIpv4, macFromIpv4, maskOf, parseCidr, parseIpv4, subnetOf } from '../../../lib/cidr.ts';
import { cidr6Text, contains6, firstHost6, formatIpv6, isIpv6, overlaps6, parseCidr6, parseIpv6, subnetOf6 } from '../../../lib/cidr6.ts';
import { isCode } from '../../../lib/errors.ts';

test('IPv4: parse and format', () => {
  assert.equal(parseIpv4('172.17.0.2'), 0xac110002);
  assert.equal(parseIpv4('0.0.0.0'), 0);
  assert.equal(parseIpv4('255.255.255.255'), 0xffffffff);
  assert.equal(parseIpv4(' 10.0.0.1\n'), 0x0a000001);
  assert.equal(formatIpv4(0xac110002), '172.17.0.2');
  assert.equal(formatIpv4(0xffffffff), '255.255.255.255');
  assert.equal(formatIpv4(0), '0.0.0.0');
  // Leading zeros were always read as decimal (not ipaddr.js's octal): 010 is 10, 08 is 8.
  assert.equal(formatIpv4(parseIpv4('010.001.08.000')), '10.1.8.0');
});

test('IPv4: the forms ipaddr.js takes but the daemon refuses', () => {
  for (const bad of ['10.1', '10.0.1', '167772161', '0x0a.0.0.1', '10.0.0.0x1', '0xa000001', '1.2.3.4.5', '1.2.3.256', '0001.2.3.4', '1..2.3', '', 'x', '1.2.3.-4', '+1.2.3.4', '1.2.3.4 5', '::ffff:1.2.3.4']) {
    assert.throws(() => parseIpv4(bad), (e) => isCode(e, 'InvalidArgument') && (e as Error).message === `invalid IPv4 address: ${bad}`, bad);
  }
});

test('IPv4: CIDR parsing, network, broadcast, masks', () => {
  const c = parseCidr('172.17.0.1/16');
  assert.deepEqual(c, { address: 0xac110001, prefixLen: 16, network: 0xac110000, broadcast: 0xac11ffff });
  assert.deepEqual(parseCidr('0.0.0.0/0'), { address: 0, prefixLen: 0, network: 0, broadcast: 0xffffffff });
  assert.deepEqual(parseCidr('10.1.2.3/32'), { address: 0x0a010203, prefixLen: 32, network: 0x0a010203, broadcast: 0x0a010203 });
  assert.equal(parseCidr('10.0.0.0/08').prefixLen, 8);
  assert.equal(subnetOf('10.213.7.9/24'), '10.213.7.0/24');
  assert.equal(subnetOf('192.168.33.77/20'), '192.168.32.0/20');
  assert.equal(maskOf(0), 0);
  assert.equal(maskOf(20), 0xfffff000);
  assert.equal(maskOf(32), 0xffffffff);
  for (const bad of ['1.2.3.4/33', '1.2.3.4/024', '1.2.3.4/', '/24', '1.2.3.4', '1.2.3.4/24/1', '1.2.3.4/-1', '1.2.3.4/ 24', 'nonsense']) {
    assert.throws(() => parseCidr(bad), (e) => isCode(e, 'InvalidArgument') && (e as Error).message === `invalid CIDR address: ${bad}`, bad);
  }
  // A bad address under a good prefix names the address, as before.
  for (const [bad, addr] of [['10.1/16', '10.1'], ['0x0a.0.0.1/8', '0x0a.0.0.1'], ['x/24', 'x']] as const) {
    assert.throws(() => parseCidr(bad), (e) => (e as Error).message === `invalid IPv4 address: ${addr}`, bad);
  }
});

test('IPv4: containment, first host, MAC', () => {
  const c = parseCidr('10.10.0.0/24');
  assert.ok(contains(c, parseIpv4('10.10.0.0')));
  assert.ok(contains(c, parseIpv4('10.10.0.255')));
  assert.ok(!contains(c, parseIpv4('10.10.1.0')));
  assert.ok(!contains(c, parseIpv4('10.9.255.255')));
  assert.ok(contains(parseCidr('0.0.0.0/0'), parseIpv4('255.255.255.255')));
  assert.ok(contains(parseCidr('1.2.3.4/32'), parseIpv4('1.2.3.4')));
  assert.ok(!contains(parseCidr('1.2.3.4/32'), parseIpv4('1.2.3.5')));
  assert.equal(formatIpv4(firstHost(c)), '10.10.0.1');
  assert.equal(formatIpv4(firstHost(parseCidr('10.10.0.4/31'))), '10.10.0.4');
  assert.equal(formatIpv4(firstHost(parseCidr('10.10.0.4/32'))), '10.10.0.4');
  assert.equal(macFromIpv4('172.17.0.2'), '02:42:ac:11:00:02');
  assert.equal(macFromIpv4(0xffffffff), '02:42:ff:ff:ff:ff');
});

test('IPv6: canonical (RFC 5952) forms', () => {
  const cases: Array<[string, string]> = [
    ['::', '::'],
    ['0:0:0:0:0:0:0:0', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['2001:DB8::A', '2001:db8::a'],
    ['2001:0db8:0000:0000:0000:0000:0002:0001', '2001:db8::2:1'],
    // One zero group is not compressed; the first of equally long runs is.
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
    ['::2:3:4:5:6:7:8', '0:2:3:4:5:6:7:8'],
    // An IPv4 tail: mapped stays hex, and "::a.b.c.d" is IPv4-compatible (not ipaddr.js's mapped reading).
    ['::ffff:192.0.2.1', '::ffff:c000:201'],
    ['::192.0.2.1', '::c000:201'],
    ['::ffff:010.0.0.1', '::ffff:a00:1'],
    ['64:ff9b::1.2.3.4', '64:ff9b::102:304'],
    ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'],
    [' fd00::1 ', 'fd00::1'],
  ];
  for (const [input, want] of cases) assert.equal(formatIpv6(parseIpv6(input)), want, input);
  assert.equal(parseIpv6('::ffff:1.2.3.4'), 0xffff01020304n);
  assert.equal(parseIpv6('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'), (1n << 128n) - 1n);
  assert.equal(formatIpv6((1n << 128n) - 1n), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff');
});

test('IPv6: refused forms, zone ids and non-decimal IPv4 tails included', () => {
  const bad = [
    '', '1.2.3.4', ':', ':::', '1::2::3', ':1:2:3:4:5:6:7', '1:2:3:4:5:6:7:', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7:8::', '1::2:3:4:5:6:7:8',
    '12345::', 'g::1', 'fe80::1%eth0', 'fe80::1%1', '::1.2.3', '::1.2.3.4.5', '::256.0.0.1', '::ffff:0x0a.0.0.1', '::ffff:0001.2.3.4',
    '::ffff:10.1', '1:2:3:4:5:6:7:1.2.3.4', '::1.2.3.4:5', '1.2.3.4::', 'fd00:1:::/64',
  ];
  for (const b of bad) {
    assert.throws(() => parseIpv6(b), (e) => isCode(e, 'InvalidArgument') && (e as Error).message === `invalid IPv6 address: ${b}`, b);
    assert.equal(isIpv6(b), false, b);
  }
  assert.equal(isIpv6('fd00::1'), true);
});

test('IPv6: subnets, containment, overlap, first host', () => {
  const c = parseCidr6('fd00:1::5/64');
  assert.deepEqual(c, { address: parseIpv6('fd00:1::5'), prefixLen: 64, network: parseIpv6('fd00:1::'), last: parseIpv6('fd00:1::ffff:ffff:ffff:ffff') });
  assert.equal(cidr6Text(c), 'fd00:1::/64');
  assert.equal(subnetOf6('2001:DB8:0:0:8000::1/65'), '2001:db8:0:0:8000::/65');
  assert.equal(formatIpv6(firstHost6(c)), 'fd00:1::1');
  const all = parseCidr6('::/0');
  assert.equal(all.network, 0n);
  assert.equal(all.last, (1n << 128n) - 1n);
  assert.equal(parseCidr6('fd00::7/128').last, parseIpv6('fd00::7'));
  assert.ok(contains6(c, parseIpv6('fd00:1::abcd')));
  assert.ok(!contains6(c, parseIpv6('fd00:2::1')));
  assert.ok(overlaps6(parseCidr6('fd00::/16'), c));
  assert.ok(!overlaps6(parseCidr6('fd00:2::/64'), c));
  for (const b of ['fd00::/129', 'fd00::/0064', 'fd00::', 'fd00::/', '/64', 'fd00::/64/1']) {
    assert.throws(() => parseCidr6(b), (e) => isCode(e, 'InvalidArgument') && (e as Error).message === `invalid CIDR address: ${b}`, b);
  }
  assert.throws(() => parseCidr6('fe80::1%eth0/64'), (e) => (e as Error).message === 'invalid IPv6 address: fe80::1%eth0');
  assert.throws(() => parseCidr6('fd00:1:::/64'), (e) => (e as Error).message === 'invalid IPv6 address: fd00:1:::');
});
