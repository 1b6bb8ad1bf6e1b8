// What the harnesses that start processes (the daemon, etcd) share: their cleanup when the test
// process exits or is signalled before it ran, a signal by PID that tolerates a process already
// gone, and the tail of a log for an error message.

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

export function logTail(text: string, lines: number): string {
  return text.split('\n').slice(-lines).join('\n');
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
