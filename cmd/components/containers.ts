// Containers and the controllers: volumes, runs and execs, the container reconciler, every
// controller under one manager, the supervisor's exit events, the record migrations, and the
// component that sets the controllers running (and, at shutdown, stops them and the containers).
import { SHIM_GROUP_ANNOTATION, shimGroupOf, shimGroupsFromEnv } from '../../drivers/supervisor/shim-groups.ts';
import { join } from 'node:path';
import { rootPair } from '../../lib/idmap.ts';
import { component } from './registry.ts';
import type { DaemonEnv } from './env.ts';
import type { Controller } from '../../controllers/controller.ts';
import { Manager } from '../../controllers/manager.ts';
import { resolveUser } from '../../drivers/oci/index.ts';
import { subscribeEvents } from '../../drivers/supervisor/events.ts';
import { ensureShm, releaseShm } from '../../drivers/sys/shm.ts';
import { netns } from '../../drivers/network/netns.ts';
import { LocalVolumeDriver } from '../../drivers/volume/local.ts';
import { execController } from '../../reconcilers/exec/controller.ts';
import { execPort, type ExecService } from '../../reconcilers/exec/port.ts';
import { ExecProcesses } from '../../reconcilers/exec/processes.ts';
import { ExecReconciler } from '../../reconcilers/exec/reconciler.ts';
import { Execs as ExecRecords } from '../../store/kinds/exec.ts';
import { execProbes } from '../../reconcilers/container/probe.ts';
import { ContainerReconciler } from '../../reconcilers/container/reconciler.ts';
import { RunRegistry } from '../../reconcilers/container/runs.ts';
import { migrateEndpoints } from '../../reconcilers/endpoint/migrate.ts';
import { EndpointReconciler } from '../../reconcilers/endpoint/reconciler.ts';
import { endpointController } from '../../reconcilers/endpoint/controller.ts';
import { containerController } from '../../reconcilers/container/controller.ts';
import { imageController } from '../../reconcilers/image/controller.ts';
import { networkController } from '../../reconcilers/network/controller.ts';
import { volumeController } from '../../reconcilers/volume/controller.ts';
import { runtimeController } from '../../reconcilers/runtime/controller.ts';
import { RuntimeReconciler } from '../../reconcilers/runtime/reconciler.ts';
import { ImageReconciler } from '../../reconcilers/image/reconciler.ts';
import { LinkFirewall } from '../../reconcilers/network/link-rules.ts';
import { NetworkReconciler } from '../../reconcilers/network/reconciler.ts';
import { VolumeMounter } from '../../reconcilers/volume/mounter.ts';
import { VolumeReconciler } from '../../reconcilers/volume/reconciler.ts';




import { recheckMsFromEnv } from '../daemon-helpers.ts';

export interface Volumes {
  readonly driver: LocalVolumeDriver;
  readonly mounter: VolumeMounter;
}

export interface Execs {
  /** What the API and the probes use. */
  readonly port: ExecService;
  readonly reconciler: ExecReconciler;
  readonly processes: ExecProcesses;
}

export interface Runs {
  readonly registry: RunRegistry;
  /** Set once the supervisor's events are subscribed; until they are live, runs poll for exits. */
  exitEvents: { readonly live: boolean } | null;
}

export interface Controllers {
  readonly manager: Manager;
  readonly images: ImageReconciler;
  /** The container controller: others wait for its first pass (synced) before reading container status. */
  readonly containers: Controller;
}

