// Fills the API's ContainerOpsPort (top, stats, changes, export, docker cp) from the drivers.
// docker cp works on the container's file tree as its process sees it: the rootfs with its
// volumes, binds and the daemon's /etc files over it (lib/container-path.ts), running or not.
import type { Readable } from 'node:stream';
import type { ContainerOpsPort } from '../api/ports.ts';
import { type ContainerTree, mountTable } from '../lib/container-path.ts';
import { conflict } from '../lib/errors.ts';
import type { IdMap } from '../lib/idmap.ts';
import { sampleStats, topProcesses } from '../drivers/sys/cgroup-stats.ts';
import { archiveFromRoot, containerTree, extractToRoot, statInRoot } from '../drivers/sys/rootfs-files.ts';
import { withoutMountPointChanges } from '../drivers/storage/mount-points.ts';
import { volumeSubpath } from '../drivers/volume/subpath.ts';
import type { ContainerSpec, ContainerStatus } from '../store/kinds/container.ts';

interface Deps {
  cgroupParent: string;
  runInfo(id: string): { pid: number } | undefined;
  pids(id: string): Promise<number[]>;
  layers: {
    mountRW(id: string): Promise<string>;
    unmountRW(id: string): Promise<void>;
    changesRW(id: string): Promise<Array<{ Path: string; Kind: 0 | 1 | 2 }>>;
  };
  /** The container's record: its mounts, its /etc files, ReadonlyRootfs. Absent: the bare rootfs. */
  container?(id: string): { spec: ContainerSpec; status: Pick<ContainerStatus, 'hostnamePath' | 'hostsPath' | 'resolvConfPath'> } | undefined;
  /** A volume's data directory (made when missing). */
  volumeDir?(name: string): Promise<string>;
  /** --userns-remap: files are the host ids of the containers' ids. */
  idMap?: IdMap;
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

  /** The container's file tree over its mounted root (docker cp). */
  async function treeOf(id: string, rootfs: string): Promise<ContainerTree> {
    const c = deps.container?.(id);
    const remap = deps.idMap ? { idMap: deps.idMap } : {};
    if (!c) return { rootfs, mounts: [], readonlyRootfs: false, ...remap };
    const volumes = [];
    for (const m of c.spec.mountPoints ?? []) {
      let source = m.source;
      if (m.type === 'volume') {
        if (!deps.volumeDir) continue;
        const dir = await deps.volumeDir(m.name);
        source = m.subpath ? await volumeSubpath(dir, m.subpath, m.name).catch(() => '') : dir;
        if (!source) continue; // missing, or led out of the volume: the start refuses it too
      }
      volumes.push({ type: m.type, source, destination: m.destination, readOnly: m.readOnly });
    }
    const mounts = mountTable({
      hostConfig: c.spec.hostConfig,
      volumes,
      etc: { hostname: c.status.hostnamePath, hosts: c.status.hostsPath, resolvConf: c.status.resolvConfPath },
    });
    return { ...(await containerTree(rootfs, mounts, c.spec.hostConfig.ReadonlyRootfs === true)), ...remap };
  }

  function withTree<T>(id: string, fn: (tree: ContainerTree) => Promise<T>): Promise<T> {
    return withRoot(id, async (root) => fn(await treeOf(id, root)));
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
    statPath: (id, path) => withTree(id, (tree) => statInRoot(tree, path)),
    async getArchive(id, path, signal) {
      let stat!: Awaited<ReturnType<typeof statInRoot>>;
      const stream = await streamWithRoot(id, async (root) => {
        const r = await archiveFromRoot(await treeOf(id, root), path, signal);
        stat = r.stat;
        return r;
      });
      return { stat, stream };
    },
    putArchive: (id, path, body, opts, signal) => withTree(id, (tree) => extractToRoot(tree, path, body, opts, signal)),
  };
}
