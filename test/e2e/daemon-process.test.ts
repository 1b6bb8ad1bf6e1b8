// The daemon as a process: one daemon per set of roots, --validate, flag/file conflicts, --version,
// and SIGHUP reloads (applied, or refused with the daemon running on unchanged).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO, startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker } from './harness/clients.ts';

const ENGINED = join(REPO, 'bin', 'engined');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function engined(args: string[], timeoutMs = 30_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(ENGINED, args, { timeout: timeoutMs });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('daemon process', () => {
  let d: DaemonHandle;
  let tmp: string;
  before(async () => {
    tmp = mkdtempSync('/tmp/engine-e2e-proc-');
    d = await startDaemon({ daemonJson: { labels: ['stage=one'] } });
  });
  after(async () => {
    await d?.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  });

  test('logs are text by default; --log-format json gives level, msg and time', async () => {
    assert.match(d.logs(), /^time="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z" level=info msg="API listen" /m);
    const j = await startDaemon({ args: ['--log-format', 'json'] });
    try {
      const rec = j.logs().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.msg === 'API listen');
      assert.ok(rec, j.logs().slice(-2000));
      assert.equal(rec.level, 'info');
      assert.match(String(rec.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    } finally {
      await j.cleanup();
    }
  });

  test('--version and --help', async () => {
    const v = await engined(['--version']);
    assert.equal(v.code, 0);
    assert.match(v.stdout, /^Engine version \S+, build \S+/);
    const h = await engined(['--help']);
    assert.equal(h.code, 0);
    assert.match(h.stdout, /--data-root/);
  });

  test('a second daemon on the same pidfile is refused and the first keeps serving', async () => {
    const r = await engined(['-H', `unix://${join(tmp, 'second.sock')}`, '--data-root', d.dataRoot, '--exec-root', d.execRoot, '-p', d.pidfile, '--bridge', 'none'], 60_000);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /pid|running/i);
    assert.equal((await docker(d, ['version', '--format', '{{.Server.Version}}'])).code, 0);
  });

  test('--validate: a valid file, an unknown key, a flag also in the file', async () => {
    const good = join(tmp, 'good.json');
    writeFileSync(good, JSON.stringify({ debug: true, 'max-concurrent-downloads': 4 }));
    const ok = await engined(['--validate', '--config-file', good]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /configuration OK/i);
    const bad = join(tmp, 'bad.json');
    writeFileSync(bad, JSON.stringify({ 'no-such-option': 1 }));
    const no = await engined(['--validate', '--config-file', bad]);
    assert.equal(no.code, 1);
    assert.match(no.stderr, /directives don't match any configuration option: no-such-option/);
    const both = await engined(['--debug', '--validate', '--config-file', good]);
    assert.notEqual(both.code, 0);
    assert.match(both.stderr, /specified both as a flag and in the configuration file: debug/);
  });

  test('SIGHUP applies reloadable options (debug, labels) without a restart', async () => {
    const info = async () => (await docker(d, ['info', '--format', '{{.Debug}} {{json .Labels}}'])).stdout.trim();
    assert.equal(await info(), 'false ["stage=one"]');
    writeFileSync(d.configFile, JSON.stringify({ debug: true, labels: ['stage=two'], 'max-concurrent-downloads': 2, 'insecure-registries': ['10.9.8.0/24', 'myreg.test:5000'] }));
    process.kill(d.pid, 'SIGHUP');
    let now = '';
    for (let i = 0; i < 50 && now !== 'true ["stage=two"]'; i++) {
      await sleep(100);
      now = await info();
    }
    assert.equal(now, 'true ["stage=two"]');
    const reg = JSON.parse((await docker(d, ['info', '--format', '{{json .RegistryConfig}}'])).stdout);
    assert.deepEqual(reg.InsecureRegistryCIDRs, ['127.0.0.0/8', '10.9.8.0/24']);
    assert.equal(reg.IndexConfigs['myreg.test:5000'].Secure, false);
  });

  test('SIGHUP with a change only a restart can apply, or bad JSON: refused, daemon unchanged and serving', async () => {
    const pid = d.pid;
    writeFileSync(d.configFile, JSON.stringify({ debug: false, 'data-root': '/tmp/elsewhere' }));
    process.kill(pid, 'SIGHUP');
    await sleep(500);
    writeFileSync(d.configFile, '{ not json');
    process.kill(pid, 'SIGHUP');
    await sleep(500);
    assert.equal(d.pid, pid, 'still running');
    assert.equal((await docker(d, ['info', '--format', '{{.Debug}}'])).stdout.trim(), 'true');
    assert.match(d.logs(), /reload refused/);
  });
});

describe('socket activation (-H fd://)', () => {
  test('without activated sockets the daemon exits with the reference message', async () => {
    const tmp = mkdtempSync('/tmp/engine-e2e-fd-');
    try {
      const r = await engined(['-H', 'fd://', '--data-root', join(tmp, 'data'), '--exec-root', join(tmp, 'exec'), '-p', join(tmp, 'pid'), '--bridge', 'none'], 60_000);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /no sockets found via socket activation: make sure the service was started by systemd/);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  test('a listening socket passed as fd 3 (LISTEN_PID/LISTEN_FDS) serves the API', async () => {
    const tmp = mkdtempSync('/tmp/engine-e2e-fd-');
    const sock = join(tmp, 'activated.sock');
    // Like systemd: a listening socket at fd 3, LISTEN_PID naming the daemon's own pid (exec keeps it).
    const activate = [
      'import os, socket, sys',
      's = socket.socket(socket.AF_UNIX)',
      's.bind(sys.argv[1])',
      's.listen(16)',
      'if s.fileno() != 3: os.dup2(s.fileno(), 3)',
      'os.set_inheritable(3, True)',
      "os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS='1')",
      'os.execv(sys.argv[2], sys.argv[2:])',
    ].join('\n');
    const child = spawn('/usr/bin/python3', ['-c', activate, sock, ENGINED, '-H', 'fd://', '--data-root', join(tmp, 'data'), '--exec-root', join(tmp, 'exec'), '-p', join(tmp, 'pid'), '--bridge', 'none'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (c) => (stderr += c));
    try {
      let ping = '';
      for (let i = 0; i < 100 && ping !== 'OK'; i++) {
        await sleep(200);
        ping = await promisify(execFile)('curl', ['-s', '--unix-socket', sock, 'http://x/_ping']).then((r) => r.stdout, () => '');
      }
      assert.equal(ping, 'OK', stderr);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.on('close', r));
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

describe('TCP with TLS (--tlsverify)', () => {
  let d: DaemonHandle | undefined;
  let certs: string;
  let port: number;
  before(async () => {
    certs = mkdtempSync('/tmp/engine-e2e-tls-');
    const ssl = (args: string[]) => promisify(execFile)('openssl', args, { cwd: certs });
    await ssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=engine-test-ca', '-keyout', 'ca-key.pem', '-out', 'ca.pem']);
    writeFileSync(join(certs, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
    writeFileSync(join(certs, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
    for (const who of ['server', 'client']) {
      await ssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${who}`, '-keyout', `${who}-key.pem`, '-out', `${who}.csr`]);
      await ssl(['x509', '-req', '-in', `${who}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-days', '2', '-extfile', `${who}.ext`, '-out', `${who}.pem`]);
    }
    port = 23000 + (process.pid % 2000);
    d = await startDaemon({
      args: ['-H', `tcp://127.0.0.1:${port}`, '--tlsverify', '--tlscacert', join(certs, 'ca.pem'), '--tlscert', join(certs, 'server.pem'), '--tlskey', join(certs, 'server-key.pem')],
    });
  });
  after(async () => {
    await d?.cleanup();
    rmSync(certs, { recursive: true, force: true });
  });

  test('a client certificate signed by the CA gets in; no certificate, no access', async () => {
    const cli = (extra: string[]) =>
      promisify(execFile)('/usr/local/bin/docker', ['-H', `tcp://127.0.0.1:${port}`, ...extra, 'version', '--format', '{{.Server.Version}}'], { timeout: 20_000, env: { ...process.env, DOCKER_HOST: '', DOCKER_TLS_VERIFY: '' } })
        .then((r) => ({ code: 0, out: r.stdout.trim(), err: '' }), (e: { code?: number; stderr?: string }) => ({ code: e.code ?? -1, out: '', err: e.stderr ?? '' }));
    const ok = await cli(['--tlsverify', '--tlscacert', join(certs, 'ca.pem'), '--tlscert', join(certs, 'client.pem'), '--tlskey', join(certs, 'client-key.pem')]);
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /^\d+\.\d+/);
    const plain = await promisify(execFile)('curl', ['-s', '-m', '5', `http://127.0.0.1:${port}/_ping`]).then((r) => r.stdout, () => 'refused');
    assert.notEqual(plain, 'OK');
    const noCert = await promisify(execFile)('curl', ['-s', '-m', '5', '--cacert', join(certs, 'ca.pem'), `https://127.0.0.1:${port}/_ping`]).then((r) => r.stdout, () => 'refused');
    assert.notEqual(noCert, 'OK');
    // The unix socket stays plain.
    assert.equal((await docker(d!, ['version', '--format', '{{.Server.Version}}'])).code, 0);
  });
});
