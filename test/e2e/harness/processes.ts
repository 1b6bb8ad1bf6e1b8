// What the harnesses that start processes (the daemon, etcd) share: their cleanup when the test
// process exits or is signalled before it ran, a signal by PID that tolerates a process already
// gone, and the tail of a log for an error message.
import { readFileSync } from 'node:fs';

/** A harness's handle whose processes and files must not outlive the test process. */
export interface CleansUpSync {
  cleanupSync(): void;
}

const live = new Set<CleansUpSync>();
let hooked = false;

/** `h.cleanupSync()` runs if the test process exits or gets SIGINT/SIGTERM while `h` is registered. */
export function cleanupAtExit(h: CleansUpSync): void {
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const x of live) x.cleanupSync();
    });
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.once(sig, () => {
        for (const x of live) x.cleanupSync();
        process.kill(process.pid, sig);
      });
    }
  }
  live.add(h);
}

/** `h` cleaned up on its own: no longer the exit hook's. */
export function cleanedUp(h: CleansUpSync): void {
  live.delete(h);
}

export function signalPid(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/** A process that exists and is not a zombie. */
export function pidAlive(pid: number): boolean {
  if (!(pid > 0)) return false;
  try {
    process.kill(pid, 0);
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

export function logTail(text: string, lines: number): string {
  return text.split('\n').slice(-lines).join('\n');
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * For a file that runs cluster parts in the test process itself: etcd3's election observer can
 * leave a watch on the leader key in the election's own watch manager after it was canceled, and
 * that manager's reconnect timer keeps the process alive for good once the client is closed (a
 * daemon exits explicitly; a test file waits for its event loop). Called at the end of the file's
 * last hook: the process ends within `ms` if something is left.
 */
export function exitWhenLingering(ms = 3000): void {
  setTimeout(() => process.exit(process.exitCode ?? 0), ms).unref();
}

/** Resident memory of a process in KiB (VmRSS); 0 when it is gone. */
export function rssKiB(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}
