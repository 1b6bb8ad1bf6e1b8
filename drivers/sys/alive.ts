// Whether a process lives: alive and not a zombie (a zombie keeps /proc/<pid>).
import { readFile } from 'node:fs/promises';

export async function isAlive(pid: number): Promise<boolean> {
  if (!pid || pid <= 0) return false;
  try {
    const s = await readFile(`/proc/${pid}/stat`, 'utf8');
    const state = s.slice(s.lastIndexOf(')') + 2, s.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
