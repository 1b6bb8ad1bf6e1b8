import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { pino } from 'pino';
import { createLogging, createLogReader, validateLogConfig } from '../../../drivers/logging/index.ts';
import type { LogEntry, LogReadOptions } from '../../../drivers/logging/index.ts';
import { EngineError } from '../../../lib/errors.ts';
import { GEN_DIR, generate } from '../../../hack/gen-logdriver-protos.ts';
import { readTree } from '../../../hack/gen-protos.ts';

const log = pino({ level: 'silent' });
const ALL: LogReadOptions = { stdout: true, stderr: true, follow: false, since: 0, until: 0, tail: -1 };

function tmp() {
  const dir = mkdtempSync(join(tmpdir(), 'logging-local-'));
  // The reader recognises the local format by this place.
  return { dir, path: join(dir, 'local-logs', 'container.log'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

async function collect(path: string, o: Partial<LogReadOptions> = {}, signal = new AbortController().signal, stop?: AbortSignal): Promise<LogEntry[]> {
  const reader = createLogReader({ pathOf: () => path, log, pollMs: 50 });
  const out: LogEntry[] = [];
  for await (const e of reader.read('c', { ...ALL, ...o }, signal, stop)) out.push(e);
  return out;
}

// ---- an independent decoder: the framing and LogEntry's wire format by hand -----------------

interface Rec {
  source: string;
  time_nano: bigint;
  line: Buffer;
  partial: boolean;
  meta: { last: boolean; id: string; ordinal: number } | null;
}

function varint(b: Buffer, p: { i: number }): bigint {
  let v = 0n;
  let shift = 0n;
  for (;;) {
    const c = b[p.i++]!;
    v |= BigInt(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
    shift += 7n;
  }
}

function decodeMsg(b: Buffer, each: (field: number, wire: number, value: bigint | Buffer) => void): void {
  const p = { i: 0 };
  while (p.i < b.length) {
    const key = Number(varint(b, p));
    const field = key >> 3;
    const wire = key & 7;
    if (wire === 0) each(field, wire, varint(b, p));
    else if (wire === 2) {
      const n = Number(varint(b, p));
      each(field, wire, b.subarray(p.i, p.i + n));
      p.i += n;
    } else throw new Error(`unexpected wire type ${wire}`);
  }
}

function decodeEntry(b: Buffer): Rec {
  const r: Rec = { source: '', time_nano: 0n, line: Buffer.alloc(0), partial: false, meta: null };
  decodeMsg(b, (f, _w, v) => {
    if (f === 1) r.source = (v as Buffer).toString();
    else if (f === 2) r.time_nano = BigInt.asIntN(64, v as bigint);
    else if (f === 3) r.line = Buffer.from(v as Buffer);
    else if (f === 4) r.partial = (v as bigint) !== 0n;
    else if (f === 5) {
      const m = { last: false, id: '', ordinal: 0 };
      decodeMsg(v as Buffer, (g, _w2, x) => {
        if (g === 1) m.last = (x as bigint) !== 0n;
        else if (g === 2) m.id = (x as Buffer).toString();
        else if (g === 3) m.ordinal = Number(x);
      });
      r.meta = m;
    }
  });
  return r;
}

/** All records of a file's bytes, checking that each trailing length repeats the leading one. */
function decodeFile(buf: Buffer): Rec[] {
  const out: Rec[] = [];
  let i = 0;
  while (i < buf.length) {
    const n = buf.readUInt32BE(i);
    assert.equal(buf.readUInt32BE(i + 4 + n), n, `trailing length at ${i + 4 + n}`);
    out.push(decodeEntry(buf.subarray(i + 4, i + 4 + n)));
    i += n + 8;
  }
  assert.equal(i, buf.length);
  return out;
}

/** The last `n` records, walking the trailing lengths backwards. */
function tailFile(buf: Buffer, n: number): Rec[] {
  const out: Rec[] = [];
  let end = buf.length;
  while (end > 0 && out.length < n) {
    const len = buf.readUInt32BE(end - 4);
    const start = end - 8 - len;
    assert.equal(buf.readUInt32BE(start), len);
    out.unshift(decodeEntry(buf.subarray(start + 4, start + 4 + len)));
    end = start;
  }
  return out;
}

// ---- tests ------------------------------------------------------------------------------------

test('local: records are framed protobuf LogEntry with the length repeated after', async () => {
  const t = tmp();
  try {
    const before = BigInt(Date.now()) * 1000000n;
    const l = createLogging({ log }).open('c', t.path, { Type: 'local', Config: {} })!;
    l.log('stdout', Buffer.from('one\ntw'));
    l.log('stderr', Buffer.from('err\n'));
    l.log('stdout', Buffer.from('o\n\nthree'));
    await l.close();
    const after = BigInt(Date.now() + 1) * 1000000n;
    const recs = decodeFile(readFileSync(t.path));
    assert.deepEqual(recs.map((r) => [r.source, r.line.toString(), r.partial]), [
      ['stdout', 'one', false],
      ['stderr', 'err', false],
      ['stdout', 'two', false],
      ['stdout', '', false],
      ['stdout', 'three', true],
    ]);
    for (const r of recs) assert.ok(r.time_nano >= before && r.time_nano <= after, String(r.time_nano));
    // The unterminated last piece is partial and not the last of its line (no "\n" on reading).
    assert.equal(recs[4]!.meta?.last, false);
    const entries = await collect(t.path);
    assert.deepEqual(entries.map((e) => e.line.toString()), ['one\n', 'err\n', 'two\n', '\n', 'three']);
    assert.deepEqual(entries.map((e) => e.stream), ['stdout', 'stderr', 'stdout', 'stdout', 'stdout']);
    // Times come back as RFC 3339 with nanoseconds, equal to the records'.
    const ns = recs[0]!.time_nano;
    assert.equal(entries[0]!.time, `${new Date(Number(ns / 1000000000n) * 1000).toISOString().slice(0, 19)}.${String(ns % 1000000000n).padStart(9, '0')}Z`);
  } finally {
    t.cleanup();
  }
});

test('local: long lines become partial records sharing an id, the last one marked', async () => {
  const t = tmp();
  try {
    const l = createLogging({ log }).open('c', t.path, { Type: 'local', Config: {} })!;
    const big = 'x'.repeat(40 * 1024);
    l.log('stdout', Buffer.from(`${big}\nend\n`));
    await l.close();
    const recs = decodeFile(readFileSync(t.path));
    assert.equal(recs.length, 4);
    assert.deepEqual(recs.slice(0, 3).map((r) => [r.line.length, r.partial, r.meta?.ordinal, r.meta?.last]), [
      [16384, true, 1, false],
      [16384, true, 2, false],
      [40 * 1024 - 32768, true, 3, true],
    ]);
    assert.equal(new Set(recs.slice(0, 3).map((r) => r.meta?.id)).size, 1);
    assert.match(recs[0]!.meta!.id, /^[0-9a-f]{64}$/);
    assert.equal(recs[3]!.partial, false);
    const entries = await collect(t.path);
    assert.equal(entries.map((e) => e.line.toString()).join(''), `${big}\nend\n`);
  } finally {
    t.cleanup();
  }
});

test('local: rotation at max-size, rotated files gzipped, tail from the end across files', async () => {
  const t = tmp();
  try {
    const l = createLogging({ log }).open('c', t.path, { Type: 'local', Config: { 'max-size': '1k', 'max-file': '3' } })!;
    for (let i = 0; i < 200; i++) {
      l.log('stdout', Buffer.from(`line ${String(i).padStart(3, '0')} ${'.'.repeat(20)}\n`));
      if (i % 10 === 9) await new Promise((r) => setImmediate(r));
    }
    await l.close();
    assert.ok(existsSync(`${t.path}.1.gz`) && existsSync(`${t.path}.2.gz`), 'rotated files are gzipped');
    assert.ok(!existsSync(`${t.path}.1`) && !existsSync(`${t.path}.3.gz`) && !existsSync(`${t.path}.1.gz.tmp`));
    const gz1 = readFileSync(`${t.path}.1.gz`);
    // The reference's gzip header: FEXTRA holding {"lastTime":...}.
    assert.equal(gz1[3]! & 4, 4);
    const xlen = gz1.readUInt16LE(10);
    const extra = JSON.parse(gz1.subarray(12, 12 + xlen).toString()) as { lastTime: string };
    assert.match(extra.lastTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    const files = [gunzipSync(readFileSync(`${t.path}.2.gz`)), gunzipSync(gz1), readFileSync(t.path)];
    // Each file holds about max-size: rotation happens before the record that would start past it.
    for (const f of files.slice(0, 2)) assert.ok(f.length >= 1000 && f.length < 1100, String(f.length));
    const recs = files.flatMap(decodeFile);
    const lines = recs.map((r) => r.line.toString());
    assert.equal(lines[lines.length - 1], `line 199 ${'.'.repeat(20)}`);
    // Kept lines are consecutive up to the last one.
    const first = Number(lines[0]!.slice(5, 8));
    assert.deepEqual(lines.map((x) => Number(x.slice(5, 8))), Array.from({ length: lines.length }, (_, k) => first + k));
    assert.equal(Date.parse(extra.lastTime) <= Date.now(), true);

    const all = await collect(t.path);
    assert.deepEqual(all.map((e) => e.line.toString()), lines.map((x) => `${x}\n`));
    const tail = await collect(t.path, { tail: 3 });
    assert.deepEqual(tail.map((e) => e.line.toString().slice(0, 8)), ['line 197', 'line 198', 'line 199']);
    assert.deepEqual(tailFile(Buffer.concat(files), 3).map((r) => r.line.toString()), lines.slice(-3));
    // A tail longer than the live file reaches into the gzipped ones.
    const n = decodeFile(files[2]!).length + 5;
    const long = await collect(t.path, { tail: n });
    assert.deepEqual(long.map((e) => e.line.toString()), lines.slice(-n).map((x) => `${x}\n`));
  } finally {
    t.cleanup();
  }
});

test('local: since/until filter and follow sees new records and rotation', async () => {
  const t = tmp();
  try {
    const l = createLogging({ log }).open('c', t.path, { Type: 'local', Config: { 'max-size': '1k', 'max-file': '2' } })!;
    l.log('stdout', Buffer.from('early\n'));
    await new Promise((r) => setTimeout(r, 30));
    const mid = Date.now() / 1000;
    await new Promise((r) => setTimeout(r, 30));
    l.log('stdout', Buffer.from('late\n'));
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual((await collect(t.path, { since: mid })).map((e) => e.line.toString()), ['late\n']);
    assert.deepEqual((await collect(t.path, { until: mid })).map((e) => e.line.toString()), ['early\n']);

    const stop = new AbortController();
    const got = collect(t.path, { follow: true, tail: 0 }, new AbortController().signal, stop.signal);
    await new Promise((r) => setTimeout(r, 100));
    for (let i = 0; i < 60; i++) l.log('stderr', Buffer.from(`f${i} ${'-'.repeat(30)}\n`));
    await l.close();
    await new Promise((r) => setTimeout(r, 300));
    stop.abort();
    const followed = await got;
    assert.deepEqual(followed.map((e) => e.line.toString().split(' ')[0]), Array.from({ length: 60 }, (_, i) => `f${i}`));
  } finally {
    t.cleanup();
  }
});

test('local: option defaults and validation follow the reference', () => {
  const ok = (c: Record<string, string>) => validateLogConfig({ Type: 'local', Config: c });
  ok({});
  ok({ 'max-size': '10m', 'max-file': '3', compress: 'false' });
  ok({ 'max-file': '1', compress: 'false' });
  assert.throws(() => ok({ 'max-file': '1' }), (e: unknown) => e instanceof EngineError && /compression cannot be enabled when max file count is 1/.test(e.message));
  assert.throws(() => ok({ 'max-size': 'abc' }), /invalid value for max-size/);
  assert.throws(() => ok({ compress: 'maybe' }), /invalid boolean value for compress/);
  assert.throws(() => ok({ foo: 'bar' }), /unknown log opt 'foo' for log driver local/);
});

test('json-file: compress gzips rotated files and the reader reads them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'logging-json-gz-'));
  const path = join(dir, 'c-json.log');
  try {
    const l = createLogging({ log }).open('c', path, { Type: 'json-file', Config: { 'max-size': '1k', 'max-file': '3', compress: 'true' } })!;
    for (let i = 0; i < 100; i++) {
      l.log('stdout', Buffer.from(`line ${String(i).padStart(3, '0')}\n`));
      if (i % 10 === 9) await new Promise((r) => setImmediate(r));
    }
    await l.close();
    assert.ok(existsSync(`${path}.1.gz`) && existsSync(`${path}.2.gz`));
    assert.ok(!existsSync(`${path}.1`) && !existsSync(`${path}.2`) && !existsSync(`${path}.3.gz`));
    const text = [gunzipSync(readFileSync(`${path}.2.gz`)), gunzipSync(readFileSync(`${path}.1.gz`)), readFileSync(path)].map(String).join('');
    const lines = text.split('\n').filter(Boolean).map((x) => (JSON.parse(x) as { log: string }).log);
    assert.equal(lines[lines.length - 1], 'line 099\n');
    const entries = await collect(path);
    assert.deepEqual(entries.map((e) => e.line.toString()), lines);
    const tail = await collect(path, { tail: lines.length - 2 });
    assert.deepEqual(tail.map((e) => e.line.toString()), lines.slice(2));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('drivers/logging/gen is up to date with drivers/logging/protos', () => {
  const dir = mkdtempSync(join(tmpdir(), 'engine-logdriver-gen-'));
  try {
    const fresh = generate(dir);
    const committed = readTree(GEN_DIR);
    assert.deepEqual([...committed.keys()].sort(), [...fresh.keys()].sort(), 'stale: run node_modules/.bin/node hack/gen-logdriver-protos.ts');
    for (const [file, text] of fresh) assert.equal(committed.get(file), text, `${file} is stale: run node_modules/.bin/node hack/gen-logdriver-protos.ts`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
