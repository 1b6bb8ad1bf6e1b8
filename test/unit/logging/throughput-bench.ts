// json-file write/read throughput for 50 MB of container output. Run by throughput.test.ts in a
// child process, because node:test's async-activity tracking adds about a microsecond to every
// awaited promise and would measure the test runner rather than the driver. Prints, never asserts
// on speed; exits non-zero only if the data does not round-trip.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createLogging, createLogReader } from '../../../drivers/logging/index.ts';

const log = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'logging-tp-'));
try {
  const path = join(dir, 'c-json.log');
  const line = 'the quick brown fox jumps over the lazy dog 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmno\n';
  const chunk = Buffer.from(line.repeat(Math.floor(65536 / line.length)));
  const total = 50 * 1024 * 1024;
  const l = createLogging({ log }).open('c', path, { Type: 'json-file', Config: {} })!;
  let written = 0;
  const t0 = performance.now();
  while (written < total) {
    l.log('stdout', chunk);
    written += chunk.length;
    if ((written / chunk.length) % 16 === 0) await new Promise((r) => setImmediate(r));
  }
  await l.close();
  const wMs = performance.now() - t0;

  const reader = createLogReader({ pathOf: () => path, log });
  const all = { stdout: true, stderr: true, follow: false, since: 0, until: 0, tail: -1 };
  let bytes = 0;
  let n = 0;
  const t1 = performance.now();
  for await (const e of reader.read('c', all, new AbortController().signal)) {
    bytes += e.line.length;
    n++;
  }
  const rMs = performance.now() - t1;
  const t2 = performance.now();
  let tailN = 0;
  for await (const _ of reader.read('c', { ...all, tail: 100 }, new AbortController().signal)) tailN++;
  const tailMs = performance.now() - t2;

  const mb = written / (1024 * 1024);
  console.log(`json-file write: ${(mb / (wMs / 1000)).toFixed(0)} MB/s (${mb.toFixed(0)} MB in ${wMs.toFixed(0)} ms, file ${(statSync(path).size / 1048576).toFixed(0)} MB)`);
  console.log(`json-file read:  ${(mb / (rMs / 1000)).toFixed(0)} MB/s (${n} entries in ${rMs.toFixed(0)} ms)`);
  console.log(`json-file tail 100: ${tailMs.toFixed(1)} ms`);
  if (bytes !== written || tailN !== 100) {
    console.error(`round-trip mismatch: wrote ${written} bytes, read ${bytes}; tail gave ${tailN}`);
    process.exitCode = 1;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
