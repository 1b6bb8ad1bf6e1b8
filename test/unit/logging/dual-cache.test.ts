// The dual-logging cache of the remote drivers: `local`-format records in
// <container dir>/container-cached.log (as the reference), rotated by cache-max-size /
// cache-max-file / cache-compress, read back by the log reader; none with cache-disabled.
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import pino from 'pino';
import { cachedLogPath, createLogging, createLogReader, readPathOf } from '../../../drivers/logging/index.ts';
import { inspectLogPath } from '../../../api/containers/views.ts';
import type { LogEntry, LogReadOptions } from '../../../drivers/logging/index.ts';
import type { ContainerLogInfo } from '../../../drivers/logging/info.ts';
import { entryOfRecord } from '../../../drivers/logging/local-reader.ts';

const log = pino({ level: 'silent' });
const ALL: LogReadOptions = { stdout: true, stderr: true, follow: false, since: 0, until: 0, tail: -1 };
const info: ContainerLogInfo = {
  id: 'a'.repeat(64), name: '/web', imageId: 'sha256:' + 'c'.repeat(64), imageName: 'busybox', path: 'sh', args: [],
  created: '2026-01-02T03:04:05.120000000Z', env: [], labels: {},
};

let sock: Socket;
let port = 0;
const dirs: string[] = [];
before(async () => {
  sock = createSocket('udp4');
  sock.on('message', () => {});
  await new Promise<void>((res) => sock.bind(0, '127.0.0.1', () => res()));
  port = sock.address().port;
});
after(() => {
  sock.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function containerDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'dual-cache-'));
  dirs.push(d);
  return d;
}

async function runSyslog(logPath: string, extra: Record<string, string>, chunks: string[]): Promise<void> {
  const cfg = { 'syslog-address': `udp://127.0.0.1:${port}`, ...extra };
  const sink = await createLogging({ log }).open(info.id, logPath, { Type: 'syslog', Config: cfg }, info);
  for (const c of chunks) await sink!.log(c.startsWith('E') ? 'stderr' : 'stdout', Buffer.from(c));
  await sink!.close();
}

async function collect(path: string, o: Partial<LogReadOptions> = {}): Promise<LogEntry[]> {
  const out: LogEntry[] = [];
  for await (const e of createLogReader({ pathOf: () => path, log }).read('c', { ...ALL, ...o }, new AbortController().signal)) out.push(e);
  return out;
}

/** Every framed record of a local-format file: length, LogEntry, length. */
function frames(buf: Buffer): LogEntry[] {
  const out: LogEntry[] = [];
  for (let i = 0; i < buf.length;) {
    const n = buf.readUInt32BE(i);
    assert.equal(buf.readUInt32BE(i + 4 + n), n, 'trailing length');
    out.push(entryOfRecord(buf.subarray(i + 4, i + 4 + n))!);
    i += n + 8;
  }
  return out;
}

