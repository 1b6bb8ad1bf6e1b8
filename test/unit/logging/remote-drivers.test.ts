// The remote log drivers (syslog, gelf, fluentd, journald) against receivers on loopback / unix
// sockets, their option validation, and the non-blocking ring.
import { decode } from '@msgpack/msgpack';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gunzipSync, inflateSync } from 'node:zlib';
import pino from 'pino';
import { createLogging, createLogReader, validateLogConfig } from '../../../drivers/logging/index.ts';
import { extraAttributes, parseLogTag, type ContainerLogInfo } from '../../../drivers/logging/info.ts';
import { formatSyslog, newSyslog } from '../../../drivers/logging/syslog.ts';
import { gelfChunks } from '../../../drivers/logging/gelf.ts';
import { RemoteSink, type LogMessage, type RemoteDriver } from '../../../drivers/logging/remote.ts';
import { RingSink } from '../../../drivers/logging/ring.ts';
import { journalEntry, journalFieldName } from '../../../drivers/logging/journald.ts';

const log = pino({ level: 'silent' });
const tmp = mkdtempSync(join(tmpdir(), 'remote-log-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const info: ContainerLogInfo = {
  id: 'a'.repeat(12) + 'b'.repeat(52),
  name: '/web',
  imageId: 'sha256:' + 'c'.repeat(64),
  imageName: 'busybox:latest',
  path: 'sh',
  args: ['-c', 'echo hi'],
  created: '2026-01-02T03:04:05.120000000Z',
  env: ['FOO=bar', 'PATH=/bin', 'OTHER=x'],
  labels: { team: 'core', 'com.example.a': '1' },
};

function udpReceiver(): Promise<{ port: number; next: () => Promise<Buffer>; close: () => void }> {
  const s = createSocket('udp4');
  const got: Buffer[] = [];
  const waiters: Array<(b: Buffer) => void> = [];
  s.on('message', (m) => (waiters.length ? waiters.shift()!(m) : got.push(m)));
  return new Promise((res) => s.bind(0, '127.0.0.1', () => res({
    port: s.address().port,
    next: () => (got.length ? Promise.resolve(got.shift()!) : new Promise((r) => waiters.push(r))),
    close: () => s.close(),
  })));
}

function streamReceiver(listenOn: number | string): Promise<{ server: Server; port: number; data: () => Buffer; waitFor: (n: number) => Promise<Buffer> }> {
  let buf = Buffer.alloc(0);
  let notify = () => {};
  const server = createServer((c) => c.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    notify();
  }));
  return new Promise((res) => server.listen(listenOn as number, ...(typeof listenOn === 'number' ? ['127.0.0.1'] : []), () => {
    const a = server.address();
    res({
      server,
      port: typeof a === 'object' && a ? a.port : 0,
      data: () => buf,
      waitFor: (n) => new Promise((r) => {
        const check = () => (buf.length >= n ? r(buf) : (notify = check));
        check();
      }),
    });
  }));
}

const bad = (Type: string, Config: Record<string, string>) => {
  try {
    validateLogConfig({ Type, Config });
  } catch (err) {
    return (err as Error).message;
  }
  return '';
};

