// The cluster fencer (cmd/fencer.ts) as a process: told a deadline and the processes it guards,
// it SIGKILLs them at the deadline (not before) unless a newer order moved it, whether the
// daemon's connection is still open (a frozen daemon) or closed (a dead one); it leaves alone a
// PID whose start time no longer matches, and exits once no daemon is connected and nothing is
// left to guard. Real processes (`sleep`), no daemon.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type FenceOrder, monotonicNs, procStartTime } from '../../../lib/cluster/fencer-protocol.ts';

const FENCER = fileURLToPath(new URL('../../../cmd/fencer.ts', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), 'fencer-test-'));
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function sleeper(): ChildProcess {
  const c = spawn('sleep', ['60'], { stdio: 'ignore' });
  children.push(c);
  return c;
}

async function startFencer(sock: string): Promise<{ proc: ChildProcess; exited: Promise<number | null> }> {
  const proc = spawn(process.execPath, [FENCER, sock], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(proc);
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  for (let i = 0; i < 100 && !existsSync(sock); i++) await sleep(50);
  return { proc, exited };
}

async function order(sock: string, o: FenceOrder): Promise<Socket> {
  const s = connect(sock);
  await new Promise<void>((r, j) => s.once('connect', r).once('error', j));
  s.write(`${JSON.stringify(o)}\n`);
  await sleep(100);
  return s;
}

const inMs = (ms: number) => String(monotonicNs() + BigInt(ms) * 1_000_000n);
const alive = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

test('a newer order moves the deadline; killed at the last one even while connected; closed: killed at the deadline, then the fencer exits', async () => {
  const sock = join(dir, 'a.sock');
  const { exited } = await startFencer(sock);
  const a = sleeper();
  const b = sleeper();
  await sleep(100);
  // The first deadline leaves the fencer seconds to read the newer order, however busy the machine.
  const conn = await order(sock, { deadline: inMs(3000), pids: [[a.pid!, procStartTime(a.pid!)]] });
  // Renewed: the deadline moves on, and b joins.
  conn.write(`${JSON.stringify({ deadline: inMs(6000), pids: [[a.pid!, procStartTime(a.pid!)], [b.pid!, procStartTime(b.pid!)]] })}\n`);
  await sleep(3500);
  assert.ok(alive(a) && alive(b), 'not at a deadline a newer order moved');
  // Each child's exit is seen here by its own event: wait for both.
  for (let i = 0; i < 100 && (alive(a) || alive(b)); i++) await sleep(100);
  assert.ok(!alive(a) && !alive(b), 'killed at the last deadline though still connected (a frozen daemon)');
  assert.equal(a.signalCode, 'SIGKILL');

  // A dead daemon: its connection closes; what it last sent is killed at that deadline.
  const c = sleeper();
  await sleep(100);
  conn.write(`${JSON.stringify({ deadline: inMs(2500), pids: [[c.pid!, procStartTime(c.pid!)]] })}\n`);
  await sleep(100);
  conn.end();
  await sleep(300);
  assert.ok(alive(c), 'not before the deadline');
  assert.equal(await exited, 0, 'the fencer exits once it has nothing left to guard');
  assert.ok(!alive(c), 'killed at the deadline after the connection closed');
});

test('a PID whose start time does not match is left alone; an empty order lets the fencer exit at once', async () => {
  const sock = join(dir, 'b.sock');
  const { exited } = await startFencer(sock);
  const c = sleeper();
  await sleep(100);
  const conn = await order(sock, { deadline: inMs(0), pids: [[c.pid!, '1']] });
  conn.end();
  assert.equal(await exited, 0);
  assert.ok(alive(c), 'another process under a reused PID is not killed');

  const sock2 = join(dir, 'c.sock');
  const f2 = await startFencer(sock2);
  (await order(sock2, { deadline: inMs(60_000), pids: [] })).end();
  assert.equal(await f2.exited, 0);
});
