// A detached shell that runs a cleanup command if the test process dies without doing it
// (killed by a runner's timeout, SIGKILL): registries it started, an address it added.
import { spawn } from 'node:child_process';

export interface Watchdog {
  /** The cleanup happened in-process: stop watching. */
  cancel(): void;
}

/** `cleanup` is a shell command; quote what goes into it with shellQuote(). */
export function watchdog(cleanup: string): Watchdog {
  const script = `trap '' INT TERM HUP; while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${cleanup}`;
  const child = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore' });
  child.unref();
  return {
    cancel() {
      try {
        if (child.pid) process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    },
  };
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