export function containerComponents({ cfg, log }: DaemonEnv) {
  return [
    component({
      id: 'volumes',
      requires: ['store', 'paths', 'userns'],
      init: (ctx) => {
        const idMap = ctx.get('userns').map;
        const driver = new LocalVolumeDriver({ root: join(ctx.get('paths').dataRoot, 'volumes'), ...(idMap ? { owner: rootPair(idMap) } : {}) });
        return { driver, mounter: new VolumeMounter(ctx.get('store'), driver) };
      },
    }),
    component({
      id: 'runs',
      requires: ['supervisor-client'],
      init: (ctx) => {
        const runs: Runs = {
          registry: new RunRegistry({ supervisor: ctx.get('supervisor-client'), exitEventsLive: () => runs.exitEvents?.live ?? false }),
          exitEvents: null,
        };
        return runs;
      },
    }),
    component({
      id: 'execs',
      requires: ['store', 'supervisor-client', 'stdio', 'runs', 'paths'],
      init: (ctx) => {
        const store = ctx.get('store');
        // Not durable, as the reference's: the execs of an earlier daemon are gone before the API serves.
        const stale = store.list(ExecRecords);
        if (stale.length) store.transaction((tx) => stale.forEach((e) => tx.delete(ExecRecords, e.name)));
        // Their FIFOs too, drained first: a shim whose exec start the last daemon left half done
        // answers nothing about the container until they are read (drivers/stdio, drainLeftovers).
        const stdio = ctx.get('stdio');
        const drained = stdio.drainLeftovers(join(ctx.get('paths').execRoot, 'supervisor'), 'init');
        if (drained) log.info({ execs: drained }, 'drained the FIFOs of execs an earlier daemon left');
        const supervisor = ctx.get('supervisor-client');
        const host = ctx.get('runs').registry;
        const processes = new ExecProcesses();
        const reconciler = new ExecReconciler(store, {
          supervisor,
          stdio,
          host,
          processes,
          execRoot: ctx.get('paths').execRoot,
          log: log.child({ component: 'exec' }),
          resolveUser: (rootfs, user) => resolveUser(rootfs, user),
        });
        return { port: execPort({ store, processes, host, supervisor }), reconciler, processes };
      },
    }),
    component({
      id: 'containers',
      requires: ['store', 'paths', 'userns', 'network-attacher', 'execs', 'volumes', 'ports', 'bridge', 'supervisor-client', 'stdio', 'logging', 'layers', 'spec', 'runtimes', 'runs', 'metrics'],
      init: (ctx) => {
        const store = ctx.get('store');
        const supervisor = ctx.get('supervisor-client');
        const { dataRoot, execRoot } = ctx.get('paths');
        const idMap = ctx.get('userns').map;
        // An external supervisor (--supervisor): no state dir to keep a group's shim from the reaping.
        const shimGroups = cfg.supervisor ? 0 : shimGroupsFromEnv();
        if (shimGroups) log.info({ groups: shimGroups }, 'grouped shims: runc v2 containers share a shim per group');
        return new ContainerReconciler(store, {
          ...(shimGroups ? { shimGroup: (id: string, runtime: string) => {
            const group = shimGroupOf(shimGroups, id, runtime);
            return group ? { annotation: SHIM_GROUP_ANNOTATION, group } : undefined;
          } } : {}),
          // Read at each use: live-restore is reloadable.
          liveRestore: () => !!cfg.liveRestore,
          network: ctx.get('network-attacher'),
          shm: { ensure: ensureShm, release: releaseShm },
          netns,
          probes: execProbes(ctx.get('execs').port, supervisor, ctx.get('metrics').engine?.healthCheck),
          volumes: ctx.get('volumes').mounter,
          ports: ctx.get('ports'),
          links: new LinkFirewall(store, ctx.get('bridge'), log.child({ component: 'links' })),
          supervisor,
          stdio: ctx.get('stdio'),
          logging: ctx.get('logging'),
          layers: ctx.get('layers'),
          spec: ctx.get('spec'),
          runtimes: ctx.get('runtimes'),
          dataRoot,
          execRoot,
          cgroupParent: cfg.cgroupParent || '/engine',
          log: log.child({ component: 'container-reconciler' }),
          ...(idMap ? { remapRoot: rootPair(idMap) } : {}),
        }, ctx.get('runs').registry);
      },
    }),
    component({
      id: 'controllers',
      requires: ['store', 'paths', 'layers', 'bridge', 'dns', 'volumes', 'network-attacher', 'containers', 'runs', 'metrics', 'runtimes', 'execs'],
      init: (ctx) => {
        const store = ctx.get('store');
        const images = new ImageReconciler(store, ctx.get('layers'), { log: log.child({ component: 'images' }), targets: ctx.get('layers').driverName === 'overlayfs' });
        const manager = new Manager({ log: log.child({ component: 'controllers' }) });
        const metrics = ctx.get('metrics').controllers;
        const runs = ctx.get('runs').registry;
        const containers = ctx.get('containers');
        const networks = new NetworkReconciler(store, ctx.get('bridge'), { dns: ctx.get('dns'), recheckMs: recheckMsFromEnv(), log: log.child({ component: 'networks' }) });
        const { dataRoot, execRoot } = ctx.get('paths');
        // Started in this order and stopped in reverse: images are up before the containers made from them.
        manager.add(runtimeController.build({ store, reconciler: new RuntimeReconciler(store, { execRoot, wrapperDir: join(dataRoot, 'runtimes'), noPivotRoot: cfg.noPivotRoot }), log, metrics }));
        manager.add(networkController.build({ store, reconciler: networks, log, metrics }));
        manager.add(volumeController.build({ store, reconciler: new VolumeReconciler(store, ctx.get('volumes').driver), log, metrics }));
        manager.add(imageController.build({ store, reconciler: images, log, metrics }));
        const containerCtl = containerController(runs, containers).build({ store, reconciler: containers, log, metrics });
        manager.add(containerCtl);
        manager.add(endpointController.build({ store, reconciler: new EndpointReconciler(store, ctx.get('network-attacher')), log, metrics }));
        const execs = ctx.get('execs');
        manager.add(execController(execs.processes.exits).build({ store, reconciler: execs.reconciler, log, metrics }));
        return { manager, images, containers: containerCtl };
      },
    }),
    component({
      id: 'supervisor-events',
      requires: ['supervisor', 'runs'],
      init: (ctx) => {
        const runs = ctx.get('runs');
        const registry = runs.registry;
        const subscription = subscribeEvents({
          ...ctx.get('supervisor'),
          log: log.child({ component: 'supervisor-events' }),
          onExit: (e) => {
            if (e.id === e.containerId || !e.id) registry.notifyExit(e.containerId, { pid: e.pid, exitStatus: e.exitStatus, exitedAt: e.exitedAt });
          },
          onOom: (id) => registry.notifyOom(id),
          onReady: () => registry.exitEventsResumed(),
        });
        runs.exitEvents = subscription;
        return subscription;
      },
      close: (subscription) => subscription.close(),
    }),
    component({
      id: 'migrations',
      requires: ['store'],
      init: (ctx) => {
        const store = ctx.get('store');
        const endpointsMigrated = migrateEndpoints(store);
        if (endpointsMigrated) log.info({ containers: endpointsMigrated }, 'networks beside NetworkMode migrated to endpoint records');
      },
    }),
  ];
}

