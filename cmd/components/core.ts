// The daemon's foundations: its directories, the store, the layer store, the supervisor (started
// here unless one is given) and what builds a container's process (runtimes, stdio, logging, spec).
import { chmodSync, chownSync, mkdirSync, statSync } from 'node:fs';
import { invalidArgument } from '../../lib/errors.ts';
import { rootPair } from '../../lib/idmap.ts';
import { resolveRemap } from '../../drivers/sys/remap-user.ts';
import { CdiRegistry, DEFAULT_CDI_SPEC_DIRS } from '../../drivers/cdi/registry.ts';
import { rootlessNoCgroups } from '../system-info.ts';
import { dirname, join } from 'node:path';
import { component } from './registry.ts';
import type { DaemonEnv } from './env.ts';
import type { DaemonConfig } from '../../config/load.ts';
import { createLogging, LogThread } from '../../drivers/logging/index.ts';
import { createSpecBuilder } from '../../drivers/oci/index.ts';
import { memoryReducingCollection, startMemoryReclaimer } from '../../drivers/sys/memory-reclaim.ts';
import { mallocTrim } from '../../drivers/sys/syscalls.ts';
import { createLayerStore } from '../../drivers/storage/layer-store.ts';
import { createStdio } from '../../drivers/stdio/stdio.ts';
import { createSupervisorClient } from '../../drivers/supervisor/client.ts';
import { startSupervisor } from '../../drivers/supervisor/process.ts';
import type { Runtimes } from '../../drivers/supervisor/runtimes.ts';
import { createRuntimeRegistry } from '../../reconcilers/runtime/registry.ts';
import { findNetworkByName } from '../../store/kinds/network.ts';
import { driverScope, STORE_KINDS } from '../../store/kinds/index.ts';
import { openStore } from '../../store/store.ts';
import { findInit, seccompProfile } from '../daemon-helpers.ts';
import { driverOptions } from '../../drivers/storage/storage-opt.ts';
import { chooseDriver } from '../../drivers/storage/select.ts';
import { blobPort, snapshotPort } from './supervisor-storage.ts';

/** Where the supervisor listens, and in which namespace our containers live. */
export interface SupervisorAddress {
  readonly address: string;
  readonly namespace: string;
  /** The supervisor's state directory (tasks' shim addresses), for one the daemon started. */
  readonly stateDir?: string;
}

/** The runtime table behind a stable object, since a reload may replace the table. */
export interface SwappableRuntimes extends Runtimes {
  /** A table for `c` (throws on an invalid one), to `swap` in once the whole reload is accepted. */
  build(c: DaemonConfig): Runtimes;
  swap(next: Runtimes): void;
}

/**
 * A remapped root must pass every directory above the data root to reach its containers' files:
 * the reference refuses the start, with these words, rather than fail each container's start.
 */
function checkRemappedRootReach(dataRoot: string, root: { uid: number; gid: number }): void {
  for (let dir = dirname(dataRoot); dir !== '/'; dir = dirname(dir)) {
    const st = statSync(dir);
    const x = (st.mode & 0o001) || (st.gid === root.gid && st.mode & 0o010) || (st.uid === root.uid && st.mode & 0o100);
    if (!x) throw invalidArgument(`a subdirectory in your graphroot path (${dataRoot}) restricts access to the remapped root uid/gid; please fix by allowing 'o+x' permissions on existing directories`);
  }
}

/** Room kept for the store on the data root's file system (store/reserve.ts). */
const STORE_RESERVE_BYTES = 4 * 1024 * 1024;

