import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createLogging, createLogReader, LogThread, type LogSink } from '../../../drivers/logging/index.ts';
import { fileWriterSpec } from '../../../drivers/logging/file-writer.ts';

const log = pino({ level: 'silent' });

function tmp() {
  const dir = mkdtempSync(join(tmpdir(), 'log-thread-'));
  return { dir, path: join(dir, 'c-json.log'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const fileLines = (p: string) => readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { log: string; stream: string });

/** Feeds a sink as the stdio hub does: the next chunk once the last one's wait (if any) settled. */
async function feed(sink: LogSink, chunks: Array<['stdout' | 'stderr', string]>): Promise<void> {
  for (const [stream, text] of chunks) await sink.log(stream, Buffer.from(text));
}

test('a busy json-file log moves to the log thread mid-line; the file reads as one writer wrote it', async () => {
  const t = tmp();
  const thread = new LogThread(log, { idleMs: 100 });
  try {
    const sink = createLogging({ log, thread }).open('c', t.path, { Type: 'json-file', Config: {} })!;
    await feed(sink, [['stdout', 'first\nhalf-'], ['stderr', 'an error\n']]);
    assert.equal(thread.running, false, 'a quiet log stays in the daemon thread');
    // 2 MiB of numbered lines in 64 KiB chunks, cut mid-line, with a line split across the move.
    const lines = Array.from({ length: 20000 }, (_, i) => `line ${i} ${'x'.repeat(90)}\n`).join('');
    const chunks: Array<['stdout', string]> = [['stdout', 'line\n']];
    for (let off = 0; off < lines.length; off += 65_000) chunks.push(['stdout', lines.slice(off, off + 65_000)]);
    await feed(sink, chunks);
    assert.equal(thread.running, true, 'a MiB within a second moves the log');
    await feed(sink, [['stdout', 'tail without newline']]);
    await sink.close();
    const got = fileLines(t.path);
    assert.deepEqual(got.slice(0, 3).map((x) => [x.stream, x.log]), [['stdout', 'first\n'], ['stderr', 'an error\n'], ['stdout', 'half-line\n']]);
    assert.equal(got.length, 3 + 20000 + 1);
    for (let i = 0; i < 20000; i++) assert.equal(got[3 + i]!.log, `line ${i} ${'x'.repeat(90)}\n`);
    assert.deepEqual(got.at(-1), { ...got.at(-1), log: 'tail without newline', stream: 'stdout' });
    const reader = createLogReader({ pathOf: () => t.path, log, pollMs: 50 });
    let n = 0;
    for await (const _ of reader.read('c', { stdout: true, stderr: true, follow: false, since: 0, until: 0, tail: -1 }, new AbortController().signal)) n++;
    assert.equal(n, got.length);
    // No log left: the thread ends.
    for (let i = 0; i < 50 && thread.running; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(thread.running, false, 'the thread ends once idle');
  } finally {
    await thread.stop();
    t.cleanup();
  }
});

test('the local driver moves too; in-flight bytes past the limit make the caller wait', async () => {
  const t = tmp();
  const path = join(t.dir, 'local-logs', 'container.log');
  const thread = new LogThread(log);
  try {
    const sink = thread.open(fileWriterSpec('local', path, {}), { stdout: null, stderr: null }, log, () => assert.fail('not lost'), 64 * 1024);
    const chunk = Buffer.from(`${'y'.repeat(99)}\n`.repeat(1000));
    const first = sink.log('stdout', chunk);
    assert.ok(first instanceof Promise, '100 KB in flight past a 64 KiB limit: wait');
    await first;
    for (let i = 0; i < 20; i++) await sink.log('stdout', chunk);
    await sink.close();
    const reader = createLogReader({ pathOf: () => path, log, pollMs: 50 });
    let n = 0;
    for await (const e of reader.read('c', { stdout: true, stderr: true, follow: false, since: 0, until: 0, tail: -1 }, new AbortController().signal)) {
      assert.equal(e.line.toString(), `${'y'.repeat(99)}\n`);
      n++;
    }
    assert.equal(n, 21000);
  } finally {
    await thread.stop();
    t.cleanup();
  }
});

test('a log thread that dies under an open log: the log goes on in the daemon thread', async () => {
  const t = tmp();
  const thread = new LogThread(log);
  try {
    const sink = createLogging({ log, thread }).open('c', t.path, { Type: 'json-file', Config: {} })!;
    await feed(sink, [['stdout', `${'z'.repeat(1 << 20)}\n`], ['stdout', 'moved\n']]);
    assert.equal(thread.running, true);
    await new Promise((r) => setTimeout(r, 100));
    await thread.stop();
    await new Promise((r) => setTimeout(r, 50));
    await feed(sink, [['stdout', 'after\n']]);
    await sink.close();
    const got = fileLines(t.path).map((x) => x.log);
    assert.equal(got.at(-1), 'after\n');
  } finally {
    await thread.stop();
    t.cleanup();
  }
});

test('mode=non-blocking in front of a moving log: whole lines in order, the ring never blocks its caller', async () => {
  const t = tmp();
  const thread = new LogThread(log, { idleMs: 100 });
  try {
    const sink = createLogging({ log, thread }).open('c', t.path, { Type: 'json-file', Config: { mode: 'non-blocking', 'max-buffer-size': '4m' } })!;
    const line = (i: number) => `n ${String(i).padStart(7, '0')} ${'y'.repeat(80)}\n`;
    let i = 0;
    for (let chunk = 0; chunk < 64; chunk++) {
      let text = '';
      while (text.length < 64 * 1024) text += line(i++);
      assert.equal(sink.log('stdout', Buffer.from(text)), undefined, 'non-blocking: log() never asks to wait');
      await new Promise((r) => setImmediate(r));
    }
    await sink.close();
    assert.equal(thread.running, true, 'the log moved');
    const got = fileLines(t.path).map((x) => Number(x.log.slice(2, 9)));
    assert.ok(got.length > 0);
    for (let k = 1; k < got.length; k++) assert.ok(got[k]! > got[k - 1]!, `in order at ${k}`);
    for (const x of fileLines(t.path)) assert.match(x.log, /^n \d{7} y{80}\n$/);
  } finally {
    await thread.stop();
    t.cleanup();
  }
});

test('a log opened while the idle thread is still ending goes to a new thread and keeps its held piece (CI: "42129" read as "129")', async () => {
  const t = tmp();
  const thread = new LogThread(log);
  try {
    const first = createLogging({ log, thread }).open('c0', join(t.dir, 'c0-json.log'), { Type: 'json-file', Config: {} })!;
    await feed(first, [['stdout', `${'z'.repeat(1 << 20)}\n`], ['stdout', 'moved\n']]);
    assert.equal(thread.running, true);
    await first.close();
    // What the idle timer does, with the next busy log's move right behind it.
    const ending = thread.stop();
    let lost = false;
    const sink = thread.open(fileWriterSpec('json-file', t.path, {}), { stdout: Buffer.from('42'), stderr: null }, log, () => (lost = true));
    await sink.log('stdout', Buffer.from('129\n42130\n'));
    await ending;
    await new Promise((r) => setTimeout(r, 50));
    await sink.close();
    assert.equal(lost, false, 'the ending thread took no log of the new one');
    assert.deepEqual(fileLines(t.path).map((x) => x.log), ['42129\n', '42130\n']);
  } finally {
    await thread.stop();
    t.cleanup();
  }
});
