// A container's network namespace made before its task, as the reference daemon's sandbox is: an
// empty file under the exec root with a new namespace bind-mounted on it (`unshare --net=FILE`).
// The task joins it by path, so its interface, addresses and port rules are set up while the
// supervisor creates the task instead of after it. The namespace lives until it is unmounted.
import { existsSync } from 'node:fs';
import { mkdir, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { MNT_DETACH, umount } from '../sys/syscalls.ts';
import { run } from './run.ts';

export async function createNetns(path: string, signal?: AbortSignal): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  // A file left by a crash may still carry the namespace of an earlier run: let it go first.
  await umount(path, MNT_DETACH);
  await writeFile(path, '', { mode: 0o600 });
  await run('unshare', [`--net=${path}`, 'true'], { signal });
}

export async function removeNetns(path: string): Promise<void> {
  // A mount point cannot be unlinked: no file, no namespace (most runs never had one).
  if (!existsSync(path)) return;
  await umount(path, MNT_DETACH);
  await unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/** The container reconciler's NetnsPort. */
export const netns = { create: createNetns, remove: removeNetns };