export function coreComponents({ cfg, log, sources }: DaemonEnv) {
  return [
    component({
      id: 'userns',
      requires: [],
      init: async () => {
        if (!cfg.usernsRemap) return {};
        const map = await resolveRemap(cfg.usernsRemap);
        // Root remapped onto itself is no remapping (the reference warns and runs without).
        if (map.uids.length === 0) {
          log.warn('User namespaces: root cannot be remapped with itself; user namespaces are OFF');
          return {};
        }
        log.info({ uids: map.uids, gids: map.gids }, 'user namespace remapping on');
        return { map };
      },
    }),
    component({
      id: 'cdi',
      requires: [],
      // features.cdi (off by default, as the reference): specs read now and whenever a file changes.
      init: async () => {
        if (!cfg.features?.cdi) return {};
        const registry = new CdiRegistry(cfg.cdiSpecDirs?.length ? cfg.cdiSpecDirs : DEFAULT_CDI_SPEC_DIRS, log.child({ component: 'cdi' }));
        await registry.refresh();
        await registry.watch();
        for (const e of registry.errors()) log.warn({ path: e.path, err: e.message }, 'CDI spec refused');
        return { registry };
      },
      close: (c) => c.registry?.close(),
    }),
    component({
      id: 'paths',
      requires: ['userns'],
      init: (ctx) => {
        const map = ctx.get('userns').map;
        // --userns-remap: the reference's per-remap tree, <data-root>/<uid>.<gid>, root's and its group's.
        const root = map ? rootPair(map) : undefined;
        const dataRoot = root ? join(cfg.dataRoot, `${root.uid}.${root.gid}`) : cfg.dataRoot;
        const paths = { dataRoot, execRoot: cfg.execRoot, tmpDir: process.env.ENGINE_TMPDIR || join(dataRoot, 'tmp') };
        for (const d of [paths.dataRoot, paths.execRoot, paths.tmpDir]) mkdirSync(d, { recursive: true, mode: 0o711 });
        if (root) {
          chownSync(dataRoot, 0, root.gid);
          chmodSync(dataRoot, 0o710);
          checkRemappedRootReach(dataRoot, root);
        }
        return paths;
      },
    }),
    component({
      id: 'storage-driver',
      requires: ['paths'],
      init: (ctx) => {
        // The supervisor's snapshotter (overlayfs) instead of a graph driver of our own.
        if (cfg.features?.['supervisor-snapshotter']) return 'overlayfs' as const;
        const driver = chooseDriver(cfg.storageDriver, ctx.get('paths').dataRoot, log);
        if (driver !== 'overlay2' && driver !== 'vfs' && driver !== 'btrfs' && driver !== 'fuse-overlayfs') {
          throw new Error(`error initializing graphdriver: driver not supported: ${cfg.storageDriver}`);
        }
        return driver;
      },
    }),
    component({
      id: 'store',
      requires: ['paths', 'storage-driver'],
      // Images and containers are the driver's: another driver's are parked, not shown (store/scope.ts).
      init: (ctx) =>
        openStore(join(ctx.get('paths').dataRoot, 'engine.db'), {
          log: log.child({ component: 'store' }),
          kinds: STORE_KINDS,
          reserveBytes: STORE_RESERVE_BYTES,
          scope: driverScope(ctx.get('storage-driver')),
        }),
      close: (store) => store.close(),
    }),
    component({
      id: 'layers',
      requires: cfg.features?.['supervisor-snapshotter'] ? ['paths', 'userns', 'storage-driver', 'supervisor-client'] : ['paths', 'userns', 'storage-driver'],
      init: (ctx) => {
        const { dataRoot, tmpDir } = ctx.get('paths');
        const driver = ctx.get('storage-driver');
        const idMap = ctx.get('userns').map;
        if (idMap && driver !== 'overlay2') throw invalidArgument(`not supported by this daemon yet: --userns-remap with the ${driver} storage driver`);
        return createLayerStore({
          dataRoot,
          driver,
          snapshots: driver === 'overlayfs' ? snapshotPort(ctx.get('supervisor-client').storage().snapshots) : undefined,
          blobs: driver === 'overlayfs' ? blobPort(ctx.get('supervisor-client').storage()) : undefined,
          options: driverOptions(driver, cfg.storageOpts ?? []),
          tmpDir,
          usePigz: !process.env.ENGINE_DISABLE_PIGZ,
          log: log.child({ component: 'layers' }),
          ...(idMap ? { idMap } : {}),
        });
      },
      // Live restore: the root filesystems of the containers left running stay mounted for the next daemon.
      close: (layers) => (cfg.liveRestore ? undefined : layers.cleanup()),
    }),
    component({
      id: 'supervisor',
      requires: ['paths'],
      init: async (ctx) => {
        const namespace = cfg.supervisorNamespace || 'engine';
        if (cfg.supervisor) return { address: cfg.supervisor, namespace };
        const { dataRoot, execRoot } = ctx.get('paths');
        const stateDir = join(execRoot, 'containerd', 'state');
        const p = await startSupervisor({
          root: join(dataRoot, 'containerd'),
          state: stateDir,
          configDir: join(execRoot, 'containerd'),
          log: log.child({ component: 'supervisor' }),
          debug: cfg.debug,
          storage: !!cfg.features?.['supervisor-snapshotter'],
        });
        return { address: p.address, namespace, stateDir, stop: () => p.stop() };
      },
      // Live restore: the supervisor (its own process group) and the shims run on; the next daemon adopts it.
      close: (s) => (cfg.liveRestore ? undefined : s.stop?.()),
    }),
    component({
      id: 'supervisor-client',
      requires: ['supervisor'],
      init: (ctx) => createSupervisorClient({ ...ctx.get('supervisor'), log: log.child({ component: 'supervisor-client' }), ...(rootlessNoCgroups(cfg) ? { noCgroups: true } : {}) }),
      close: (client) => client.close(),
    }),
    component({
      id: 'runtimes',
      requires: ['paths', 'store'],
      init: (ctx) => {
        const { dataRoot, execRoot } = ctx.get('paths');
        // Backed by the runtime records (reconcilers/runtime): the first swap writes them.
        const registry = createRuntimeRegistry(ctx.get('store'), {
          execRoot,
          wrapperDir: join(dataRoot, 'runtimes'),
          source: sources.runtimes === 'flag' ? 'flag' : 'file',
          noPivotRoot: cfg.noPivotRoot,
        });
        registry.swap(registry.build(cfg));
        return registry;
      },
    }),
    component({
      id: 'memory',
      requires: [],
      init: () => {
        if (process.env.ENGINE_MEMORY_RECLAIM === '0') return { tick: () => {}, stop: () => {} };
        const mlog = log.child({ component: 'memory' });
        const mib = (b: number) => Math.round(b / 1048576);
        return startMemoryReclaimer({
          collect: memoryReducingCollection(),
          trim: mallocTrim,
          onReclaim: (before, after, ms) => mlog.debug(`reclaimed: rss ${mib(before)} -> ${mib(after)} MiB in ${ms.toFixed(1)} ms`),
        });
      },
      close: (r) => r.stop(),
    }),
    component({ id: 'stdio', requires: [], init: () => createStdio(log.child({ component: 'stdio' })) }),
    component({
      id: 'logging',
      requires: [],
      init: () => {
        const l = log.child({ component: 'logging' });
        return createLogging({ log: l, thread: new LogThread(l) });
      },
    }),
    component({
      id: 'spec',
      requires: ['store', 'userns', 'cdi'],
      init: (ctx) => {
        const store = ctx.get('store');
        const idMap = ctx.get('userns').map;
        const cdi = ctx.get('cdi').registry;
        return createSpecBuilder({
          log: log.child({ component: 'oci' }),
          ...(cdi ? { cdi } : {}),
          ...(idMap ? { idMap } : {}),
          // Rootless on cgroup v1: no cgroups of the daemon's (the reference's rootless mode).
          ...(rootlessNoCgroups(cfg) ? { noCgroups: true } : {}),
          defaultShmSize: cfg.defaultShmSize,
          dns: { servers: cfg.dns ?? [], search: cfg.dnsSearch ?? [], options: cfg.dnsOpts ?? [] },
          init: cfg.init,
          initPath: cfg.initPath || findInit(),
          seccomp: seccompProfile(cfg.seccompProfile),
          noNewPrivileges: cfg.noNewPrivileges,
          defaultUlimits: Object.values(cfg.defaultUlimits ?? {}),
          hostGatewayIp: () => cfg.hostGatewayIp || findNetworkByName(store, 'bridge')?.spec.ipam.Config[0]?.Gateway || '',
        });
      },
    }),
  ];
}
