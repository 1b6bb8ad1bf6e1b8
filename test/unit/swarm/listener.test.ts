// The swarm manager's own endpoint (drivers/swarm/listener.ts): HTTPS with the node's certificate;
// a peer with a certificate of the same swarm is known by it, one without a certificate or with
// another swarm's is not; a listen address in use is refused in the reference's words.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { createServer } from 'node:net';
import pino from 'pino';
import { issueNodeCert, makeRootCa, type KeyPair } from '../../../drivers/swarm/ca.ts';
import { SwarmListener } from '../../../drivers/swarm/listener.ts';

const CLUSTER = 'listenercluster0000000000';
const log = pino({ level: 'silent' });

function get(port: number, ca: string, client?: KeyPair): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/v1/node', ca, ...(client ? { cert: client.certPem, key: client.keyPem } : {}) }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('swarm listener', () => {
  let ca: KeyPair;
  let node: KeyPair;
  let peer: KeyPair;
  let stranger: KeyPair;
  let listener: SwarmListener;

  before(async () => {
    ca = await makeRootCa();
    const other = await makeRootCa();
    node = await issueNodeCert(ca, { nodeId: 'managernode00000000000000', clusterId: CLUSTER, role: 'swarm-manager', hosts: ['127.0.0.1'] });
    peer = await issueNodeCert(ca, { nodeId: 'peernode00000000000000000', clusterId: CLUSTER, role: 'swarm-worker', hosts: ['127.0.0.1'] });
    stranger = await issueNodeCert(other, { nodeId: 'strangernode0000000000000', clusterId: CLUSTER, role: 'swarm-manager', hosts: ['127.0.0.1'] });
    listener = new SwarmListener({ host: '127.0.0.1', port: 0, tls: { caPem: ca.certPem, ...node }, self: { nodeId: 'managernode00000000000000', clusterId: CLUSTER, role: 'manager' }, log });
    await listener.start();
  }, { timeout: 30_000 });
  after(() => listener.stop());

  test('a peer of the swarm is known by its certificate; no certificate or another swarm\'s is not', async () => {
    const ok = await get(listener.port, ca.certPem, peer);
    assert.deepEqual([ok.status, ok.body], [200, { NodeID: 'managernode00000000000000', ClusterID: CLUSTER, Role: 'manager' }]);
    assert.equal((await get(listener.port, ca.certPem)).status, 401);
    assert.equal((await get(listener.port, ca.certPem, stranger)).status, 401);
  });

  test('a listen address in use is refused in the reference\'s words', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as { port: number }).port;
    const l = new SwarmListener({ host: '127.0.0.1', port, tls: { caPem: ca.certPem, ...node }, self: { nodeId: 'x', clusterId: CLUSTER, role: 'manager' }, log });
    await assert.rejects(l.start(), { message: `manager stopped: failed to listen on remote API address: listen tcp 127.0.0.1:${port}: bind: address already in use` });
    busy.close();
  });
});