describe('tag and attributes', () => {
  it('renders the reference template fields', () => {
    assert.equal(parseLogTag(info, {}), 'aaaaaaaaaaaa');
    assert.equal(parseLogTag(info, { tag: '{{.Name}}/{{.FullID}}' }), `web/${info.id}`);
    assert.equal(parseLogTag(info, { tag: '{{.ImageName}} {{.ImageID}} {{.DaemonName}} {{.ImageFullID}}' }), `busybox:latest sha256:ccccc docker ${info.imageId}`);
    assert.equal(parseLogTag(info, { tag: 'x-{{upper .Name}}-{{truncate .ID 4}}' }), 'x-WEB-aaaa');
    assert.throws(() => parseLogTag(info, { tag: '{{.Nope}}' }), /can't evaluate field Nope/);
  });
  it('labels, labels-regex, env, env-regex', () => {
    assert.deepEqual(extraAttributes(info, { labels: 'team,missing', env: 'FOO' }), { team: 'core', FOO: 'bar' });
    assert.deepEqual(extraAttributes(info, { 'labels-regex': '^com\\.', 'env-regex': '^OTH' }), { 'com.example.a': '1', OTHER: 'x' });
  });
});

describe('validation', () => {
  it('gives the reference messages', () => {
    assert.equal(bad('nope', {}), "logger: no log driver named 'nope' is registered");
    assert.equal(bad('syslog', { foo: '1' }), "unknown log opt 'foo' for syslog log driver");
    assert.equal(bad('syslog', { 'syslog-address': 'http://x' }), "unsupported scheme: 'http'");
    assert.equal(bad('syslog', { 'syslog-facility': 'nope' }), 'invalid syslog facility');
    assert.equal(bad('syslog', { 'syslog-format': 'x' }), 'Invalid syslog format');
    assert.equal(bad('syslog', { 'syslog-address': 'unix:///nonexistent/sock' }), 'stat /nonexistent/sock: no such file or directory');
    assert.equal(bad('syslog', { 'syslog-address': 'udp://127.0.0.1:514', 'syslog-format': 'rfc5424micro', tag: 'x', 'syslog-facility': 'local3', labels: 'a', 'env-regex': 'x' }), '');
    assert.equal(bad('gelf', {}), 'gelf-address is a required parameter');
    assert.equal(bad('gelf', { 'gelf-address': 'http://x:1' }), 'gelf: endpoint needs to be TCP or UDP');
    assert.equal(bad('gelf', { 'gelf-address': 'udp://x' }), 'gelf: please provide gelf-address as proto://host:port');
    assert.equal(bad('gelf', { 'gelf-address': 'tcp://x:1', 'gelf-compression-type': 'gzip' }), 'compression is only supported on UDP');
    assert.equal(bad('gelf', { 'gelf-address': 'udp://x:1', 'gelf-compression-type': 'lz4' }), 'unknown value "lz4" for log opt "gelf-compression-type" for gelf log driver');
    assert.equal(bad('gelf', { 'gelf-address': 'udp://x:1', foo: 'x' }), 'unknown log opt "foo" for gelf log driver');
    assert.equal(bad('fluentd', { foo: 'x' }), "unknown log opt 'foo' for fluentd log driver");
    assert.equal(bad('fluentd', { 'fluentd-address': 'udp://1.2.3.4:1' }), "invalid fluentd-address (udp://1.2.3.4:1): unsupported scheme: 'udp'");
    assert.equal(bad('fluentd', { 'fluentd-async': 'maybe' }), 'strconv.ParseBool: parsing "maybe": invalid syntax');
    assert.equal(bad('fluentd', { 'fluentd-retry-wait': 'x' }), 'time: invalid duration "x"');
    assert.equal(bad('fluentd', { 'fluentd-max-retries': '-1' }), 'strconv.ParseUint: parsing "-1": invalid syntax');
    assert.equal(bad('fluentd', { 'fluentd-address': 'localhost:24224', 'fluentd-buffer-limit': '8m', 'fluentd-retry-wait': '1s', 'fluentd-max-retries': '3', 'fluentd-async': 'true' }), '');
    assert.equal(bad('journald', { foo: 'x' }), "unknown log opt 'foo' for journald log driver");
    assert.equal(bad('journald', { tag: 'x', labels: 'a' }), '');
    assert.equal(bad('syslog', { 'cache-disabled': 'x' }), 'invalid value for option cache-disabled: x');
    assert.equal(bad('syslog', { 'cache-max-size': '1m', 'cache-max-file': '2', mode: 'non-blocking', 'max-buffer-size': '4k' }), '');
    assert.equal(bad('syslog', { 'max-buffer-size': '4k' }), "logger: max-buffer-size option is only supported with 'mode=non-blocking'");
  });
});

describe('syslog', () => {
  // 2026-01-02T03:04:05.123456Z, in whatever zone the test runs in (formats use local time).
  const micros = Date.UTC(2026, 0, 2, 3, 4, 5, 123) * 1000 + 456;
  it('formats byte-exact', () => {
    process.env.TZ = 'UTC';
    assert.equal(formatSyslog('', 30, 'h', 'tag', 7, 'hello', micros), '<30>Jan  2 03:04:05 tag[7]: hello\n');
    assert.equal(formatSyslog('rfc3164', 27, 'h', 'tag', 7, 'hello', micros), '<27>Jan  2 03:04:05 h tag[7]: hello\n');
    assert.equal(formatSyslog('rfc5424', 30, 'h', 'tag', 7, 'hello', micros), '<30>1 2026-01-02T03:04:05Z h tag 7 tag - hello\n');
    assert.equal(formatSyslog('rfc5424micro', 30, 'h', 'tag', 7, 'hello', micros), '<30>1 2026-01-02T03:04:05.123456Z h tag 7 tag - hello\n');
    assert.equal(formatSyslog('rfc5424', 30, 'h', 'tag', 7, 'hello', micros, true), '47 <30>1 2026-01-02T03:04:05Z h tag 7 tag - hello\n');
  });

  it('sends over udp with facility and tag', async () => {
    const r = await udpReceiver();
    const d = await newSyslog(info, { 'syslog-address': `udp://127.0.0.1:${r.port}`, 'syslog-facility': 'local0', 'syslog-format': 'rfc5424', tag: '{{.Name}}' }, { clock: () => micros, hostname: 'h', pid: 9 });
    await d.send({ source: 'stdout', line: Buffer.from('out'), timestamp: new Date() });
    await d.send({ source: 'stderr', line: Buffer.from('err'), timestamp: new Date() });
    assert.equal((await r.next()).toString(), '<134>1 2026-01-02T03:04:05Z h web 9 web - out\n');
    assert.equal((await r.next()).toString(), '<131>1 2026-01-02T03:04:05Z h web 9 web - err\n');
    await d.close();
    r.close();
  });

  it('sends over tcp and a unix socket through the sink', async () => {
    for (const target of ['tcp', 'unix'] as const) {
      const sock = join(tmp, 'syslog.sock');
      const r = await streamReceiver(target === 'tcp' ? 0 : sock);
      const addr = target === 'tcp' ? `tcp://127.0.0.1:${r.port}` : `unix://${sock}`;
      mkdirSync(join(tmp, target));
      const logPath = join(tmp, target, 'container-cached.log');
      const sink = await createLogging({ log }).open(info.id, logPath, { Type: 'syslog', Config: { 'syslog-address': addr, 'syslog-format': 'rfc3164' } }, info);
      await sink!.log('stdout', Buffer.from('one\ntwo\n'));
      await sink!.close();
      const text = (await r.waitFor(2)).toString();
      await new Promise((res) => setTimeout(res, 50));
      const lines = r.data().toString().split('\n').filter(Boolean);
      assert.equal(lines.length, 2, text);
      assert.match(lines[0]!, new RegExp(`^<30>\\w{3} [ \\d]\\d \\d\\d:\\d\\d:\\d\\d ${hostname()} aaaaaaaaaaaa\\[${process.pid}\\]: one$`));
      assert.match(lines[1]!, / two$/);
      // The local cache: `local`-format records in container-cached.log beside the log path.
      const cached: string[] = [];
      for await (const e of createLogReader({ pathOf: () => logPath, log }).read('c', { stdout: true, stderr: true, follow: false, since: 0, until: 0, tail: -1 }, new AbortController().signal)) cached.push(e.line.toString());
      assert.deepEqual(cached, ['one\n', 'two\n']);
      assert.equal(readFileSync(logPath).readUInt32BE(0) > 0, true);
      r.server.close();
    }
  });

  it('fails to start when the tcp receiver is not there', async () => {
    const r = await streamReceiver(0);
    r.server.close();
    await assert.rejects(
      createLogging({ log }).open(info.id, join(tmp, 'x.log'), { Type: 'syslog', Config: { 'syslog-address': `tcp://127.0.0.1:${r.port}` } }, info) as Promise<unknown>,
      { message: `failed to initialize logging driver: dial tcp 127.0.0.1:${r.port}: connect: connection refused` },
    );
  });
});

describe('gelf', () => {
  for (const compression of ['gzip', 'zlib', 'none'] as const) {
    it(`udp with ${compression}`, async () => {
      const r = await udpReceiver();
      const cfg: Record<string, string> = { 'gelf-address': `udp://127.0.0.1:${r.port}`, 'gelf-compression-type': compression, labels: 'team', env: 'FOO', tag: '{{.Name}}' };
      const sink = await createLogging({ log }).open(info.id, join(tmp, `gelf-${compression}.log`), { Type: 'gelf', Config: cfg }, info);
      const before = Date.now();
      await sink!.log('stderr', Buffer.from('hello gelf\n'));
      await sink!.close();
      const raw = await r.next();
      const json = compression === 'gzip' ? gunzipSync(raw) : compression === 'zlib' ? inflateSync(raw) : raw;
      const m = JSON.parse(json.toString());
      assert.deepEqual(Object.keys(m).slice(0, 5), ['version', 'host', 'short_message', 'timestamp', 'level']);
      assert.equal(m.version, '1.1');
      assert.equal(m.host, hostname());
      assert.equal(m.short_message, 'hello gelf');
      assert.equal(m.level, 3);
      assert.ok(Math.abs(m.timestamp * 1000 - before) < 5000);
      assert.equal(m._container_id, info.id);
      assert.equal(m._container_name, 'web');
      assert.equal(m._image_id, info.imageId);
      assert.equal(m._image_name, 'busybox:latest');
      assert.equal(m._command, 'sh -c echo hi');
      assert.equal(m._tag, 'web');
      assert.equal(m._created, '2026-01-02T03:04:05.12Z');
      assert.equal(m._team, 'core');
      assert.equal(m._FOO, 'bar');
      r.close();
    });
  }

  it('chunks large udp messages', () => {
    const chunks = gelfChunks(Buffer.alloc(5000, 1));
    assert.equal(chunks.length, 4);
    for (const [i, c] of chunks.entries()) {
      assert.deepEqual([...c.subarray(0, 2)], [0x1e, 0x0f]);
      assert.equal(c[10], i);
      assert.equal(c[11], 4);
      assert.ok(c.length <= 1420);
    }
    assert.deepEqual(chunks[0]!.subarray(2, 10), chunks[3]!.subarray(2, 10));
    assert.equal(Buffer.concat(chunks.map((c) => c.subarray(12))).length, 5000);
    assert.throws(() => gelfChunks(Buffer.alloc(1408 * 128 + 1)), /msg too large/);
  });

  it('tcp: NUL-terminated JSON', async () => {
    const r = await streamReceiver(0);
    const sink = await createLogging({ log }).open(info.id, join(tmp, 'gelf-tcp.log'), { Type: 'gelf', Config: { 'gelf-address': `tcp://127.0.0.1:${r.port}` } }, info);
    await sink!.log('stdout', Buffer.from('a\nb\n'));
    await sink!.close();
    const parts = (await r.waitFor(10)).toString().split('\0');
    await new Promise((res) => setTimeout(res, 50));
    const msgs = r.data().toString().split('\0').filter(Boolean).map((s) => JSON.parse(s));
    assert.ok(parts.length >= 1);
    assert.deepEqual(msgs.map((m) => [m.short_message, m.level, m._tag]), [['a', 6, 'aaaaaaaaaaaa'], ['b', 6, 'aaaaaaaaaaaa']]);
    r.server.close();
  });
});

describe('fluentd', () => {
  it('forward messages over tcp and unix', async () => {
    for (const target of ['tcp', 'unix'] as const) {
      const sock = join(tmp, 'fluent.sock');
      const r = await streamReceiver(target === 'tcp' ? 0 : sock);
      const addr = target === 'tcp' ? `127.0.0.1:${r.port}` : `unix://${sock}`;
      const sink = await createLogging({ log }).open(info.id, join(tmp, `fl-${target}.log`), { Type: 'fluentd', Config: { 'fluentd-address': addr, 'env-regex': '^FOO$', tag: 'docker.{{.Name}}' } }, info);
      const t0 = Math.floor(Date.now() / 1000);
      await sink!.log('stdout', Buffer.from('first\n'));
      await sink!.log('stderr', Buffer.from('second\n'));
      await sink!.close();
      await new Promise((res) => setTimeout(res, 100));
      const { decodeMulti } = await import('@msgpack/msgpack');
      const msgs = [...decodeMulti(r.data())] as Array<[string, number, Record<string, string>, Record<string, string>]>;
      assert.equal(msgs.length, 2);
      const [tag, time, record, option] = msgs[0]!;
      assert.equal(tag, 'docker.web');
      assert.ok(Math.abs(time - t0) <= 2);
      assert.deepEqual(record, { container_id: info.id, container_name: '/web', source: 'stdout', log: 'first', FOO: 'bar' });
      assert.deepEqual(option, {});
      assert.equal(msgs[1]![2].source, 'stderr');
      r.server.close();
    }
  });

  it('sync start fails when unreachable; async starts and buffers', async () => {
    const r = await streamReceiver(0);
    const port = r.port;
    r.server.close();
    await assert.rejects(
      createLogging({ log }).open(info.id, join(tmp, 'fl-x.log'), { Type: 'fluentd', Config: { 'fluentd-address': `127.0.0.1:${port}` } }, info) as Promise<unknown>,
      { message: `failed to initialize logging driver: dial tcp 127.0.0.1:${port}: connect: connection refused` },
    );
    const sink = await createLogging({ log }).open(info.id, join(tmp, 'fl-y.log'), { Type: 'fluentd', Config: { 'fluentd-address': `127.0.0.1:${port}`, 'fluentd-async': 'true', 'fluentd-retry-wait': '10ms', 'fluentd-max-retries': '2' } }, info);
    await sink!.log('stdout', Buffer.from('lost\n'));
    await sink!.close();
  });

  it('sub-second precision sends EventTime', async () => {
    const r = await streamReceiver(0);
    const sink = await createLogging({ log }).open(info.id, join(tmp, 'fl-ev.log'), { Type: 'fluentd', Config: { 'fluentd-address': `tcp://127.0.0.1:${r.port}`, 'fluentd-sub-second-precision': 'true' } }, info);
    await sink!.log('stdout', Buffer.from('x\n'));
    await sink!.close();
    await new Promise((res) => setTimeout(res, 100));
    const m = decode(r.data()) as [string, { type: number; data: Uint8Array }];
    assert.equal(m[1].type, 0);
    assert.equal(m[1].data.length, 8);
    r.server.close();
  });
});

describe('journald', () => {
  it('refuses to start without a journal socket', async () => {
    await assert.rejects(
      createLogging({ log }).open(info.id, join(tmp, 'j.log'), { Type: 'journald', Config: {} }, info) as Promise<unknown>,
      { message: 'failed to initialize logging driver: journald is not enabled on this host' },
    );
  });
});

describe('non-blocking ring', () => {
  it('drops when full instead of blocking', async () => {
    const sent: string[] = [];
    let release = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const driver: RemoteDriver = {
      name: 'slow',
      async send(m: LogMessage) {
        await gate;
        sent.push(m.line.toString());
      },
      async close() {},
    };
    const sink = new RingSink(new RemoteSink(driver, { log }), 10, log);
    for (let i = 0; i < 20; i++) assert.equal(sink.log('stdout', Buffer.from(`msg${i}\n`)), undefined);
    assert.ok(sink.dropped > 0, 'some dropped');
    release();
    await sink.close();
    assert.ok(sent.length < 20 && sent.length >= 1, String(sent.length));
    assert.equal(sent.length + sink.dropped, 20);
  });

  it('blocking mode asks the producer to wait', async () => {
    let release = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const sink = new RemoteSink({ name: 'slow', send: () => gate, close: async () => {} }, { log });
    let waited = false;
    for (let i = 0; i < 200; i++) {
      const w = sink.log('stdout', Buffer.alloc(16 * 1024, 0x61));
      if (w) {
        waited = true;
        break;
      }
    }
    assert.ok(waited);
    release();
    await sink.close();
  });
});

describe('journald entries', () => {
  it('fields as go-systemd writes them: NAME=value, or NAME, a 64-bit little-endian length and the value when it holds a newline', () => {
    const e = journalEntry([['PRIORITY', '6'], ['MESSAGE', 'a\nb'], ['CONTAINER_NAME', 'web']]);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(3n);
    assert.deepEqual(e, Buffer.concat([Buffer.from('PRIORITY=6\nMESSAGE\n'), len, Buffer.from('a\nb\nCONTAINER_NAME=web\n')]));
  });
  it('label and variable names become field names as the reference sanitizes them', () => {
    assert.equal(journalFieldName('com.example.team-name'), 'COM_EXAMPLE_TEAM_NAME');
    assert.equal(journalFieldName('_lead.x'), 'LEAD_X');
    assert.equal(journalFieldName('STAGE9'), 'STAGE9');
  });
});
