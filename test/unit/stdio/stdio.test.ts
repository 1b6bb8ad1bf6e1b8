// The stdio driver without a supervisor: FIFO opens never block, the hub fans out and bounds
// slow subscribers, EOF is reported, FIFOs are removed.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { constants, existsSync, openSync, closeSync, statSync, writeSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createStdio } from '../../../drivers/stdio/stdio.ts';

const log = pino({ level: 'silent' });
const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'engstdio-'));
  dirs.push(d);
  return d;
}

/** Plays the shim: opens the write end of a FIFO the way containerd's shim does. */
function writer(path: string): number {
  return openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
}

test('open creates FIFOs and returns at once with nobody on the other side', async () => {
  const dir = join(await tmp(), 'c1');
  const stdio = createStdio(log);
  const t0 = Date.now();
  const io = await stdio.open({ dir, procId: 'init', stdin: true, tty: false });
  assert.ok(Date.now() - t0 < 500);
  assert.deepEqual(io.paths, { stdout: join(dir, 'init-stdout'), stderr: join(dir, 'init-stderr'), stdin: join(dir, 'init-stdin') });
  for (const p of Object.values(io.paths)) assert.ok(statSync(p!).isFIFO());
  // The event loop and the fs threadpool stay free while no writer ever shows up.
  await Promise.all([1, 2, 3, 4, 5].map(() => readFile('/proc/self/stat')));
  const hub = stdio.hub(io);
  let ended = false;
  void hub.ended.then(() => (ended = true));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(ended, false, 'no EOF before the writer has come and gone');
  io.close();
  await hub.ended;
  await stdio.remove(dir, 'init');
  assert.equal(existsSync(dir), false);
});

test('tty has no stderr FIFO; no stdin unless asked', async () => {
  const dir = join(await tmp(), 'c2');
  const stdio = createStdio(log);
  const io = await stdio.open({ dir, procId: 'exec1', stdin: false, tty: true });
  assert.equal(io.stderr, null);
  assert.equal(io.stdin, null);
  assert.deepEqual(Object.keys(io.paths), ['stdout']);
  assert.equal(existsSync(join(dir, 'exec1-stderr')), false);
  io.close();
  await stdio.remove(dir, 'exec1');
});

test('hub fans out to every subscriber, reports EOF, and serves late subscribers onEnd', async () => {
  const dir = join(await tmp(), 'c3');
  const stdio = createStdio(log);
  const io = await stdio.open({ dir, procId: 'init', stdin: false, tty: false });
  const hub = stdio.hub(io);
  const a: string[] = [];
  const b: string[] = [];
  let aEnd = 0;
  hub.subscribe((s, c) => void a.push(`${s}:${c}`), () => aEnd++);
  const unsubB = hub.subscribe((s, c) => void b.push(`${s}:${c}`));
  const out = writer(io.paths.stdout);
  const err = writer(io.paths.stderr!);
  writeSync(out, 'one');
  await new Promise((r) => setTimeout(r, 30));
  unsubB();
  writeSync(err, 'two');
  closeSync(out);
  closeSync(err);
  await hub.ended;
  assert.deepEqual(a, ['stdout:one', 'stderr:two']);
  assert.deepEqual(b, ['stdout:one']);
  assert.equal(aEnd, 1);
  const late = await new Promise<boolean>((r) => hub.subscribe(() => {}, () => r(true)));
  assert.equal(late, true);
  io.close();
  await stdio.remove(dir, 'init');
});

test('a slow subscriber pauses the output: every subscriber gets everything, nothing queues up', async () => {
  const dir = join(await tmp(), 'c4');
  const stdio = createStdio(log);
  const io = await stdio.open({ dir, procId: 'init', stdin: false, tty: false });
  const hub = stdio.hub(io);
  let all = 0;
  let slow = 0;
  let gates = 0;
  hub.subscribe((_s, c) => void (all += c.length));
  hub.subscribe((_s, c) => {
    slow += c.length;
    // Every 8th chunk makes the producer wait a little.
    if (++gates % 8 === 0) return new Promise((r) => setTimeout(r, 5));
  });
  const out = writer(io.paths.stdout);
  const err = writer(io.paths.stderr!);
  closeSync(err);
  const chunk = Buffer.alloc(16 * 1024, 0x61);
  const total = 4 * 1024 * 1024;
  let written = 0;
  let blocked = 0;
  while (written < total) {
    try {
      written += writeSync(out, chunk);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
      blocked++;
      await new Promise((r) => setTimeout(r, 1));
    }
  }
  closeSync(out);
  await hub.ended;
  assert.equal(all, total);
  assert.equal(slow, total);
  assert.ok(blocked > 0, 'the writer had to wait for the slow subscriber');
  io.close();
  await stdio.remove(dir, 'init');
});

