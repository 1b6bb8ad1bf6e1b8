// swarm init's addresses (lib/swarm/addresses.ts) as moby's listen_addr.go resolves them, on tables
// of interfaces: normalisation, interfaces by name, the refusals in the reference's words.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normaliseAddr, resolveAdvertiseAddr, resolveDataPathAddr, resolveListenAddr, systemAddr, type Interfaces } from '../../../lib/swarm/addresses.ts';

const v4 = (address: string, internal = false) => ({ address, family: 'IPv4' as const, internal });
const v6 = (address: string) => ({ address, family: 'IPv6' as const, internal: false });
const IFACES: Interfaces = { lo: [v4('127.0.0.1', true)], eth0: [v4('10.1.2.3'), v6('fe80::1')], br0: [v4('172.17.0.1')] };

test('normalised as the reference does: host:port, 0.0.0.0 and 2377 for what is left out', () => {
  assert.equal(normaliseAddr('127.0.0.1:2377'), '127.0.0.1:2377');
  assert.equal(normaliseAddr('eth0'), 'eth0:2377');
  assert.equal(normaliseAddr(':4000'), '0.0.0.0:4000');
  assert.equal(normaliseAddr('tcp://10.0.0.1'), '10.0.0.1:2377');
  assert.equal(normaliseAddr('[fd00::1]:2377'), '[fd00::1]:2377');
  assert.equal(normaliseAddr('nonsense'), 'nonsense:2377');
  assert.throws(() => normaliseAddr(''), { message: 'invalid empty address' });
});

test('listen address: an IP (0.0.0.0 too) or an interface; anything else in the reference words', () => {
  assert.deepEqual(resolveListenAddr('0.0.0.0:2377', IFACES), { host: '0.0.0.0', port: '2377' });
  assert.deepEqual(resolveListenAddr('eth0:2377', IFACES), { host: '10.1.2.3', port: '2377' }, 'an interface: its IPv4 address');
  assert.throws(() => resolveListenAddr('nonsense:2377', IFACES), { message: 'listen address must be an IP address or network interface (with optional port number)' });
  assert.throws(() => resolveListenAddr('a/b', IFACES), { message: 'could not parse listen address a/b' });
  assert.throws(() => resolveListenAddr('two:2377', { two: [v4('10.0.0.1'), v4('10.0.0.2')] }), { message: 'interface two has more than one IPv4 address (10.0.0.1 and 10.0.0.2)' });
});

test("advertise address: given, else the daemon's default, else the system's one address", () => {
  const base = { listenPort: '2377', defaultAdvertiseAddr: '', ifaces: IFACES, managed: ['172.17.0.0/16'] };
  assert.deepEqual(resolveAdvertiseAddr({ ...base, advertiseAddr: '127.0.0.1' }), { host: '127.0.0.1', port: '2377' });
  assert.deepEqual(resolveAdvertiseAddr({ ...base, advertiseAddr: '10.9.9.9:4000' }), { host: '10.9.9.9', port: '4000' });
  assert.throws(() => resolveAdvertiseAddr({ ...base, advertiseAddr: '0.0.0.0' }), { message: 'advertise address must be a non-zero IP address or network interface (with optional port number)' });
  assert.deepEqual(resolveAdvertiseAddr({ ...base, advertiseAddr: '', defaultAdvertiseAddr: 'eth0' }), { host: '10.1.2.3', port: '2377' });
  assert.throws(() => resolveAdvertiseAddr({ ...base, advertiseAddr: '', defaultAdvertiseAddr: 'nope' }), /^Error: default advertise address must be/);
  assert.deepEqual(resolveAdvertiseAddr({ ...base, advertiseAddr: '' }), { host: '10.1.2.3', port: '2377' }, "the bridge's managed subnet does not count");
  assert.throws(() => systemAddr(IFACES), { message: 'could not choose an IP address to advertise since this system has multiple addresses on different interfaces (10.1.2.3 on eth0 and 172.17.0.1 on br0)' });
  assert.throws(() => systemAddr({ lo: [v4('127.0.0.1', true)] }), { message: "could not find the system's IP address" });
});

test('data path address: empty, a non-zero IP or an interface', () => {
  assert.equal(resolveDataPathAddr('', IFACES), '');
  assert.equal(resolveDataPathAddr('eth0', IFACES), '10.1.2.3');
  assert.throws(() => resolveDataPathAddr('0.0.0.0', IFACES), { message: 'data path address must be a non-zero IP address or network interface (without a port number)' });
});