describe('dual-logging cache', () => {
  it('paths: cache file, what docker logs reads, what inspect shows', () => {
    assert.equal(cachedLogPath('/d/c/x'), '/d/c/x/container-cached.log');
    const sys = { Type: 'syslog', Config: {} };
    assert.equal(readPathOf(sys, '/d/c/x/container-cached.log'), '/d/c/x/container-cached.log');
    // A container recorded with the older json-file cache path reads the cache beside it.
    assert.equal(readPathOf(sys, '/d/c/x/x-json.log'), '/d/c/x/container-cached.log');
    assert.equal(readPathOf({ Type: 'gelf', Config: { 'cache-disabled': 'true' } }, '/d/c/x/container-cached.log'), undefined);
    assert.equal(readPathOf({ Type: 'fluentd', Config: { 'cache-disabled': 'false' } }, '/d/c/x/container-cached.log'), '/d/c/x/container-cached.log');
    assert.equal(readPathOf({ Type: 'json-file', Config: {} }, '/d/c/x/x-json.log'), '/d/c/x/x-json.log');
    assert.equal(readPathOf({ Type: 'none', Config: {} }, ''), undefined);
    assert.equal(inspectLogPath('json-file', '/d/x-json.log'), '/d/x-json.log');
    assert.equal(inspectLogPath('', '/d/x-json.log'), '/d/x-json.log');
    assert.equal(inspectLogPath('local', '/d/local-logs/container.log'), '');
    assert.equal(inspectLogPath('syslog', '/d/container-cached.log'), '');
  });

  it('writes local-format records to container-cached.log and reads them back', async () => {
    const dir = containerDir();
    const path = cachedLogPath(dir);
    await runSyslog(path, {}, ['one\ntwo\n', 'Eerr\n', 'three\n']);
    assert.deepEqual(readdirSync(dir), ['container-cached.log']);
    const recs = frames(readFileSync(path));
    assert.deepEqual(recs.map((r) => [r.stream, r.line.toString()]), [['stdout', 'one\n'], ['stdout', 'two\n'], ['stderr', 'Eerr\n'], ['stdout', 'three\n']]);
    assert.deepEqual((await collect(path)).map((e) => e.line.toString()), ['one\n', 'two\n', 'Eerr\n', 'three\n']);
    assert.deepEqual((await collect(path, { tail: 2 })).map((e) => e.line.toString()), ['Eerr\n', 'three\n']);
    assert.deepEqual((await collect(path, { stdout: false })).map((e) => e.line.toString()), ['Eerr\n']);
    const t = Date.parse(recs[0]!.time) / 1000;
    assert.equal((await collect(path, { since: t + 3600 })).length, 0);
    assert.equal((await collect(path, { since: t - 3600 })).length, 4);
  });

  it('an older recorded log path: the cache still goes to container-cached.log beside it', async () => {
    const dir = containerDir();
    await runSyslog(join(dir, `${info.id}-json.log`), {}, ['x\n']);
    assert.deepEqual(readdirSync(dir), ['container-cached.log']);
    assert.deepEqual((await collect(readPathOf({ Type: 'syslog', Config: {} }, join(dir, `${info.id}-json.log`))!)).map((e) => e.line.toString()), ['x\n']);
  });

  it('cache-max-size / cache-max-file rotate it, compressed by default', async () => {
    const dir = containerDir();
    const path = cachedLogPath(dir);
    const lines = Array.from({ length: 60 }, (_, i) => `line-${String(i).padStart(3, '0')}-${'x'.repeat(40)}\n`);
    await runSyslog(path, { 'cache-max-size': '1k', 'cache-max-file': '3' }, lines);
    const deadline = Date.now() + 5000;
    while (existsSync(`${path}.1`) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(readdirSync(dir).sort(), ['container-cached.log', 'container-cached.log.1.gz', 'container-cached.log.2.gz']);
    const live = frames(readFileSync(path));
    const r1 = frames(gunzipSync(readFileSync(`${path}.1.gz`)));
    assert.ok(live.length > 0 && r1.length > 0);
    assert.ok(readFileSync(`${path}.1.gz`).length < 1024 + 512);
    const got = (await collect(path)).map((e) => e.line.toString());
    assert.deepEqual(got, lines.slice(lines.length - got.length));
    assert.ok(got.length < lines.length);
  });

  it('cache-compress=false keeps the rotated files plain', async () => {
    const dir = containerDir();
    const path = cachedLogPath(dir);
    const lines = Array.from({ length: 40 }, (_, i) => `l${i}-${'y'.repeat(60)}\n`);
    await runSyslog(path, { 'cache-max-size': '1k', 'cache-max-file': '2', 'cache-compress': 'false' }, lines);
    assert.deepEqual(readdirSync(dir).sort(), ['container-cached.log', 'container-cached.log.1']);
    assert.ok(frames(readFileSync(`${path}.1`)).length > 0);
  });

  it('cache-max-file=1 with compression (the default) fails the start as the local driver', async () => {
    const dir = containerDir();
    await assert.rejects(runSyslog(cachedLogPath(dir), { 'cache-max-file': '1' }, []), {
      message: 'failed to initialize logging driver: error setting up local container log cache: error initializing local log cache driver: compression cannot be enabled when max file count is 1',
    });
  });

  it('cache-disabled=true writes no cache', async () => {
    const dir = containerDir();
    await runSyslog(cachedLogPath(dir), { 'cache-disabled': 'true' }, ['a\n']);
    assert.deepEqual(readdirSync(dir), []);
  });
});