test('writeStdin reaches the reader of the stdin FIFO', async () => {
  const dir = join(await tmp(), 'c5');
  const stdio = createStdio(log);
  const io = await stdio.open({ dir, procId: 'init', stdin: true, tty: true });
  const hub = stdio.hub(io);
  const rd = openSync(io.paths.stdin!, constants.O_RDONLY | constants.O_NONBLOCK);
  hub.writeStdin(Buffer.from('hello'));
  await new Promise((r) => setTimeout(r, 30));
  const buf = Buffer.alloc(16);
  const { readSync } = await import('node:fs');
  const n = readSync(rd, buf, 0, 16, null);
  assert.equal(buf.subarray(0, n).toString(), 'hello');
  hub.closeStdin();
  closeSync(rd);
  io.close();
  await stdio.remove(dir, 'init');
});

test('a chunk is freed once dispatched when every subscriber copies; kept while one may hold it', async () => {
  const dir = join(await tmp(), 'c6');
  const stdio = createStdio(log);
  const io = await stdio.open({ dir, procId: 'init', stdin: false, tty: false });
  const hub = stdio.hub(io);
  const copied: string[] = [];
  const seen: Buffer[] = [];
  hub.subscribe((_s, c) => void copied.push(c.toString()), undefined, { copies: true });
  const out = writer(io.paths.stdout);
  closeSync(writer(io.paths.stderr!));
  const next = () => new Promise<void>((r) => setTimeout(r, 30));
  writeSync(out, 'freed');
  await next();
  // A subscriber that keeps the chunks it is given (an attach client's socket write).
  const unsub = hub.subscribe((_s, c) => void seen.push(c));
  writeSync(out, 'kept');
  await next();
  unsub();
  writeSync(out, 'freed again');
  await next();
  closeSync(out);
  await hub.ended;
  assert.deepEqual(copied, ['freed', 'kept', 'freed again']);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.toString(), 'kept', 'a chunk a subscriber may hold is left intact');
  io.close();
  await stdio.remove(dir, 'init');
});

test('a released chunk is really freed: the subscriber that copied sees it whole, a view kept past the call is empty', async () => {
  const dir = join(await tmp(), 'c7');
  const stdio = createStdio(log);
  const io = await stdio.open({ dir, procId: 'init', stdin: false, tty: false });
  const hub = stdio.hub(io);
  let kept: Buffer | null = null;
  let copy = '';
  // Says it copies but keeps the chunk anyway: what the hub's release does to such a subscriber.
  hub.subscribe((_s, c) => {
    copy = c.toString();
    kept = c;
  }, undefined, { copies: true });
  const out = writer(io.paths.stdout);
  closeSync(writer(io.paths.stderr!));
  writeSync(out, 'x'.repeat(8192));
  closeSync(out);
  await hub.ended;
  assert.equal(copy.length, 8192);
  assert.equal(kept!.length, 0, 'the read buffer was handed back at once');
  io.close();
  await stdio.remove(dir, 'init');
});

test('drainLeftovers reads the FIFOs of an earlier life’s execs: a writer blocked in open completes; they go, init’s stay', async () => {
  const root = await tmp();
  const dir = join(root, 'c1');
  const stdio = createStdio(log);
  const kept = await stdio.open({ dir, procId: 'init', stdin: false, tty: false });
  kept.close();
  const left = await stdio.open({ dir, procId: 'x1', stdin: true, tty: false });
  left.close();
  // Plays the shim of a half-started exec: a blocking open of the write end, then output.
  const { spawn } = await import('node:child_process');
  const sh = spawn('sh', ['-c', `echo out > ${join(dir, 'x1-stdout')}; echo err > ${join(dir, 'x1-stderr')}`]);
  const exited = new Promise<number | null>((r) => sh.once('exit', (c) => r(c)));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(sh.exitCode, null, 'the writer waits in open: nobody reads');
  assert.equal(stdio.drainLeftovers(root, 'init'), 1);
  assert.equal(await exited, 0);
  for (let i = 0; i < 50 && existsSync(join(dir, 'x1-stdout')); i++) await new Promise((r) => setTimeout(r, 20));
  for (const f of ['x1-stdout', 'x1-stderr', 'x1-stdin']) assert.ok(!existsSync(join(dir, f)), `${f} removed`);
  for (const f of ['init-stdout', 'init-stderr']) assert.ok(existsSync(join(dir, f)), `${f} kept`);
  assert.equal(stdio.drainLeftovers(join(root, 'none'), 'init'), 0, 'no directory: nothing');
});
