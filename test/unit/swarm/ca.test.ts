// The swarm's CA (drivers/swarm/ca.ts, through the openssl binary) and its join tokens
// (lib/swarm/join-token.ts): a root that is a CA, node certificates it signs (openssl verify says
// so) with the reference's subject and names, refusals of ids and hosts that could inject into
// openssl's configuration, and tokens in the SWMTKN-1 format carrying the root's digest.
import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { issueNodeCert, makeRootCa, newNodeKey, nodeIdentity, signNodeKey } from '../../../drivers/swarm/ca.ts';
import { REFERENCE_ROOT } from './reference-root.ts';
import { caDigest, digestHex, makeJoinToken, parseJoinToken } from '../../../lib/swarm/join-token.ts';

const NODE = 'abcdefghij0123456789klmno';
const CLUSTER = 'zyxwvutsrq9876543210ponml';

test('a root CA, and a node certificate it signs with the reference subject, names and uses', async () => {
  const ca = await makeRootCa();
  const root = new X509Certificate(ca.certPem);
  assert.equal(root.ca, true);
  assert.equal(root.subject, 'CN=swarm-ca');
  assert.equal(root.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
  const node = await issueNodeCert(ca, { nodeId: NODE, clusterId: CLUSTER, role: 'swarm-manager', hosts: ['10.1.2.3', 'host-a.example'] });
  const cert = new X509Certificate(node.certPem);
  assert.equal(cert.ca, false);
  assert.ok(cert.checkIssued(root) && cert.verify(root.publicKey), 'signed by the root');
  assert.equal(cert.subjectAltName, `DNS:swarm-manager, DNS:${NODE}, DNS:swarm-ca, IP Address:10.1.2.3, DNS:host-a.example`);
  // The subject's names as PrintableString (0x13), as Go encodes them: the reference's CertIssuerSubject.
  assert.ok(root.raw.includes(Buffer.from('MBMxETAPBgNVBAMTCHN3YXJtLWNh', 'base64')), "the root's subject is DER-equal to the reference's");
  assert.ok(cert.checkPrivateKey((await import('node:crypto')).createPrivateKey(node.keyPem)));
  const days = (Date.parse(cert.validTo) - Date.now()) / 86_400_000;
  assert.ok(days > 89 && days <= 90, `90 days (${days})`);
  assert.deepEqual({ ...nodeIdentity(node.certPem)!, validTo: undefined }, { nodeId: NODE, clusterId: CLUSTER, role: 'swarm-manager', validTo: undefined });
  const dir = mkdtempSync(join(tmpdir(), 'ca-test-'));
  try {
    writeFileSync(join(dir, 'ca.pem'), ca.certPem);
    writeFileSync(join(dir, 'node.pem'), node.certPem);
    const out = execFileSync('openssl', ['verify', '-CAfile', join(dir, 'ca.pem'), '-purpose', 'sslserver', join(dir, 'node.pem')], { encoding: 'utf8' });
    assert.match(out, /node\.pem: OK/);
    execFileSync('openssl', ['verify', '-CAfile', join(dir, 'ca.pem'), '-purpose', 'sslclient', join(dir, 'node.pem')]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(nodeIdentity(ca.certPem), undefined, 'the root is no node');
});

test('ids and hosts that are not plain names are refused before openssl sees them', async () => {
  const ca = await makeRootCa(1);
  await assert.rejects(issueNodeCert(ca, { nodeId: 'x\nCN = evil', clusterId: CLUSTER, role: 'swarm-worker', hosts: [] }), /invalid node or cluster id/);
  await assert.rejects(issueNodeCert(ca, { nodeId: NODE, clusterId: CLUSTER, role: 'swarm-worker', hosts: ['a,DNS:evil'] }), /invalid host/);
  const worker = await issueNodeCert(ca, { nodeId: NODE, clusterId: CLUSTER, role: 'swarm-worker', hosts: ['fd00::1'], days: 1 });
  assert.equal(nodeIdentity(worker.certPem)?.role, 'swarm-worker');
  assert.match(new X509Certificate(worker.certPem).subjectAltName ?? '', /IP Address:FD00:0:0:0:0:0:0:1/i);
});

test('join tokens: SWMTKN-1-<50 base-36 digest>-<25 base-36 secret>, the digest of the root PEM, a new secret each time', async () => {
  const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const a = makeJoinToken(pem);
  const b = makeJoinToken(pem);
  assert.match(a, /^SWMTKN-1-[0-9a-z]{50}-[0-9a-z]{25}$/);
  assert.notEqual(a, b);
  const pa = parseJoinToken(a)!;
  assert.equal(pa.digest, parseJoinToken(b)!.digest);
  assert.equal(pa.digest, caDigest(pem));
  assert.equal(BigInt(`0x${createHash('sha256').update(pem).digest('hex')}`).toString(36).padStart(50, '0'), pa.digest);
  // The reference's: dockerd 20.10's root (docs/reference-swarm.md) and its token's digest.
  assert.equal(caDigest(REFERENCE_ROOT), '4yxiuph80t8twxxxwt3t0fqlkcrtr0y91q3pdixsvjczbi5rsp');
  // The reference's own example token parses.
  assert.ok(parseJoinToken('SWMTKN-1-1h8aps2yszaiqmz2l3oc5392pgk8e49qhx2aj3nyv0ui0hez2a-6qmn92w6bu3jdvnglku58u11a'));
  for (const bad of ['', 'SWMTKN-1-abc-def', 'SWMTKN-2-1-' + 'a'.repeat(50) + '-' + 'b'.repeat(25), `SWMTKN-1-${'A'.repeat(50)}-${'b'.repeat(25)}`]) assert.equal(parseJoinToken(bad), undefined, bad);
});

test('a joining node\'s key: the manager signs its public half; only that key goes with the certificate; another key type is refused', async () => {
  const ca = await makeRootCa();
  const key = newNodeKey();
  const certPem = await signNodeKey(ca, key.publicKeyPem, { nodeId: NODE, clusterId: CLUSTER, role: 'swarm-worker', hosts: ['10.9.8.7'] });
  const cert = new X509Certificate(certPem);
  assert.ok(cert.verify(new X509Certificate(ca.certPem).publicKey), 'signed by the root');
  assert.ok(cert.checkPrivateKey((await import('node:crypto')).createPrivateKey(key.keyPem)), 'for the joining node\'s key');
  assert.equal(nodeIdentity(cert)?.role, 'swarm-worker');
  const rsa = (await import('node:crypto')).generateKeyPairSync('rsa', { modulusLength: 1024, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  await assert.rejects(signNodeKey(ca, rsa.publicKey, { nodeId: NODE, clusterId: CLUSTER, role: 'swarm-worker', hosts: [] }), /P-256/);
});

test('a token\'s digest in hex, as the reference prints a CA that does not match: the SHA-256 of the root', async () => {
  const ca = await makeRootCa();
  assert.equal(digestHex(caDigest(ca.certPem)), createHash('sha256').update(ca.certPem).digest('hex'));
});
