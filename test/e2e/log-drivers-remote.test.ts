// Remote log drivers end to end: the daemon sends a container's output to receivers this test
// runs on loopback (syslog udp/tcp, gelf udp, fluentd tcp) or a unix datagram socket (syslog
// unixgram, a python3 receiver); `docker logs` reads the local cache
// (the reference's dual logging: `local`-format records in containers/<id>/container-cached.log);
// journald is refused where there is no journal; bad options fail the create; `docker info`
// lists the drivers; the daemon's --log-driver/--log-opt defaults apply.
import { decodeMulti } from '@msgpack/msgpack';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { createServer, type Server } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { docker, dockerOk } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';
import { decodeFile } from './harness/local-log.ts';

interface Udp { port: number; msgs: Buffer[]; close(): void }
function udp(): Promise<Udp> {
  const s = createSocket('udp4');
  const msgs: Buffer[] = [];
  s.on('message', (m) => msgs.push(m));
  return new Promise((res) => s.bind(0, '127.0.0.1', () => res({ port: s.address().port, msgs, close: () => s.close() })));
}
interface Tcp { port: number; data(): Buffer; close(): void }
function tcp(): Promise<Tcp> {
  let buf = Buffer.alloc(0);
  const server: Server = createServer((c) => c.on('data', (d) => (buf = Buffer.concat([buf, d]))));
  return new Promise((res) => server.listen(0, '127.0.0.1', () => {
    const a = server.address();
    res({ port: typeof a === 'object' && a ? a.port : 0, data: () => buf, close: () => server.close() });
  }));
}
async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}
interface Unixgram { path: string; msgs(): Buffer[]; close(): void }
/** A python3 AF_UNIX/SOCK_DGRAM socket bound at `at` or a temp path, printing each datagram as a hex line. */
async function unixgram(at?: string): Promise<Unixgram> {
  const dir = at ? '' : mkdtempSync(join(tmpdir(), 'e2e-unixgram-'));
  const path = at ?? join(dir, 'syslog.sock');
  const script = [
    'import socket, sys',
    's = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)',
    's.bind(sys.argv[1])',
    'print("ready", flush=True)',
    'while True: print(s.recv(262144).hex(), flush=True)',
  ].join('\n');
  const py: ChildProcess = spawn('python3', ['-c', script, path], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let rest = '';
  py.stdout!.on('data', (b: Buffer) => {
    const parts = (rest + b.toString()).split('\n');
    rest = parts.pop()!;
    lines.push(...parts);
  });
  const close = () => {
    py.kill();
    rmSync(dir || path, { recursive: true, force: true });
  };
  try {
    await until(() => lines[0] === 'ready');
  } catch (err) {
    close();
    throw err;
  }
  return {
    path,
    msgs: () => lines.slice(1).map((h) => Buffer.from(h, 'hex')),
    close,
  };
}

describe('remote log drivers', () => {
  let d: DaemonHandle;
  let img: string;
  let dflt: Udp;
  const dk = dockerOk(() => d);
  // Where the daemon looks for the journal's socket: nothing there but while the journald test binds it.
  const journalDir = mkdtempSync(join(tmpdir(), 'e2e-journal-'));
  const journalSocket = join(journalDir, 'socket');
  before(async () => {
    dflt = await udp();
    const s = await startWithImages({ env: { ENGINE_JOURNAL_SOCKET: journalSocket }, args: ['--log-driver', 'syslog', '--log-opt', `syslog-address=udp://127.0.0.1:${dflt.port}`, '--log-opt', 'syslog-format=rfc5424'] });
    d = s.d;
    img = s.imgs.tag;
  });
  after(async () => {
    await removeAllAndCleanup(d);
    dflt?.close();
    rmSync(journalDir, { recursive: true, force: true });
  });

  test('syslog over udp and tcp; docker logs reads the cache', async () => {
    const u = await udp();
    const t = await tcp();
    try {
      const id = await dk('run', '-d', '--name', 'sl-udp', '--log-driver', 'syslog', '--log-opt', `syslog-address=udp://127.0.0.1:${u.port}`, '--log-opt', 'syslog-facility=local1', '--log-opt', 'tag={{.Name}}', img, 'sh', '-c', 'echo out-line; echo err-line >&2');
      await dk('wait', id);
      await until(() => u.msgs.length >= 2);
      const got = u.msgs.map((m) => m.toString()).sort();
      // Same driver as the daemon's default: its syslog-format=rfc5424 fills in (as the reference merges).
      assert.match(got[0]!, /^<139>1 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d) \S+ sl-udp \d+ sl-udp - err-line\n$/);
      assert.match(got[1]!, /^<142>1 \S+ \S+ sl-udp \d+ sl-udp - out-line\n$/);
      const r = await docker(d, ['logs', id]);
      assert.equal(r.stdout, 'out-line\n');
      assert.equal(r.stderr, 'err-line\n');
      // The cache is the reference's: `local`-format records in containers/<id>/container-cached.log,
      // and inspect shows no LogPath for it.
      const file = join(d.dataRoot, 'containers', id, 'container-cached.log');
      assert.ok(existsSync(file), file);
      assert.ok(!existsSync(join(d.dataRoot, 'containers', id, `${id}-json.log`)));
      const recs = decodeFile(readFileSync(file));
      assert.deepEqual(recs.map((x) => `${x.source}:${x.line}`).sort(), ['stderr:err-line', 'stdout:out-line']);
      assert.equal(await dk('inspect', '-f', '{{.LogPath}}', id), '');

      const id2 = await dk('run', '-d', '--log-driver', 'syslog', '--log-opt', `syslog-address=tcp://127.0.0.1:${t.port}`, '--log-opt', 'syslog-format=rfc3164', img, 'sh', '-c', 'echo a; echo b');
      await dk('wait', id2);
      await until(() => t.data().toString().split('\n').filter(Boolean).length >= 2);
      const lines = t.data().toString().split('\n').filter(Boolean);
      assert.match(lines[0]!, new RegExp(`^<30>\\w{3} [ \\d]\\d \\d\\d:\\d\\d:\\d\\d \\S+ ${id2.slice(0, 12)}\\[\\d+\\]: a$`));
      assert.equal((await dk('logs', id2)), 'a\nb');
      assert.equal((await dk('logs', '--tail', '1', id2)), 'b');
    } finally {
      u.close();
      t.close();
    }
  });

  test('syslog over unixgram', async () => {
    const g = await unixgram();
    try {
      const r = await docker(d, ['run', '--name', 'sl-ugram', '--log-driver', 'syslog', '--log-opt', `syslog-address=unixgram://${g.path}`, '--log-opt', 'syslog-format=rfc5424', '--log-opt', 'tag={{.Name}}', img, 'sh', '-c', 'echo hello; echo oops >&2']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'hello\n');
      await until(() => g.msgs().length >= 2);
      // One datagram per line, with its newline, as srslog writes it on a unixgram conn.
      const got = g.msgs().map((m) => m.toString()).sort();
      assert.equal(got.length, 2, got.join(''));
      assert.match(got[0]!, /^<27>1 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d) \S+ sl-ugram \d+ sl-ugram - oops\n$/);
      assert.match(got[1]!, /^<30>1 \S+ \S+ sl-ugram \d+ sl-ugram - hello\n$/);
      const logs = await docker(d, ['logs', 'sl-ugram']);
      assert.equal(logs.stdout, 'hello\n');
      assert.equal(logs.stderr, 'oops\n');
    } finally {
      g.close();
    }
    // Nothing bound at the path: the start fails with the connect error, as the reference's.
    const dir = mkdtempSync(join(tmpdir(), 'e2e-unixgram-'));
    try {
      const file = join(dir, 'not-a-socket');
      writeFileSync(file, '');
      const r = await docker(d, ['run', '--log-driver', 'syslog', '--log-opt', `syslog-address=unixgram://${file}`, img, 'true']);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, new RegExp(`failed to initialize logging driver: dial unixgram ${file}: connect: connection refused`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('dual-logging cache: cache-max-size/cache-max-file rotate it; --since, -f; cache-disabled', async () => {
    const u = await udp();
    try {
      const n = 200;
      const id = await dk('run', '-d', '--log-driver', 'syslog', '--log-opt', `syslog-address=udp://127.0.0.1:${u.port}`, '--log-opt', 'cache-max-size=1k', '--log-opt', 'cache-max-file=3', img,
        'sh', '-c', `i=0; while [ $i -lt ${n} ]; do echo "line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; i=$((i+1)); done`);
      await dk('wait', id);
      const dir = join(d.dataRoot, 'containers', id);
      const cached = () => readdirSync(dir).filter((f) => f.startsWith('container-cached.log')).sort();
      // Rotated files are gzipped in the background (cache-compress defaults to true).
      await until(() => cached().join() === 'container-cached.log,container-cached.log.1.gz,container-cached.log.2.gz');
      const file = join(dir, 'container-cached.log');
      const kept = [gunzipSync(readFileSync(`${file}.2.gz`)), gunzipSync(readFileSync(`${file}.1.gz`)), readFileSync(file)].flatMap(decodeFile).map((x) => x.line);
      assert.ok(kept.length > 10 && kept.length < n, String(kept.length));
      const want = Array.from({ length: n }, (_, i) => `line-${i}-${'x'.repeat(32)}`);
      assert.deepEqual(kept, want.slice(n - kept.length));
      // docker logs reads the live and rotated cache files.
      assert.deepEqual((await dk('logs', id)).split('\n'), kept);
      assert.deepEqual((await dk('logs', '--tail', '3', id)).split('\n'), want.slice(-3));
      assert.equal(await dk('logs', '--since', '2m', id), kept.join('\n'));
      assert.equal(await dk('logs', '--since', String(Math.floor(Date.now() / 1000) + 3600), id), '');

      // -f follows the cache while the container runs.
      const id2 = await dk('run', '-d', '--log-driver', 'syslog', '--log-opt', `syslog-address=udp://127.0.0.1:${u.port}`, img, 'sh', '-c', 'echo first; sleep 2; echo second');
      const f = await docker(d, ['logs', '-f', id2]);
      assert.equal(f.stdout, 'first\nsecond\n');

      // cache-disabled: no cache, and docker logs refuses as the reference.
      const id3 = await dk('run', '-d', '--log-driver', 'syslog', '--log-opt', `syslog-address=udp://127.0.0.1:${u.port}`, '--log-opt', 'cache-disabled=true', img, 'echo', 'nocache');
      await dk('wait', id3);
      assert.ok(!existsSync(join(d.dataRoot, 'containers', id3, 'container-cached.log')));
      const r = await docker(d, ['logs', id3]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /configured logging driver does not support reading/);
    } finally {
      u.close();
    }
  });

  test('gelf over udp', async () => {
    const u = await udp();
    try {
      const id = await dk('run', '-d', '--name', 'gelf1', '--label', 'team=core', '--log-driver', 'gelf', '--log-opt', `gelf-address=udp://127.0.0.1:${u.port}`, '--log-opt', 'labels=team', img, 'echo', 'hello-gelf');
      await dk('wait', id);
      await until(() => u.msgs.length >= 1);
      const m = JSON.parse(gunzipSync(u.msgs[0]!).toString());
      assert.equal(m.version, '1.1');
      assert.equal(m.short_message, 'hello-gelf');
      assert.equal(m.level, 6);
      assert.equal(m._container_id, id);
      assert.equal(m._container_name, 'gelf1');
      assert.equal(m._tag, id.slice(0, 12));
      assert.equal(m._command, 'echo hello-gelf');
      assert.equal(m._team, 'core');
      assert.match(m._image_id, /^sha256:/);
      assert.equal(await dk('logs', id), 'hello-gelf');
    } finally {
      u.close();
    }
  });

  test('fluentd over tcp', async () => {
    const t = await tcp();
    try {
      const id = await dk('run', '-d', '--name', 'fl1', '--log-driver', 'fluentd', '--log-opt', `fluentd-address=127.0.0.1:${t.port}`, img, 'sh', '-c', 'echo one; echo two');
      await dk('wait', id);
      await until(() => {
        try {
          return [...decodeMulti(t.data())].length >= 2;
        } catch {
          return false;
        }
      });
      const msgs = [...decodeMulti(t.data())] as Array<[string, number, Record<string, string>]>;
      assert.equal(msgs[0]![0], id.slice(0, 12));
      assert.deepEqual(msgs.map((m) => m[2].log), ['one', 'two']);
      assert.equal(msgs[0]![2].container_id, id);
      assert.equal(msgs[0]![2].container_name, '/fl1');
      assert.equal(msgs[0]![2].source, 'stdout');
      assert.equal(await dk('logs', id), 'one\ntwo');
    } finally {
      t.close();
    }
  });

  test('fluentd unreachable fails the start', async () => {
    const t = await tcp();
    t.close();
    const r = await docker(d, ['run', '--log-driver', 'fluentd', '--log-opt', `fluentd-address=127.0.0.1:${t.port}`, img, 'true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, new RegExp(`failed to initialize logging driver: dial tcp 127.0.0.1:${t.port}: connect: connection refused`));
  });

  test('journald: one entry a line in the native protocol at the journal socket, with the reference fields; docker logs reads the cache', async () => {
    const g = await unixgram(journalSocket);
    try {
      const id = await dk('run', '-d', '--name', 'jd1', '--log-driver', 'journald', '--label', 'team.name=blue', '-e', 'STAGE=prod', '--log-opt', 'labels=team.name', '--log-opt', 'env=STAGE', '--log-opt', 'tag={{.Name}}/x', img, 'sh', '-c', 'echo hello; echo oops >&2');
      await dk('wait', id);
      await until(() => g.msgs().length >= 2);
      // No value holds a newline here: every field is NAME=value and a newline.
      const entries = g.msgs().map((b) => {
        assert.ok(b.toString().endsWith('\n'));
        return Object.fromEntries(b.toString().slice(0, -1).split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      });
      const fields = { CONTAINER_ID: id.slice(0, 12), CONTAINER_ID_FULL: id, CONTAINER_NAME: 'jd1', CONTAINER_TAG: 'jd1/x', IMAGE_NAME: img, SYSLOG_IDENTIFIER: 'jd1/x', TEAM_NAME: 'blue', STAGE: 'prod' };
      assert.deepEqual(entries.find((e) => e.MESSAGE === 'hello'), { PRIORITY: '6', MESSAGE: 'hello', ...fields });
      assert.deepEqual(entries.find((e) => e.MESSAGE === 'oops'), { PRIORITY: '3', MESSAGE: 'oops', ...fields });
      // No journal to read on this machine: the local cache answers (dual logging), as for syslog.
      const r = await docker(d, ['logs', id]);
      assert.equal(r.stdout, 'hello\n');
      assert.equal(r.stderr, 'oops\n');
      // Without the cache: the reference's refusal.
      const off = await dk('run', '-d', '--log-driver', 'journald', '--log-opt', 'cache-disabled=true', img, 'true');
      const r2 = await docker(d, ['logs', off]);
      assert.notEqual(r2.code, 0);
      assert.match(r2.stderr, /configured logging driver does not support reading/);
    } finally {
      g.close();
    }
  });

  test('journald is refused clearly', async () => {
    const r = await docker(d, ['run', '--log-driver', 'journald', img, 'true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /failed to initialize logging driver: journald is not enabled on this host/);
  });

  test('bad driver or option: create fails with the reference message', async () => {
    let r = await docker(d, ['create', '--log-driver', 'nope', img, 'true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /logger: no log driver named 'nope' is registered/);
    r = await docker(d, ['create', '--log-driver', 'syslog', '--log-opt', 'foo=bar', img, 'true']);
    assert.match(r.stderr, /unknown log opt 'foo' for syslog log driver/);
    r = await docker(d, ['create', '--log-driver', 'gelf', img, 'true']);
    assert.match(r.stderr, /gelf-address is a required parameter/);
  });

  test('docker info lists the log drivers', async () => {
    const out = await dk('info', '--format', '{{json .Plugins.Log}}');
    assert.deepEqual(JSON.parse(out), ['fluentd', 'gelf', 'journald', 'json-file', 'local', 'syslog']);
    assert.equal(await dk('info', '--format', '{{.LoggingDriver}}'), 'syslog');
  });

  test('the daemon default driver and options apply', async () => {
    const id = await dk('run', '-d', img, 'echo', 'via-default');
    await dk('wait', id);
    await until(() => dflt.msgs.some((m) => m.toString().includes('via-default')));
    const m = dflt.msgs.map((b) => b.toString()).find((s) => s.includes('via-default'))!;
    assert.match(m, new RegExp(`^<30>1 \\S+ \\S+ ${id.slice(0, 12)} \\d+ ${id.slice(0, 12)} - via-default\\n$`));
    const cfg = JSON.parse(await dk('inspect', '--format', '{{json .HostConfig.LogConfig}}', id));
    assert.equal(cfg.Type, 'syslog');
    assert.equal(cfg.Config['syslog-format'], 'rfc5424');
    assert.equal(await dk('logs', id), 'via-default');
  });
});
