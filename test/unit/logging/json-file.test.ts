import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createLogging, createLogReader, validateLogConfig, MAX_LINE } from '../../../drivers/logging/index.ts';
import type { LogEntry, LogReadOptions } from '../../../drivers/logging/index.ts';
import { EngineError } from '../../../lib/errors.ts';

const log = pino({ level: 'silent' });

function tmp() {
  const dir = mkdtempSync(join(tmpdir(), 'logging-'));
  return { dir, path: join(dir, 'c-json.log'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const ALL: LogReadOptions = { stdout: true, stderr: true, follow: false, since: 0, until: 0, tail: -1 };

async function collect(path: string, o: Partial<LogReadOptions> = {}, signal = new AbortController().signal, stop?: AbortSignal): Promise<LogEntry[]> {
  const reader = createLogReader({ pathOf: () => path, log, pollMs: 50 });
  const out: LogEntry[] = [];
  for await (const e of reader.read('c', { ...ALL, ...o }, signal, stop)) out.push(e);
  return out;
}

const fileLines = (p: string) => readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { log: string; stream: string; time: string });

test('lines are split at newlines; partial lines wait for the rest or for close', async () => {
  const t = tmp();
  try {
    const l = createLogging({ log }).open('c', t.path, { Type: 'json-file', Config: {} })!;
    l.log('stdout', Buffer.from('one\ntw'));
    l.log('stderr', Buffer.from('err\n'));
    l.log('stdout', Buffer.from('o\n\nthree'));
    l.log('stdout', Buffer.from('-and-more'));
    await l.close();
    const lines = fileLines(t.path);
    assert.deepEqual(lines.map((x) => [x.stream, x.log]), [
      ['stdout', 'one\n'],
      ['stderr', 'err\n'],
      ['stdout', 'two\n'],
      ['stdout', '\n'],
      ['stdout', 'three-and-more'],
    ]);
    for (const x of lines) assert.match(x.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    const raw = readFileSync(t.path, 'utf8').split('\n')[0]!;
    assert.match(raw, /^\{"log":"one\\n","stream":"stdout","time":"[^"]+"\}$/);
    const entries = await collect(t.path);
    assert.deepEqual(entries.map((e) => e.line.toString()), ['one\n', 'err\n', 'two\n', '\n', 'three-and-more']);
    assert.deepEqual(entries.map((e) => e.stream), ['stdout', 'stderr', 'stdout', 'stdout', 'stdout']);
    assert.equal(entries[0]!.time, lines[0]!.time);
  } finally {
    t.cleanup();
  }
});

test('long lines become 16 KiB partial entries; odd bytes round-trip', async () => {
  const t = tmp();
  try {
    const l = createLogging({ log }).open('c', t.path, { Type: 'json-file', Config: {} })!;
    const big = 'x'.repeat(40000);
    l.log('stdout', Buffer.from(big.slice(0, 10000)));
    l.log('stdout', Buffer.from(big.slice(10000) + '\n'));
    const odd = 'tab\t quote" back\\ slash/ ctl\u0001 uni é 日本 🎉 <&>\r\n';
    l.log('stderr', Buffer.from(odd));
    l.log('stdout', Buffer.from([0xff, 0x41, 0x0a]));
    await l.close();
    const entries = await collect(t.path);
    assert.deepEqual(entries.slice(0, 3).map((e) => e.line.length), [MAX_LINE, MAX_LINE, 40000 - 2 * MAX_LINE + 1]);
    assert.equal(Buffer.concat(entries.slice(0, 3).map((e) => e.line)).toString(), big + '\n');
    assert.equal(entries[3]!.line.toString(), odd);
    assert.equal(entries[3]!.stream, 'stderr');
    assert.equal(entries[4]!.line.toString(), '\ufffdA\n');
  } finally {
    t.cleanup();
  }
});

test('rotation with max-size / max-file, reading back across files, tail across files', async () => {
  const t = tmp();
  try {
    const l = createLogging({ log }).open('c', t.path, { Type: 'json-file', Config: { 'max-size': '2k', 'max-file': '3' } })!;
    for (let i = 0; i < 200; i++) {
      l.log(i % 2 ? 'stderr' : 'stdout', Buffer.from(`line ${i}\n`));
      if (i % 10 === 0) await new Promise((r) => setImmediate(r));
    }
    await l.close();
    assert.ok(existsSync(t.path));
    assert.ok(existsSync(`${t.path}.1`));
    assert.ok(existsSync(`${t.path}.2`));
    assert.ok(!existsSync(`${t.path}.3`));
    for (const p of [`${t.path}.1`, `${t.path}.2`]) assert.ok(readFileSync(p).length < 2000 + 200, p);
    const all = await collect(t.path);
    const nums = all.map((e) => Number(e.line.toString().split(' ')[1]));
    assert.equal(nums[nums.length - 1], 199);
    for (let i = 1; i < nums.length; i++) assert.equal(nums[i], nums[i - 1]! + 1);
    assert.ok(nums[0]! > 0, 'oldest entries were rotated away');

    const lastN = await collect(t.path, { tail: 25 });
    assert.deepEqual(lastN.map((e) => e.line.toString()), all.slice(-25).map((e) => e.line.toString()));
    const across = await collect(t.path, { tail: all.length - 3 });
    assert.equal(across.length, all.length - 3);
    assert.deepEqual(await collect(t.path, { tail: 0 }), []);
    assert.equal((await collect(t.path, { tail: 100000 })).length, all.length);
    const onlyErr = await collect(t.path, { stdout: false, tail: 10 });
    assert.equal(onlyErr.length, 5, 'tail counts every entry, then the stream filter applies (like the reference)');
    assert.ok(onlyErr.every((e) => e.stream === 'stderr'));
  } finally {
    t.cleanup();
  }
});

test('max-file=1 truncates in place', async () => {
  const t = tmp();
  try {
    const l = createLogging({ log }).open('c', t.path, { Type: 'json-file', Config: { 'max-size': '1k' } })!;
    for (let i = 0; i < 100; i++) {
      l.log('stdout', Buffer.from(`entry ${i}\n`));
      await new Promise((r) => setImmediate(r));
    }
    await l.close();
    assert.ok(!existsSync(`${t.path}.1`));
    assert.ok(readFileSync(t.path).length < 1100);
    const e = await collect(t.path);
    assert.equal(e[e.length - 1]!.line.toString(), 'entry 99\n');
  } finally {
    t.cleanup();
  }
});

test('since / until filter by time; reference-format files are read too', async () => {
  const t = tmp();
  try {
    writeFileSync(
      t.path,
      [
        '{"log":"a\\n","stream":"stdout","time":"2024-01-01T00:00:01Z"}',
        '{"log":"b\\n","stream":"stderr","attrs":{"tag":"x"},"time":"2024-01-01T00:00:02.5Z"}',
        '{"log":"c\\n","stream":"stdout","time":"2024-01-01T00:00:03.000000001Z"}',
        '{"log":"d\\n","stream":"stdout","time":"2024-01-01T00:00:04.000000000Z"}',
        'garbage',
        '',
      ].join('\n'),
    );
    const base = Date.parse('2024-01-01T00:00:00Z') / 1000;
    const all = await collect(t.path);
    assert.deepEqual(all.map((e) => e.line.toString()), ['a\n', 'b\n', 'c\n', 'd\n']);
    assert.equal(all[0]!.time, '2024-01-01T00:00:01.000000000Z');
    assert.equal(all[1]!.time, '2024-01-01T00:00:02.500000000Z');
    assert.deepEqual(all[1]!.attrs, { tag: 'x' });
    const since = await collect(t.path, { since: base + 2.5 });
    assert.deepEqual(since.map((e) => e.line.toString()), ['b\n', 'c\n', 'd\n']);
    const until = await collect(t.path, { until: base + 3 });
    assert.deepEqual(until.map((e) => e.line.toString()), ['a\n', 'b\n']);
    const both = await collect(t.path, { since: base + 2, until: base + 3.5 });
    assert.deepEqual(both.map((e) => e.line.toString()), ['b\n', 'c\n']);
  } finally {
    t.cleanup();
  }
});

test('follow: two rotations between two looks of the follower lose no file', async () => {
  const t = tmp();
  const line = (s: string) => `${JSON.stringify({ log: `${s}\n`, stream: 'stdout', time: '2026-11-28T01:00:00.000000001Z' })}\n`;
  const lines = (tag: string) => [0, 1, 2].map((i) => line(`${tag} ${i}`)).join('');
  try {
    writeFileSync(t.path, lines('a'));
    const stop = new AbortController();
    const got: string[] = [];
    const reader = createLogReader({ pathOf: () => t.path, log, pollMs: 20 });
    const done = (async () => {
      for await (const e of reader.read('c', { ...ALL, follow: true }, new AbortController().signal, stop.signal)) got.push(e.line.toString().trim());
    })();
    while (got.length < 3) await new Promise((r) => setTimeout(r, 5));
    // In one turn of the loop, so the follower cannot look in between: a -> .1, b written and
    // rotated (.1 -> .2, b -> .1), c written at the path.
    appendFileSync(t.path, lines('a+'));
    renameSync(t.path, `${t.path}.1`);
    writeFileSync(t.path, lines('b'));
    renameSync(`${t.path}.1`, `${t.path}.2`);
    renameSync(t.path, `${t.path}.1`);
    writeFileSync(t.path, lines('c'));
    const deadline = Date.now() + 2000;
    while (got.length < 12 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    stop.abort();
    await done;
    assert.deepEqual(got, ['a', 'a+', 'b', 'c'].flatMap((tag) => [0, 1, 2].map((i) => `${tag} ${i}`)));
  } finally {
    t.cleanup();
  }
});

test('follow: new data is streamed, rotation is survived, stopFollowing drains and ends', async () => {
  const t = tmp();
  try {
    // Rotates every dozen lines or so; 20 files keep all 122, so a follower that lags on a busy
    // machine still finds what it has not read (with 5 files, one lagging under the full suite lost 13).
    const l = createLogging({ log }).open('c', t.path, { Type: 'json-file', Config: { 'max-size': '1k', 'max-file': '20' } })!;
    l.log('stdout', Buffer.from('before\n'));
    await new Promise((r) => setTimeout(r, 20));
    const stop = new AbortController();
    const got: string[] = [];
    const done = (async () => {
      const reader = createLogReader({ pathOf: () => t.path, log, pollMs: 50 });
      for await (const e of reader.read('c', { ...ALL, follow: true, tail: 1 }, new AbortController().signal, stop.signal)) got.push(e.line.toString());
    })();
    await new Promise((r) => setTimeout(r, 50));
    for (let i = 0; i < 120; i++) {
      l.log('stdout', Buffer.from(`live ${i}\n`));
      if (i % 7 === 0) await new Promise((r) => setTimeout(r, 2));
    }
    l.log('stdout', Buffer.from('last words'));
    await l.close();
    assert.ok(existsSync(`${t.path}.1`), 'rotated while following');
    stop.abort();
    await done;
    assert.equal(got[0], 'before\n');
    assert.equal(got.length, 122);
    for (let i = 0; i < 120; i++) assert.equal(got[i + 1], `live ${i}\n`);
    assert.equal(got[121], 'last words');
  } finally {
    t.cleanup();
  }
});

test('follow: a missing file is waited for; signal aborts at once', async () => {
  const t = tmp();
  try {
    const ac = new AbortController();
    const got: string[] = [];
    const done = (async () => {
      const reader = createLogReader({ pathOf: () => t.path, log, pollMs: 30 });
      for await (const e of reader.read('c', { ...ALL, follow: true }, ac.signal)) got.push(e.line.toString());
    })();
    await new Promise((r) => setTimeout(r, 40));
    appendFileSync(t.path, '{"log":"hello\\n","stream":"stdout","time":"2024-01-01T00:00:01.000000000Z"}\n');
    for (let i = 0; i < 50 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(got, ['hello\n']);
    const t0 = Date.now();
    ac.abort();
    await done;
    assert.ok(Date.now() - t0 < 200);
  } finally {
    t.cleanup();
  }
});

test('none driver, unknown driver and option validation', () => {
  assert.equal(createLogging({ log }).open('c', '/nonexistent', { Type: 'none', Config: {} }), null);
  const bad = (lc: { Type: string; Config: Record<string, string> }, msg: string) =>
    assert.throws(() => validateLogConfig(lc), (e: unknown) => e instanceof EngineError && e.code === 'InvalidArgument' && e.message === msg, msg);
  bad({ Type: 'json-file', Config: { x: '1' } }, "unknown log opt 'x' for json-file log driver");
  bad({ Type: 'local', Config: { x: 'a' } }, "unknown log opt 'x' for log driver local");
  bad({ Type: 'bogus', Config: {} }, "logger: no log driver named 'bogus' is registered");
  bad({ Type: 'json-file', Config: { 'max-size': 'ten' } }, "invalid size: 'ten'");
  bad({ Type: 'json-file', Config: { 'max-size': '0' } }, 'max-size must be a positive number');
  bad({ Type: 'json-file', Config: { 'max-file': '0' } }, 'max-file cannot be less than 1');
  bad({ Type: 'json-file', Config: { 'max-file': 'x' } }, 'strconv.Atoi: parsing "x": invalid syntax');
  bad({ Type: 'json-file', Config: { compress: 'true', 'max-file': '3' } }, 'compress cannot be true when max-file is less than 2 or max-size is not set');
  bad({ Type: 'json-file', Config: { mode: 'weird' } }, 'logger: logging mode not supported: weird');
  validateLogConfig({ Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3', compress: 'true', labels: 'a', tag: '{{.Name}}', mode: 'non-blocking', 'max-buffer-size': '4m' } });
  validateLogConfig({ Type: 'none', Config: { anything: 'goes' } });
  validateLogConfig({ Type: 'local', Config: { 'max-size': '1g' } });
});

test('a writer that falls behind asks its caller to wait; everything is written', async () => {
  const t = tmp();
  try {
    const l = createLogging({ log }).open('c', t.path, { Type: 'json-file', Config: {} })!;
    const line = Buffer.from('x'.repeat(1023) + '\n');
    const chunk = Buffer.concat(Array.from({ length: 64 }, () => line));
    let waits = 0;
    for (let i = 0; i < 160; i++) {
      const r = l.log('stdout', chunk);
      if (r) {
        waits++;
        await r;
      }
    }
    await l.close();
    assert.ok(waits > 0, 'log() returned a promise while 10 MiB were queued');
    assert.equal(fileLines(t.path).length, 160 * 64);
  } finally {
    t.cleanup();
  }
});

test('a disk out of space (/dev/full): output is dropped, one warning per run of failures, close resolves', { skip: !existsSync('/dev/full') }, async () => {
  const warnings: string[] = [];
  const counting = pino({ level: 'warn' }, { write: (s: string) => void warnings.push(s) });
  const l = createLogging({ log: counting }).open('c', '/dev/full', { Type: 'json-file', Config: {} })!;
  for (let i = 0; i < 50; i++) {
    await l.log('stdout', Buffer.from(`${'x'.repeat(64 << 10)}\n`));
    await new Promise((r) => setImmediate(r));
  }
  await l.close();
  assert.equal(warnings.length, 1, warnings.join(''));
  assert.match(warnings[0]!, /ENOSPC/);
  assert.match(warnings[0]!, /output is dropped until writes succeed/);
});

test('entries are the same whatever the chunking and whatever path builds them (batched plain lines, escaped ones, long ones), with and without max-size', async () => {
  // A model of the entries: lines end at "\n", longer ones become MAX_LINE partial entries.
  const model = (chunks: Array<['stdout' | 'stderr', string]>) => {
    const out: Array<[string, string]> = [];
    const pending: Record<string, string> = { stdout: '', stderr: '' };
    for (const [stream, c] of chunks) {
      let buf = pending[stream] + c;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        let line = buf.slice(0, nl);
        while (line.length > MAX_LINE) {
          out.push([stream, line.slice(0, MAX_LINE)]);
          line = line.slice(MAX_LINE);
        }
        out.push([stream, `${line}\n`]);
        buf = buf.slice(nl + 1);
      }
      while (buf.length > MAX_LINE) {
        out.push([stream, buf.slice(0, MAX_LINE)]);
        buf = buf.slice(MAX_LINE);
      }
      pending[stream] = buf;
    }
    for (const s of ['stdout', 'stderr']) if (pending[s]) out.push([s, pending[s]!]);
    return out;
  };
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
  const word = () => ['a', 'hello world', 'x'.repeat(rnd(40000)), '', 'tab\there', 'q"uote', 'back\\slash', '{"json":1}', '~!@#$%^&*()_+ <&>', 'y'.repeat(5461), 'z'.repeat(5462)][rnd(11)]!;
  for (const config of [{}, { 'max-size': '64k', 'max-file': '1000' }] as Array<Record<string, string>>) {
    const t = tmp();
    try {
      const chunks: Array<['stdout' | 'stderr', string]> = [];
      for (let i = 0; i < 300; i++) {
        let c = '';
        for (let k = rnd(6); k >= 0; k--) c += word() + (rnd(3) ? '\n' : '');
        chunks.push([rnd(4) ? 'stdout' : 'stderr', c]);
      }
      const l = createLogging({ log }).open('c', t.path, { Type: 'json-file', Config: config })!;
      for (const [s, c] of chunks) await l.log(s, Buffer.from(c));
      await l.close();
      const entries = await collect(t.path);
      assert.deepEqual(entries.map((e) => [e.stream, e.line.toString()]), model(chunks), JSON.stringify(config));
    } finally {
      t.cleanup();
    }
  }
  // Byte for byte the same layout either way, attrs included.
  const t = tmp();
  try {
    const info = { id: 'c'.repeat(64), name: '/n', imageId: 'sha256:x', imageName: 'img', path: 'sh', args: [], labels: {}, env: [], created: '1970-01-01T00:00:00Z' };
    const l = (await createLogging({ log }).open('c', t.path, { Type: 'json-file', Config: { tag: 'web' } }, info))!;
    l.log('stdout', Buffer.from('plain\n\nlines\n'));
    l.log('stdout', Buffer.from('not "plain"\n'));
    await l.close();
    const raw = readFileSync(t.path, 'utf8').split('\n').filter(Boolean).map((x) => x.replace(/"time":"[^"]+"/, '"time":"T"'));
    assert.deepEqual(raw, [
      '{"log":"plain\\n","stream":"stdout","attrs":{"tag":"web"},"time":"T"}',
      '{"log":"\\n","stream":"stdout","attrs":{"tag":"web"},"time":"T"}',
      '{"log":"lines\\n","stream":"stdout","attrs":{"tag":"web"},"time":"T"}',
      '{"log":"not \\"plain\\"\\n","stream":"stdout","attrs":{"tag":"web"},"time":"T"}',
    ]);
  } finally {
    t.cleanup();
  }
});
