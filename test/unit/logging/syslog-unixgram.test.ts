// The syslog driver over unix datagram sockets (syslog-address=unixgram://PATH, and the local
// /dev/log when there is no address), against receivers bound with the koffi helper of
// drivers/sys/unix-dgram.ts and, for interoperability, a python3 AF_UNIX/SOCK_DGRAM socket.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { createLogging, validateLogConfig } from '../../../drivers/logging/index.ts';
import type { ContainerLogInfo } from '../../../drivers/logging/info.ts';
import { newSyslog } from '../../../drivers/logging/syslog.ts';
import { bindUnixDgram, openUnixDgram, type UnixDgramReceiver } from '../../../drivers/sys/unix-dgram.ts';

const log = pino({ level: 'silent' });
const tmp = mkdtempSync(join(tmpdir(), 'syslog-unixgram-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const info: ContainerLogInfo = {
  id: 'a'.repeat(12) + 'b'.repeat(52),
  name: '/web',
  imageId: 'sha256:' + 'c'.repeat(64),
  imageName: 'busybox:latest',
  path: 'sh',
  args: ['-c', 'echo hi'],
  created: '2026-01-02T03:04:05.120000000Z',
  env: [],
  labels: {},
};

// 2026-01-02T03:04:05.123456Z; formats use local time, so the tests run in UTC.
process.env.TZ = 'UTC';
const micros = Date.UTC(2026, 0, 2, 3, 4, 5, 123) * 1000 + 456;
const fixed = { clock: () => micros, hostname: 'h', pid: 9 };

let n = 0;
const sockPath = () => join(tmp, `s${n++}.sock`);

/** The next datagram `r` receives (polled: the helper never blocks). */
async function next(r: UnixDgramReceiver, ms = 5000): Promise<Buffer> {
  const end = Date.now() + ms;
  for (;;) {
    const b = r.recv();
    if (b) return b;
    if (Date.now() > end) throw new Error('no datagram');
    await new Promise((res) => setTimeout(res, 2));
  }
}

describe('unix datagram sockets (koffi)', () => {
  it('sends one datagram per send; a full queue answers false; errors read as Go writes them', () => {
    const p = sockPath();
    const r = bindUnixDgram(p);
    const s = openUnixDgram(p);
    assert.equal(s.send(Buffer.from('one\n')), true);
    assert.equal(s.send(Buffer.from('two')), true);
    assert.equal(r.recv()!.toString(), 'one\n');
    assert.equal(r.recv()!.toString(), 'two');
    assert.equal(r.recv(), null);
    let sent = 0;
    while (s.send(Buffer.alloc(100)) && sent < 100_000) sent++;
    assert.ok(sent > 0 && sent < 100_000, String(sent));
    r.close();
    assert.throws(() => s.send(Buffer.from('x')), { message: 'write: connection refused', code: 'ECONNREFUSED' });
    s.close();
    s.close();
    assert.throws(() => openUnixDgram(p), { message: 'connect: connection refused', code: 'ECONNREFUSED' });
    assert.throws(() => openUnixDgram(join(tmp, 'none', 'x.sock')), { message: 'connect: no such file or directory', code: 'ENOENT' });
    assert.throws(() => openUnixDgram(join(tmp, 'x'.repeat(120))), { message: 'connect: invalid argument' });
  });
});

describe('syslog over unixgram', () => {
  it('rfc5424 with a tag: one datagram per line, byte-exact', async () => {
    const p = sockPath();
    const r = bindUnixDgram(p);
    const d = await newSyslog(info, { 'syslog-address': `unixgram://${p}`, 'syslog-format': 'rfc5424', 'syslog-facility': 'local0', tag: '{{.Name}}' }, fixed);
    await d.send({ source: 'stdout', line: Buffer.from('out'), timestamp: new Date() });
    await d.send({ source: 'stderr', line: Buffer.from('err'), timestamp: new Date() });
    await d.send({ source: 'stdout', line: Buffer.alloc(0), timestamp: new Date() });
    assert.equal((await next(r)).toString(), '<134>1 2026-01-02T03:04:05Z h web 9 web - out\n');
    assert.equal((await next(r)).toString(), '<131>1 2026-01-02T03:04:05Z h web 9 web - err\n');
    assert.equal(r.recv(), null);
    await d.close();
    r.close();
  });

  it('rfc3164 and the default format with a tag, byte-exact', async () => {
    const p = sockPath();
    const r = bindUnixDgram(p);
    const d = await newSyslog(info, { 'syslog-address': `unixgram://${p}`, 'syslog-format': 'rfc3164', tag: 'app' }, fixed);
    await d.send({ source: 'stdout', line: Buffer.from('hello'), timestamp: new Date() });
    assert.equal((await next(r)).toString(), '<30>Jan  2 03:04:05 h app[9]: hello\n');
    await d.close();
    const d2 = await newSyslog(info, { 'syslog-address': `unixgram://${p}`, tag: 'app' }, fixed);
    await d2.send({ source: 'stderr', line: Buffer.from('hello'), timestamp: new Date() });
    assert.equal((await next(r)).toString(), '<27>Jan  2 03:04:05 app[9]: hello\n');
    await d2.close();
    r.close();
  });

  it('a python3 SOCK_DGRAM receiver gets the same bytes', async () => {
    const p = sockPath();
    const py = spawn('python3', ['-c', [
      'import socket, sys',
      's = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)',
      `s.bind(${JSON.stringify(p)})`,
      'print("ready", flush=True)',
      'for _ in range(2): print(repr(s.recv(65536)), flush=True)',
    ].join('\n')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    py.stdout.on('data', (b: Buffer) => (out += b.toString()));
    const lines = async (k: number) => {
      const end = Date.now() + 10_000;
      while (out.split('\n').length <= k) {
        if (Date.now() > end) throw new Error(`python receiver: ${out}`);
        await new Promise((res) => setTimeout(res, 10));
      }
      return out.split('\n').slice(0, k);
    };
    try {
      await lines(1);
      const d = await newSyslog(info, { 'syslog-address': `unixgram://${p}`, 'syslog-format': 'rfc5424micro', tag: 't' }, fixed);
      await d.send({ source: 'stdout', line: Buffer.from('a b'), timestamp: new Date() });
      await d.send({ source: 'stdout', line: Buffer.from('ü'), timestamp: new Date() });
      await d.close();
      assert.deepEqual(await lines(3), [
        'ready',
        String.raw`b'<30>1 2026-01-02T03:04:05.123456Z h t 9 t - a b\n'`,
        String.raw`b'<30>1 2026-01-02T03:04:05.123456Z h t 9 t - \xc3\xbc\n'`,
      ]);
    } finally {
      py.kill();
    }
  });

  it('a burst through the sink waits out the full receive queue and loses nothing', async () => {
    const p = sockPath();
    const r = bindUnixDgram(p);
    const got: string[] = [];
    // A slow reader: a few datagrams every few milliseconds (the kernel queues only ~10).
    const reader = setInterval(() => {
      for (let i = 0; i < 3; i++) {
        const b = r.recv();
        if (!b) break;
        got.push(b.toString());
      }
    }, 3);
    try {
      const sink = await createLogging({ log }).open(info.id, join(tmp, 'burst.log'), { Type: 'syslog', Config: { 'syslog-address': `unixgram://${p}`, 'syslog-format': 'rfc5424', tag: 'b' } }, info);
      const count = 300;
      await sink!.log('stdout', Buffer.from(Array.from({ length: count }, (_, i) => `line-${i}\n`).join('')));
      await sink!.close();
      const end = Date.now() + 10_000;
      while (got.length < count && Date.now() < end) await new Promise((res) => setTimeout(res, 10));
      assert.equal(got.length, count);
      assert.deepEqual(got.map((m) => m.replace(/^.* - /, '')), Array.from({ length: count }, (_, i) => `line-${i}\n`));
    } finally {
      clearInterval(reader);
      r.close();
    }
  });

  it('a receiver that stops reading: the message is dropped after the stall, then the next ones at once', async () => {
    const p = sockPath();
    const r = bindUnixDgram(p);
    const d = await newSyslog(info, { 'syslog-address': `unixgram://${p}`, tag: 't' }, { ...fixed, dgramStallMs: 200 });
    const send = (line: string) => Promise.resolve(d.send({ source: 'stdout', line: Buffer.from(line), timestamp: new Date() }));
    let queued = 0;
    for (;;) {
      const t0 = Date.now();
      try {
        await send(`q${queued}`);
        queued++;
      } catch (err) {
        assert.match((err as Error).message, new RegExp(`^write unixgram ${p}: resource temporarily unavailable \\(receiver not reading; 1 messages dropped\\)$`));
        assert.ok(Date.now() - t0 >= 190, String(Date.now() - t0));
        break;
      }
    }
    assert.ok(queued > 0, String(queued));
    const t1 = Date.now();
    await assert.rejects(send('fast'), { message: /2 messages dropped/ });
    assert.ok(Date.now() - t1 < 100, String(Date.now() - t1));
    // Reading again: the next send goes through, and waits again when the queue is full.
    assert.match(r.recv()!.toString(), / q0\n$/);
    await send('after');
    let last = '';
    for (let b = r.recv(); b; b = r.recv()) last = b.toString();
    assert.match(last, / after\n$/);
    await d.close();
    r.close();
  });

  it('redials a receiver that came back on the same path', async () => {
    const p = sockPath();
    let r = bindUnixDgram(p);
    const d = await newSyslog(info, { 'syslog-address': `unixgram://${p}`, tag: 't' }, fixed);
    await d.send({ source: 'stdout', line: Buffer.from('first'), timestamp: new Date() });
    assert.match((await next(r)).toString(), / first\n$/);
    r.close();
    rmSync(p);
    r = bindUnixDgram(p);
    await d.send({ source: 'stdout', line: Buffer.from('second'), timestamp: new Date() });
    assert.match((await next(r)).toString(), / second\n$/);
    r.close();
    rmSync(p);
    await assert.rejects(Promise.resolve(d.send({ source: 'stdout', line: Buffer.from('third'), timestamp: new Date() })), { message: `dial unixgram ${p}: connect: no such file or directory` });
    await d.close();
  });

  it('fails the start as the reference: stat, then the connect error', async () => {
    const open = (addr: string) => createLogging({ log }).open(info.id, join(tmp, 'fail.log'), { Type: 'syslog', Config: { 'syslog-address': addr } }, info) as Promise<unknown>;
    assert.throws(() => validateLogConfig({ Type: 'syslog', Config: { 'syslog-address': 'unixgram:///nonexistent/sock' } }), { message: /stat \/nonexistent\/sock: no such file or directory/ });
    const file = join(tmp, 'plain');
    writeFileSync(file, '');
    await assert.rejects(open(`unixgram://${file}`), { message: `failed to initialize logging driver: dial unixgram ${file}: connect: connection refused` });
    const stream = sockPath();
    const srv = createServer();
    await new Promise<void>((res) => srv.listen(stream, res));
    try {
      await assert.rejects(open(`unixgram://${stream}`), { message: `failed to initialize logging driver: dial unixgram ${stream}: connect: protocol wrong type for socket` });
    } finally {
      srv.close();
    }
  });
});

describe('syslog with no address: the local syslog socket', () => {
  it('tries unixgram then unix on each local path; none fails with the reference error', async () => {
    const none = [join(tmp, 'no-1'), join(tmp, 'no-2')];
    await assert.rejects(newSyslog(info, {}, { ...fixed, localPaths: none }), { message: 'Unix syslog delivery error' });

    // A datagram socket on the second path.
    const p = sockPath();
    const r = bindUnixDgram(p);
    const d = await newSyslog(info, { tag: 'x' }, { ...fixed, localPaths: [none[0]!, p] });
    await d.send({ source: 'stdout', line: Buffer.from('local'), timestamp: new Date() });
    assert.equal((await next(r)).toString(), '<30>Jan  2 03:04:05 x[9]: local\n');
    await d.close();
    r.close();

    // Only a stream socket: srslog's second pass (unix) takes it.
    const sp = sockPath();
    let data = '';
    const srv = createServer((c) => c.on('data', (b) => (data += b.toString())));
    await new Promise<void>((res) => srv.listen(sp, res));
    try {
      const d2 = await newSyslog(info, { tag: 'x', 'syslog-format': 'rfc3164' }, { ...fixed, localPaths: [none[0]!, sp] });
      await d2.send({ source: 'stdout', line: Buffer.from('streamed'), timestamp: new Date() });
      const end = Date.now() + 5000;
      while (!data && Date.now() < end) await new Promise((res) => setTimeout(res, 5));
      assert.equal(data, '<30>Jan  2 03:04:05 h x[9]: streamed\n');
      await d2.close();
    } finally {
      srv.close();
    }
  });
});
