// Fills the API's ContainerOpsPort (top, stats, changes, export, docker cp) from the drivers.
import type { Readable } from 'node:stream';
import type { ContainerOpsPort } from '../api/ports.ts';
import { conflict } from '../lib/errors.ts';
import { sampleStats, topProcesses } from '../drivers/sys/cgroup-stats.ts';
import { archiveFromRoot, extractToRoot, statInRoot } from '../drivers/sys/rootfs-files.ts';
import { withoutMountPointChanges } from '../drivers/storage/mount-points.ts';

interface Deps {
  cgroupParent: string;
  runInfo(id: string): { pid: number } | undefined;
  pids(id: string): Promise<number[]>;
  layers: {
    mountRW(id: string): Promise<string>;
    unmountRW(id: string): Promise<void>;
    changesRW(id: string): Promise<Array<{ Path: string; Kind: 0 | 1 | 2 }>>;
  };
}

export function createContainerOps(deps: Deps): ContainerOpsPort {
  /** Run `fn` with the container's root mounted (a mount of a running container is shared). */
  async function withRoot<T>(id: string, fn: (root: string) => Promise<T>): Promise<T> {
    const root = await deps.layers.mountRW(id);
    try {
      return await fn(root);
    } finally {
      await deps.layers.unmountRW(id).catch(() => {});
    }
  }

  /** Keep the root mounted until the stream ends. */
  async function streamWithRoot(id: string, fn: (root: string) => Promise<{ stream: Readable }>): Promise<Readable> {
    const root = await deps.layers.mountRW(id);
    try {
      const { stream } = await fn(root);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        deps.layers.unmountRW(id).catch(() => {});
      };
      stream.once('close', release);
      stream.once('end', release);
      stream.once('error', release);
      return stream;
    } catch (err) {
      await deps.layers.unmountRW(id).catch(() => {});
      throw err;
    }
  }

  return {
    async top(id, psArgs) {
      if (!deps.runInfo(id)) throw conflict(`Container ${id} is not running`);
      return topProcesses(await deps.pids(id), psArgs);
    },
    async stats(id) {
      const run = deps.runInfo(id);
      return sampleStats({ cgroupPath: `${deps.cgroupParent}/${id}`, pid: run?.pid ?? 0 });
    },
    changes: async (id) => withoutMountPointChanges(await deps.layers.changesRW(id)),
    exportRootfs: (id, signal) => streamWithRoot(id, (root) => archiveFromRoot(root, '/', signal)),
    statPath: (id, path) => withRoot(id, (root) => statInRoot(root, path)),
    async getArchive(id, path, signal) {
      let stat!: Awaited<ReturnType<typeof statInRoot>>;
      const stream = await streamWithRoot(id, async (root) => {
        const r = await archiveFromRoot(root, path, signal);
        stat = r.stat;
        return r;
      });
      return { stat, stream };
    },
    putArchive: (id, path, body, opts, signal) => withRoot(id, (root) => extractToRoot(root, path, body, opts, signal)),
  };
}
