// A swarm task's secrets and configs on the node that runs it (issue (9 of 21), 2 and 3), as the
// reference keeps them: a tmpfs of the task's own at <exec-root>/swarm/tasks/<task>/files (never on
// a disk, whatever the exec root is on) holding one file per secret or config, named by its id; each
// with the uid, gid and
// mode the service asked for, bound read-only into the container at its target (a secret's under
// /run/secrets unless absolute, a config's at /<name> unless given). The data comes from a manager
// (`fetch`), for this task only. collect() removes the files of tasks that have no container here
// any more (the tmpfs unmounted, detached: a container still holding it keeps its own view).
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { isAbsolute, join, posix } from 'node:path';
import type { Logger } from 'pino';
import { isMountPoint, mount, MNT_DETACH, MS_NODEV, MS_NOEXEC, MS_NOSUID, umount } from '../sys/syscalls.ts';

export type TaskObjectKind = 'secret' | 'config';

/** A service's reference to a secret or config (ContainerSpec.Secrets / Configs, as the reference stores it). */
export interface TaskObjectRef {
  kind: TaskObjectKind;
  id: string;
  name: string;
  file: { Name?: string; UID?: string; GID?: string; Mode?: number };
}

export type BindMount = {
  Type: 'bind';
  Source: string;
  Target: string;
  ReadOnly: true;
};

/** The references of a task's ContainerSpec. */
export function taskObjectRefs(containerSpec: Record<string, unknown>): TaskObjectRef[] {
  const out: TaskObjectRef[] = [];
  for (const s of (containerSpec['Secrets'] as Array<Record<string, unknown>> | undefined) ?? []) {
    out.push({ kind: 'secret', id: String(s['SecretID'] ?? ''), name: String(s['SecretName'] ?? ''), file: (s['File'] as TaskObjectRef['file'] | undefined) ?? {} });
  }
  for (const c of (containerSpec['Configs'] as Array<Record<string, unknown>> | undefined) ?? []) {
    if (!c['File']) continue; // a Runtime config (a credential spec) is Windows'
    out.push({ kind: 'config', id: String(c['ConfigID'] ?? ''), name: String(c['ConfigName'] ?? ''), file: c['File'] as TaskObjectRef['file'] });
  }
  return out.filter((r) => r.id);
}

/** Where the container sees it: a secret under /run/secrets unless its target is absolute; a config at /<name> by default. */
export function targetOf(r: TaskObjectRef): string {
  const name = r.file.Name || r.name;
  if (isAbsolute(name)) return posix.normalize(name);
  return r.kind === 'secret' ? posix.join('/run/secrets', name) : posix.join('/', name);
}

export interface TaskFilesOptions {
  dir: string;
  fetch: (taskId: string, kind: TaskObjectKind, id: string) => Promise<Buffer>;
  log: Logger;
}

export class TaskFiles {
  private readonly o: TaskFilesOptions;
  /** Task → the binds its files were written for (written once per task). */
  private readonly written = new Map<string, BindMount[]>();

  constructor(o: TaskFilesOptions) {
    this.o = o;
  }

  private taskDir(taskId: string): string {
    return join(this.o.dir, taskId);
  }

  /** The task's files written (its secrets on its own tmpfs) and the binds that show them; none: []. */
  async prepare(taskId: string, refs: readonly TaskObjectRef[]): Promise<BindMount[]> {
    if (!refs.length) return [];
    const done = this.written.get(taskId);
    if (done) return done;
    const files = join(this.taskDir(taskId), 'files');
    await mkdir(files, { recursive: true, mode: 0o700 });
    if (!(await isMountPoint(files))) mount('tmpfs', files, 'tmpfs', MS_NOSUID | MS_NODEV | MS_NOEXEC, 'mode=0700,size=16m');
    const mounts: BindMount[] = [];
    const seen = new Map<string, number>();
    for (const r of refs) {
      // One file per reference, named by the id (the same one at two targets: a file each, each with its own owner and mode).
      const n = seen.get(r.id) ?? 0;
      seen.set(r.id, n + 1);
      const file = join(files, n ? `${r.id}.${n}` : r.id);
      await writeFile(file, await this.o.fetch(taskId, r.kind, r.id), { mode: 0o600 });
      await chown(file, Number(r.file.UID || 0), Number(r.file.GID || 0));
      await chmod(file, r.file.Mode ?? 0o444);
      mounts.push({ Type: 'bind', Source: file, Target: targetOf(r), ReadOnly: true });
    }
    this.written.set(taskId, mounts);
    return mounts;
  }

  /** The files of the tasks not in `keep`: their tmpfs unmounted, their directory removed. */
  async collect(keep: ReadonlySet<string>): Promise<void> {
    if (!existsSync(this.o.dir)) return;
    for (const id of await readdir(this.o.dir)) {
      if (keep.has(id)) continue;
      await this.remove(id).catch((err: unknown) => this.o.log.warn({ task: id, err: err instanceof Error ? err.message : String(err) }, 'a task\'s secret files could not be removed'));
    }
  }

  async remove(taskId: string): Promise<void> {
    this.written.delete(taskId);
    const files = join(this.taskDir(taskId), 'files');
    if (existsSync(files) && (await isMountPoint(files).catch(() => false))) await umount(files, MNT_DETACH);
    await rm(this.taskDir(taskId), { recursive: true, force: true });
  }
}
