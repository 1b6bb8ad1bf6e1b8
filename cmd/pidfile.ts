// The pidfile refuses a second daemon on the same roots.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { failedPrecondition } from '../lib/errors.ts';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/\) Z /.test(stat);
  } catch {
    return false;
  }
}

export function acquirePidfile(path: string): () => void {
  let existing = '';
  try {
    existing = readFileSync(path, 'utf8').trim();
  } catch {
    // none
  }
  const pid = Number(existing);
  if (pid && pid !== process.pid && alive(pid)) {
    throw failedPrecondition(`pid file found, ensure engined is not running or delete ${path}`);
  }
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${process.pid}`);
  return () => {
    try {
      if (readFileSync(path, 'utf8').trim() === String(process.pid)) rmSync(path, { force: true });
    } catch {
      // already gone
    }
  };
}
