// Cluster membership on an etcd that serves TLS and requires client certificates: a test CA, a
// server certificate for 127.0.0.1 (IP SAN) and a client certificate made with openssl in a temp
// directory; a daemon given --cluster-store-opt kv.cacertfile/kv.certfile/kv.keyfile joins, one
// given only the CA (no client certificate) does not.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { apiRequest, dockerOk } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { swarmInit, type SwarmTokens } from './harness/swarm.ts';
import { until } from './harness/wait.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TTL = 3;


interface Pki {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/** A CA, a server certificate for 127.0.0.1 (IP SAN, serverAuth) and a client certificate (clientAuth), all PEM. */
function makePki(dir: string): Pki {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const f = (n: string) => join(dir, n);
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=engine-e2e-ca',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  const leaf = (name: string, cn: string, ext: string) => {
    writeFileSync(f(`${name}.ext`), ext);
    ssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${cn}`);
    ssl('x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f(`${name}.pem`), '-days', '2', '-extfile', f(`${name}.ext`));
  };
  leaf('server', '127.0.0.1', 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n');
  leaf('client', 'engined', 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n');
  return { ca: f('ca.pem'), serverCert: f('server.pem'), serverKey: f('server.key'), clientCert: f('client.pem'), clientKey: f('client.key') };
}

describe('cluster on etcd over TLS with client certificates', { skip: !existsSync('/usr/bin/etcd') && 'etcd-server is not installed (hack/install.sh installs it)' }, () => {
  let dir: string | undefined;
  let pki: Pki;
  let etcd: EtcdHandle | undefined;
  const ds: DaemonHandle[] = [];
  const dk = (d: DaemonHandle) => dockerOk(() => d);
  const store = (opts: string[]) => ['--cluster-store', `etcd://${etcd!.clientUrl.replace(/^https:\/\//, '')}`, '--cluster-store-opt', `discovery.ttl=${TTL}`, ...opts.flatMap((o) => ['--cluster-store-opt', o])];
  let tokens: SwarmTokens;
  const state = (d: DaemonHandle) => dk(d)('info', '--format', '{{.Swarm.LocalNodeState}}');

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engine-etcd-tls-'));
    pki = makePki(dir);
    etcd = await startEtcd({
      tls: { cert: pki.serverCert, key: pki.serverKey, ca: pki.ca, clientCertAuth: true, clientCert: pki.clientCert, clientKey: pki.clientKey },
    });
    assert.match(etcd.clientUrl, /^https:\/\/127\.0\.0\.1:\d+$/);
  });
  after(async () => {
    for (const d of ds) await d.cleanup().catch(() => {});
    await etcd?.cleanup().catch(() => {});
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('kv.cacertfile, kv.certfile and kv.keyfile: the daemon joins the TLS etcd; node ls lists it', async () => {
    const d = await startDaemon({ args: store([`kv.cacertfile=${pki.ca}`, `kv.certfile=${pki.clientCert}`, `kv.keyfile=${pki.clientKey}`]) });
    ds.push(d);
    tokens = await swarmInit(d);
    await until('the node is active on the TLS etcd', async () => (await state(d)) === 'active', 30_000).catch((err: Error) => {
      throw new Error(`${err.message}\ndaemon log tail:\n${d.logs().split('\n').slice(-30).join('\n')}`);
    });
    const ids = (await dk(d)('node', 'ls', '-q')).split('\n').filter(Boolean);
    assert.equal(ids.length, 1, ids.join(' | '));
    const self = JSON.parse(await dk(d)('info', '--format', '{{json .Swarm.NodeID}}'));
    assert.equal(ids[0], self);
  });

  test('only the CA, no client certificate: the join is refused and the daemon stays in no swarm (etcd requires one)', async () => {
    const d = await startDaemon({ args: store([`kv.cacertfile=${pki.ca}`]) });
    ds.push(d);
    const r = await apiRequest(d, 'POST', '/swarm/join', JSON.stringify({ AdvertiseAddr: '127.0.0.1', RemoteAddrs: ['127.0.0.1:2377'], JoinToken: tokens.manager }));
    assert.equal(r.status, 503, r.text);
    const end = Date.now() + 3_000;
    while (Date.now() < end) {
      assert.equal(await state(d), 'inactive', 'no client certificate: in no swarm');
      await sleep(500);
    }
    // The first daemon is still the only node.
    const ids = (await dk(ds[0]!)('node', 'ls', '-q')).split('\n').filter(Boolean);
    assert.equal(ids.length, 1, ids.join(' | '));
  });
});