/**
 * The controllers running. Closed before anything they use: the manager stops, then the running
 * containers are stopped (which needs the supervisor's exit events still subscribed).
 */
export function runningComponent({ cfg, log }: DaemonEnv) {
  return component({
    // Events: the recorder watches before the first reconciles commit, so none of them is missed.
    id: 'running',
    requires: ['controllers', 'pulls', 'containers', 'supervisor-events', 'migrations', 'events'],
    init: async (ctx) => {
      const { manager, images } = ctx.get('controllers');
      const containers = ctx.get('containers');
      // Before pulls resume and the API serves: nothing is in the middle of making a layer.
      await images.collectUnreferenced().catch((err: unknown) => log.warn({ err }, 'collecting layers no image uses failed'));
      await manager.start();
      void manager.ready().then(() => log.debug({ controllers: manager.status() }, 'controllers synced'));
      // Beside the first reconciles, not before them: the API serves while orphans are killed.
      void containers
        .collectOrphans()
        .then((ids) => ids.length && log.info({ containers: ids }, 'supervisor containers without a record removed'))
        .catch((err) => log.warn({ err }, 'collecting supervisor containers without a record failed'));
      return { manager, containers };
    },
    close: async ({ manager, containers }) => {
      await manager.stop();
      // Live restore: the containers run on, and the next daemon adopts them.
      if (cfg.liveRestore) await containers.leaveRunning();
      else await containers.shutdown(cfg.shutdownTimeout);
    },
  });
}
