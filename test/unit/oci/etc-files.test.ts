import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createSpecBuilder, DEFAULT_HOSTS } from '../../../drivers/oci/index.ts';

const log = pino({ level: 'silent' });

function setup(resolv: string, systemd?: string) {
  const dir = mkdtempSync(join(tmpdir(), 'oci-etc-'));
  const host = { hosts: join(dir, 'host-hosts'), resolvConf: join(dir, 'host-resolv'), systemdResolvConf: join(dir, 'systemd-resolv') };
  writeFileSync(host.hosts, '127.0.0.1 localhost\n10.0.0.5 myhost\n');
  writeFileSync(host.resolvConf, resolv);
  if (systemd !== undefined) writeFileSync(host.systemdResolvConf, systemd);
  const out = join(dir, 'ctr');
  mkdirSync(out, { recursive: true });
  return { dir, out, builder: createSpecBuilder({ log, hostEtc: host }), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
const cfg = { Hostname: 'c0ffee123456', Domainname: '', User: '', Tty: false, Env: null, WorkingDir: '', Labels: {} };
const hc = (over: Record<string, unknown> = {}) => ({
  Binds: null, NetworkMode: 'bridge', Privileged: false, ReadonlyRootfs: false, ShmSize: 0, CapAdd: null, CapDrop: null,
  Dns: [], DnsOptions: [], DnsSearch: [], ExtraHosts: null, ...over,
});

test('hostname, hosts with extra hosts, filtered resolv.conf', async () => {
  const t = setup('# generated\nsearch example.com\nnameserver 127.0.0.1\nnameserver 10.1.2.3\nnameserver ::1\noptions ndots:2\n');
  try {
    const files = await t.builder.writeEtcFiles(t.out, cfg, hc({ ExtraHosts: ['db:10.0.0.9', 'v6:fe80::1'] }));
    assert.deepEqual(files, { hostname: join(t.out, 'hostname'), hosts: join(t.out, 'hosts'), resolvConf: join(t.out, 'resolv.conf') });
    assert.equal(readFileSync(files.hostname, 'utf8'), 'c0ffee123456\n');
    const hosts = readFileSync(files.hosts, 'utf8');
    assert.ok(hosts.startsWith(DEFAULT_HOSTS));
    assert.ok(hosts.includes('127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n'));
    assert.ok(hosts.endsWith('10.0.0.9\tdb\nfe80::1\tv6\n'));
    const resolv = readFileSync(files.resolvConf, 'utf8');
    assert.ok(resolv.includes('nameserver 10.1.2.3'));
    assert.ok(!resolv.includes('127.0.0.1'));
    assert.ok(!resolv.includes('::1'));
    assert.ok(resolv.includes('search example.com'));
    assert.ok(resolv.includes('options ndots:2'));
  } finally {
    t.cleanup();
  }
});

test('only localhost nameservers: falls back to public DNS; systemd stub is followed', async () => {
  const t = setup('nameserver 127.0.0.1\n');
  try {
    const files = await t.builder.writeEtcFiles(t.out, cfg, hc());
    const r = readFileSync(files.resolvConf, 'utf8');
    assert.ok(r.includes('nameserver 8.8.8.8\nnameserver 8.8.4.4\n'));
  } finally {
    t.cleanup();
  }
  const s = setup('nameserver 127.0.0.53\noptions edns0\n', 'nameserver 192.168.1.1\n');
  try {
    const files = await s.builder.writeEtcFiles(s.out, cfg, hc());
    assert.equal(readFileSync(files.resolvConf, 'utf8'), 'nameserver 192.168.1.1\n');
  } finally {
    s.cleanup();
  }
});

test('Dns/DnsSearch/DnsOptions override; host network copies host files', async () => {
  const t = setup('search host.lan\nnameserver 10.1.2.3\n');
  try {
    const files = await t.builder.writeEtcFiles(t.out, cfg, hc({ Dns: ['1.1.1.1'], DnsOptions: ['ndots:5'] }));
    assert.equal(readFileSync(files.resolvConf, 'utf8'), 'search host.lan\nnameserver 1.1.1.1\noptions ndots:5\n');
    const files2 = await t.builder.writeEtcFiles(t.out, cfg, hc({ DnsSearch: ['a.com', 'b.com'] }));
    assert.equal(readFileSync(files2.resolvConf, 'utf8'), 'search a.com b.com\nnameserver 10.1.2.3\n');
    const host = await t.builder.writeEtcFiles(t.out, cfg, hc({ NetworkMode: 'host' }));
    assert.equal(readFileSync(host.hosts, 'utf8'), '127.0.0.1 localhost\n10.0.0.5 myhost\n');
    assert.equal(readFileSync(host.resolvConf, 'utf8'), 'search host.lan\nnameserver 10.1.2.3\n');
  } finally {
    t.cleanup();
  }
});

test("the daemon's --dns, --dns-search, --dns-opt apply where the container sets none; host-gateway resolves", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'oci-etc-'));
  try {
    const host = { hosts: join(dir, 'host-hosts'), resolvConf: join(dir, 'host-resolv'), systemdResolvConf: join(dir, 'none') };
    writeFileSync(host.hosts, '');
    writeFileSync(host.resolvConf, 'nameserver 10.1.2.3\nsearch host.example\n');
    const out = join(dir, 'ctr');
    mkdirSync(out);
    const b = createSpecBuilder({ log, hostEtc: host, dns: { servers: ['9.9.9.9'], search: ['corp.example'], options: ['ndots:3'] }, hostGatewayIp: () => '172.17.0.1' });
    const files = await b.writeEtcFiles(out, cfg, hc({ ExtraHosts: ['host.docker.internal:host-gateway'] }));
    assert.equal(readFileSync(files.resolvConf, 'utf8'), 'search corp.example\nnameserver 9.9.9.9\noptions ndots:3\n');
    assert.ok(readFileSync(files.hosts, 'utf8').endsWith('172.17.0.1\thost.docker.internal\n'));
    const own = await b.writeEtcFiles(out, cfg, hc({ Dns: ['1.1.1.1'] }));
    assert.match(readFileSync(own.resolvConf, 'utf8'), /nameserver 1\.1\.1\.1\n/);
    const embedded = await b.writeEtcFiles(out, cfg, hc(), { nameserver: '10.83.0.1' });
    assert.equal(readFileSync(embedded.resolvConf, 'utf8'), 'search corp.example\nnameserver 10.83.0.1\noptions ndots:3\n');
    // The embedded DNS without an ndots asked for: ndots:0, as the reference writes it.
    const plain = createSpecBuilder({ log, hostEtc: host });
    const embedded0 = await plain.writeEtcFiles(out, cfg, hc(), { nameserver: '127.0.0.11' });
    assert.match(readFileSync(embedded0.resolvConf, 'utf8'), /nameserver 127\.0\.0\.11\n(.*\n)*options .*ndots:0\n$/);
    const noGw = createSpecBuilder({ log, hostEtc: host });
    await assert.rejects(noGw.writeEtcFiles(out, cfg, hc({ ExtraHosts: ['h:host-gateway'] })), /unable to derive the IP value for host-gateway/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
