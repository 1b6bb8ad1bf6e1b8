// The swarm's certificate authority: a root CA and the certificates of its nodes, as swarmkit makes
// them — ECDSA P-256; the root's subject CN=swarm-ca (20 years); a node's O=<cluster id>,
// OU=<swarm-manager|swarm-worker>, CN=<node id> (90 days by default), usable as a TLS server and
// client, with the role, the node id (and for a manager swarm-ca) and the node's addresses as
// subject alternative names (swarmkit names no address; etcd's TLS checks the address it is
// reached at). Unlike swarmkit's, a certificate is valid from the moment it is made, not an hour before.
// Keys come from node:crypto, certificates from the `openssl` binary (X.509 is never built by
// hand). Every file it writes lives in a private temporary directory removed before it answers.
import { createPublicKey, generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';

export type SwarmRole = 'swarm-manager' | 'swarm-worker';

export interface KeyPair {
  certPem: string;
  keyPem: string;
}

export const ROOT_CN = 'swarm-ca';
const ROOT_DAYS = 20 * 365;
export const NODE_CERT_DAYS = 90;

const ID = /^[a-z0-9]{1,64}$/;
/** Names as PrintableString where they can be, as Go writes them (openssl's default config says UTF8String). */
const STRING_MASK = 'string_mask = default';
const DNS_NAME = /^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/;

function ecKey(): string {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1', privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } }).privateKey;
}

const serial = () => `0x${randomBytes(16).toString('hex').replace(/^[89a-f]/, '1')}`;

async function inTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'engine-ca-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function openssl(args: string[]): Promise<void> {
  const r = await execa('openssl', args, { reject: false, stdin: 'ignore' });
  if (r.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${(r.stderr || r.stdout).trim().split('\n')[0]}`);
}

/** A new root CA of the swarm. */
export function makeRootCa(days = ROOT_DAYS): Promise<KeyPair> {
  return inTempDir(async (dir) => {
    const keyPem = ecKey();
    await writeFile(join(dir, 'ca.key'), keyPem, { mode: 0o600 });
    await writeFile(
      join(dir, 'ca.cnf'),
      ['[req]', 'distinguished_name = dn', 'prompt = no', STRING_MASK, '[dn]', `CN = ${ROOT_CN}`, '[v3_ca]', 'basicConstraints = critical,CA:TRUE', 'keyUsage = critical,keyCertSign,cRLSign', 'subjectKeyIdentifier = hash', ''].join('\n'),
    );
    await openssl(['req', '-x509', '-new', '-config', join(dir, 'ca.cnf'), '-extensions', 'v3_ca', '-key', join(dir, 'ca.key'), '-days', String(days), '-sha256', '-set_serial', serial(), '-out', join(dir, 'ca.crt')]);
    return { certPem: await readFile(join(dir, 'ca.crt'), 'utf8'), keyPem };
  });
}

export interface NodeCertRequest {
  nodeId: string;
  clusterId: string;
  role: SwarmRole;
  /** IP addresses and DNS names the node is reached at (its advertise and listen addresses). */
  hosts: readonly string[];
  days?: number;
}

/** A node's key and certificate, signed by the swarm's root CA. */
export async function issueNodeCert(ca: KeyPair, req: NodeCertRequest): Promise<KeyPair> {
  const keyPem = ecKey();
  return { certPem: await signNodeKey(ca, publicKeyOf(keyPem), req), keyPem };
}

/** A new node key (a joining node makes its own: only its public half leaves the node). */
export function newNodeKey(): { keyPem: string; publicKeyPem: string } {
  const keyPem = ecKey();
  return { keyPem, publicKeyPem: publicKeyOf(keyPem) };
}

function publicKeyOf(keyPem: string): string {
  return createPublicKey(keyPem).export({ type: 'spki', format: 'pem' }).toString();
}

/**
 * A node certificate for `publicKeyPem` (a P-256 key), signed by the swarm's root CA: what a manager
 * gives a node that joins with a valid token.
 */
export async function signNodeKey(ca: KeyPair, publicKeyPem: string, req: NodeCertRequest): Promise<string> {
  if (!ID.test(req.nodeId) || !ID.test(req.clusterId)) throw new Error(`invalid node or cluster id: ${req.nodeId} ${req.clusterId}`);
  const key = createPublicKey(publicKeyPem);
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new Error('a node key must be an ECDSA P-256 key');
  // A manager's certificate also names the CA role, as swarmkit's do.
  const sans = [`DNS:${req.role}`, `DNS:${req.nodeId}`, ...(req.role === 'swarm-manager' ? [`DNS:${ROOT_CN}`] : [])];
  for (const h of req.hosts) {
    if (isIP(h)) sans.push(`IP:${h}`);
    else if (DNS_NAME.test(h)) sans.push(`DNS:${h}`);
    else throw new Error(`invalid host for a node certificate: ${JSON.stringify(h)}`);
  }
  return await inTempDir(async (dir) => {
    const f = (n: string) => join(dir, n);
    await writeFile(f('node.pub'), key.export({ type: 'spki', format: 'pem' }));
    await writeFile(f('ca.key'), ca.keyPem, { mode: 0o600 });
    await writeFile(f('ca.crt'), ca.certPem);
    await writeFile(
      f('ext.cnf'),
      ['[v3_node]', 'basicConstraints = critical,CA:FALSE', 'keyUsage = critical,digitalSignature,keyEncipherment', 'extendedKeyUsage = serverAuth,clientAuth', `subjectAltName = ${sans.join(',')}`, 'authorityKeyIdentifier = keyid', ''].join('\n'),
    );
    const subject = `/O=${req.clusterId}/OU=${req.role}/CN=${req.nodeId}`;
    await openssl(['x509', '-new', '-force_pubkey', f('node.pub'), '-subj', subject, '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-set_serial', serial(), '-days', String(req.days ?? NODE_CERT_DAYS), '-sha256', '-extfile', f('ext.cnf'), '-extensions', 'v3_node', '-out', f('node.crt')]);
    return await readFile(f('node.crt'), 'utf8');
  });
}

export interface NodeIdentity {
  nodeId: string;
  clusterId: string;
  role: SwarmRole;
  validTo: Date;
}

/** What a node certificate says of its node: id, cluster, role (undefined for one that is not a swarm node's). */
export function nodeIdentity(cert: string | X509Certificate): NodeIdentity | undefined {
  const c = typeof cert === 'string' ? new X509Certificate(cert) : cert;
  const fields = Object.fromEntries(c.subject.split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  const role = fields.OU;
  if (!fields.CN || !fields.O || (role !== 'swarm-manager' && role !== 'swarm-worker')) return undefined;
  return { nodeId: fields.CN, clusterId: fields.O, role, validTo: new Date(c.validTo) };
}
