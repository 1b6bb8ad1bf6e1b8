// json-file attributes (labels, labels-regex, env, env-regex, tag → "attrs"), the local driver's
// options as the reference's, and mode=non-blocking (the ring) on the file drivers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createLogging, createLogReader, localLogPath, validateLogConfig } from '../../../drivers/logging/index.ts';
import type { ContainerLogInfo, LogEntry, LogSink } from '../../../drivers/logging/index.ts';
import { goJsonStringMap } from '../../../drivers/logging/info.ts';
import { RingSink } from '../../../drivers/logging/ring.ts';

const log = pino({ level: 'silent' });
const info: ContainerLogInfo = {
  id: 'a'.repeat(64),
  name: '/web',
  imageId: 'sha256:' + 'b'.repeat(64),
  imageName: 'busybox',
  path: 'sh',
  args: ['-c', 'echo hi'],
  created: '2026-01-02T03:04:05.000000000Z',
  env: ['PATH=/bin', 'APP_MODE=prod', 'APP_X=1', 'OTHER=z'],
  labels: { team: 'core', 'com.example.tier': 'front', unrelated: 'u' },
};

function tmp() {
  const dir = mkdtempSync(join(tmpdir(), 'logging-attrs-'));
  return { dir, path: join(dir, 'c-json.log'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

async function readAll(path: string): Promise<LogEntry[]> {
  const out: LogEntry[] = [];
  const r = createLogReader({ pathOf: () => path, log });
  for await (const e of r.read('c', { stdout: true, stderr: true, follow: false, since: 0, until: 0, tail: -1 }, new AbortController().signal)) out.push(e);
  return out;
}

test('json-file writes the selected labels, env and tag as "attrs" between stream and time', async () => {
  const t = tmp();
  try {
    const cfg = { labels: 'team,missing', 'labels-regex': '^com\\.', env: 'OTHER', 'env-regex': '^APP_', tag: '{{.Name}}/{{.ID}}' };
    validateLogConfig({ Type: 'json-file', Config: cfg });
    const l = createLogging({ log }).open(info.id, t.path, { Type: 'json-file', Config: cfg }, info) as LogSink;
    l.log('stdout', Buffer.from('hello\n'));
    l.log('stderr', Buffer.from('tail'));
    await l.close();
    const lines = readFileSync(t.path, 'utf8').trim().split('\n');
    const attrs = '{"APP_MODE":"prod","APP_X":"1","OTHER":"z","com.example.tier":"front","tag":"web/aaaaaaaaaaaa","team":"core"}';
    assert.match(lines[0]!, new RegExp(`^\\{"log":"hello\\\\n","stream":"stdout","attrs":${attrs.replace(/[.{}]/g, '\\$&')},"time":"[^"]+"\\}$`));
    assert.match(lines[1]!, /^\{"log":"tail","stream":"stderr","attrs":\{/);
    const entries = await readAll(t.path);
    assert.equal(entries.length, 2);
    assert.deepEqual(entries[0]!.attrs, JSON.parse(attrs));
    assert.equal(entries[0]!.line.toString(), 'hello\n');
  } finally {
    t.cleanup();
  }
});

test('json-file without those options (or without the container info) writes no "attrs"', async () => {
  const t = tmp();
  try {
    const l = createLogging({ log }).open(info.id, t.path, { Type: 'json-file', Config: { env: 'NOPE' } }, info) as LogSink;
    l.log('stdout', Buffer.from('x\n'));
    await l.close();
    assert.match(readFileSync(t.path, 'utf8'), /^\{"log":"x\\n","stream":"stdout","time":"[^"]+"\}\n$/);
    assert.equal((await readAll(t.path))[0]!.attrs, undefined);
  } finally {
    t.cleanup();
  }
});

test('json-file: a bad labels-regex fails the start as the reference', () => {
  const t = tmp();
  try {
    assert.throws(() => createLogging({ log }).open(info.id, t.path, { Type: 'json-file', Config: { 'labels-regex': '(' } }, info), {
      message: /^failed to initialize logging driver: error parsing regexp/,
    });
  } finally {
    t.cleanup();
  }
});

test('attrs are encoded as Go json.Marshal of a map: sorted keys, HTML characters escaped', () => {
  assert.equal(goJsonStringMap({ b: '<a&b>', a: 'q"\n\u2028' }), '{"a":"q\\"\\n\\u2028","b":"\\u003ca\\u0026b\\u003e"}');
});

test('local takes only max-file, max-size and compress (labels, env, tag refused)', () => {
  validateLogConfig({ Type: 'local', Config: { 'max-file': '3', 'max-size': '1m', compress: 'false', mode: 'non-blocking', 'max-buffer-size': '2m' } });
  for (const k of ['labels', 'labels-regex', 'env', 'env-regex', 'tag']) {
    assert.throws(() => validateLogConfig({ Type: 'local', Config: { [k]: 'x' } }), { message: `unknown log opt '${k}' for log driver local` });
  }
});

test('the ring drops what does not fit while messages wait, never blocks, and flushes at close', async () => {
  const got: string[] = [];
  let release = () => {};
  const gate = new Promise<void>((r) => (release = r));
  let limit = -1;
  const inner: LogSink = {
    log: (_s, c) => {
      got.push(c.toString());
      return gate;
    },
    close: async () => {},
    limitQueue: (n) => (limit = n),
  };
  const ring = new RingSink(inner, 20, log);
  assert.ok(limit > 0, 'the ring limits the queue of the wrapped driver');
  for (let i = 0; i < 10; i++) assert.equal(ring.log('stdout', Buffer.from(`line-${i}\n`)), undefined);
  ring.log('stdout', Buffer.from('no-newline'));
  assert.equal(ring.dropped, 7); // 6 + 6 + 6 fit in 20 bytes; the rest wait for room
  release();
  await ring.close();
  assert.deepEqual(got, ['line-0\n', 'line-1\n', 'line-2\n']);
  assert.equal(ring.dropped, 8, 'the piece without newline, queued at close, did not fit either');
});

test('a message larger than the whole ring still goes when the ring is empty; a last line without newline goes at close', async () => {
  const got: string[] = [];
  const ring = new RingSink({ log: (_s, c) => void got.push(c.toString()), close: async () => {} }, 4, log);
  ring.log('stderr', Buffer.from('a-long-line\n'));
  await new Promise((r) => setImmediate(r));
  ring.log('stderr', Buffer.from('the-'));
  ring.log('stderr', Buffer.from('rest'));
  await ring.close();
  assert.deepEqual(got, ['a-long-line\n', 'the-rest']);
});

for (const type of ['json-file', 'local'] as const) {
  test(`${type} with mode=non-blocking: output never waits, lines beyond max-buffer-size are dropped whole`, async () => {
    const t = tmp();
    try {
      const path = type === 'local' ? localLogPath(t.dir) : t.path;
      const cfg = { mode: 'non-blocking', 'max-buffer-size': '1k' };
      validateLogConfig({ Type: type, Config: cfg });
      const l = createLogging({ log }).open(info.id, path, { Type: type, Config: cfg }, info) as LogSink;
      for (let i = 0; i < 2000; i++) assert.equal(l.log('stdout', Buffer.from(`row-${String(i).padStart(4, '0')}\n`)), undefined);
      await l.close();
      const lines = (await readAll(path)).map((e) => e.line.toString());
      assert.ok(lines.length > 50 && lines.length < 2000, String(lines.length));
      assert.equal(lines[0], 'row-0000\n');
      for (const x of lines) assert.match(x, /^row-\d{4}\n$/);
      // Given time, everything goes through.
      const t2 = join(t.dir, 'second');
      const path2 = type === 'local' ? localLogPath(t2) : `${t2}.log`;
      const l2 = createLogging({ log }).open(info.id, path2, { Type: type, Config: cfg }, info) as LogSink;
      for (let i = 0; i < 200; i++) {
        l2.log('stdout', Buffer.from(`slow-${i}\n`));
        if (i % 20 === 0) await new Promise((r) => setTimeout(r, 5));
      }
      await l2.close();
      assert.equal((await readAll(path2)).length, 200);
    } finally {
      t.cleanup();
    }
  });
}
