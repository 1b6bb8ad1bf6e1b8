// A container's own /dev/shm kept on the host (IPC mode shareable), so the containers that join
// its IPC namespace can bind the same tmpfs: a bind mount cannot reach into another mount
// namespace, so the donor's /dev/shm must be a host mount both sides bind.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { isMountPoint, mount, MNT_DETACH, MS_NODEV, MS_NOEXEC, MS_NOSUID, umount } from './syscalls.ts';

/** The tmpfs at `path` (made once; kept while it is mounted). */
export async function ensureShm(path: string, sizeBytes: number): Promise<void> {
  await mkdir(path, { recursive: true, mode: 0o700 });
  if (await isMountPoint(path)) return;
  mount('shm', path, 'tmpfs', MS_NOSUID | MS_NODEV | MS_NOEXEC, `mode=1777,size=${sizeBytes}`);
}

/** Unmount it (detached: a joiner still running keeps its own bind of it); absent is fine. */
export async function releaseShm(path: string): Promise<void> {
  // Most containers never had one: a stat spares reading the mount table.
  if (!existsSync(path) || !(await isMountPoint(path).catch(() => false))) return;
  await umount(path, MNT_DETACH);
}
