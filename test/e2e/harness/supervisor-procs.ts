// The processes of a test daemon's supervisor: its containerd child and the shims serving that
// containerd's socket (never another daemon's), and a kill -9 of the supervisor that waits for the
// daemon to start the next one.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DaemonHandle } from './daemon.ts';
import { pidAlive, sleep } from './processes.ts';

function ppidOf(pid: number | string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return -1;
  }
}

function comm(pid: number | string): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** The `containerd` child of this test's daemon (never another daemon's), 0 when there is none. */
export function supervisorPid(d: DaemonHandle): number {
  if (!d.pid) return 0;
  for (const p of readdirSync('/proc')) {
    if (/^\d+$/.test(p) && ppidOf(p) === d.pid && comm(p) === 'containerd' && pidAlive(Number(p))) return Number(p);
  }
  return 0;
}

/** Shim processes serving this daemon's supervisor socket; with `id`, only the one serving that container. */
export function shimsOf(d: DaemonHandle, id?: string): number[] {
  const address = join(d.execRoot, 'containerd', 'containerd.sock');
  const out: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p) || !comm(p).startsWith('containerd-shim')) continue;
    try {
      const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      if (argv[argv.indexOf('-address') + 1] !== address) continue;
      if (id === undefined || argv[argv.indexOf('-id') + 1] === id) out.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** kill -9 the supervisor; resolves to its old PID once the daemon has started a new one. */
export async function killSupervisor(d: DaemonHandle, during?: () => void): Promise<{ old: number; next: number }> {
  const old = supervisorPid(d);
  assert.ok(old > 0, 'the daemon has a containerd child');
  process.kill(old, 'SIGKILL');
  let next = 0;
  for (const until = Date.now() + 20_000; Date.now() < until; await sleep(100)) {
    during?.();
    next = supervisorPid(d);
    if (next && next !== old) break;
  }
  assert.ok(next && next !== old, `the daemon restarted the supervisor (old ${old}, now ${next})`);
  return { old, next };
}
