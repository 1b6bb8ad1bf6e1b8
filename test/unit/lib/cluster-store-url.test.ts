// --cluster-store and --cluster-store-opt as the daemon reads them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseClusterStore } from '../../../lib/cluster/store-url.ts';

test('etcd://HOST:PORT[,HOST:PORT]: http endpoints, https with a CA; the lease TTL from discovery.ttl (15 s by default); the fence margin TTL/5 up to 2 s by default', () => {
  assert.deepEqual(parseClusterStore('etcd://127.0.0.1:2379,etcd.example:2380'), { endpoints: ['http://127.0.0.1:2379', 'http://etcd.example:2380'], ttlSeconds: 15, fenceMarginSeconds: 2 });
  assert.deepEqual(parseClusterStore('etcd://[::1]:2379', { 'kv.cacertfile': '/ca.pem', 'kv.certfile': '/c.pem', 'kv.keyfile': '/k.pem', 'discovery.ttl': '5' }), {
    endpoints: ['https://[::1]:2379'],
    tls: { caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem' },
    ttlSeconds: 5,
    fenceMarginSeconds: 1,
  });
});

test('a malformed URL or option refuses the start with the reason', () => {
  assert.throws(() => parseClusterStore('http://127.0.0.1:2379'), /invalid --cluster-store "http:\/\/127.0.0.1:2379": expected etcd:\/\/HOST:PORT\[,HOST:PORT\]/);
  assert.throws(() => parseClusterStore('etcd://127.0.0.1'), /"127.0.0.1" is not HOST:PORT/);
  assert.throws(() => parseClusterStore('etcd://h:99999'), /is not HOST:PORT/);
  assert.throws(() => parseClusterStore('etcd://h:1', { 'kv.path': '/x' }), /invalid --cluster-store-opt kv.path/);
  assert.throws(() => parseClusterStore('etcd://h:1', { 'discovery.ttl': '1' }), /discovery.ttl=1: expected whole seconds, at least 2/);
  assert.throws(() => parseClusterStore('etcd://h:1', { 'kv.certfile': '/c.pem' }), /kv.certfile and kv.keyfile go together/);
});
