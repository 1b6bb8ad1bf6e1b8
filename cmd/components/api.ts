// What the API serves from beside the store (distribution, the log reader, the event recorder),
// and the API itself: the app, its routes and the listeners.
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { component } from './registry.ts';
import type { DaemonEnv } from './env.ts';
import { createApp } from '../../api/app.ts';
import { AuthzChain } from '../../api/authz/chain.ts';
import { pluginDirs } from '../../api/authz/discovery.ts';
import { listenAll } from '../../api/listen.ts';
import { attachRoutes } from '../../api/attach/routes.ts';
import { containerRoutes } from '../../api/containers/routes.ts';
import { updateRoutes } from '../../api/containers/update.ts';
import { authRoutes } from '../../api/distribution/auth-routes.ts';
import { createPuller, pullHandler } from '../../api/distribution/pull-handler.ts';
import type { PullJobsPort } from '../../api/distribution/port.ts';
import { pushHandler } from '../../api/distribution/push-handler.ts';
import { EventRecorder } from '../../api/events/recorder.ts';
import { eventRoutes } from '../../api/events/routes.ts';
import { imageRoutes } from '../../api/images/routes.ts';
import { buildBackend } from '../../api/builder/backend.ts';
import { buildRoutes } from '../../api/builder/routes.ts';
import { createBuilder } from '../../drivers/builder/builder.ts';
import { removeLeftoverScratch } from '../../drivers/builder/scratch.ts';
import { buildPull } from '../../api/builder/pull.ts';
import { networkRoutes } from '../../api/networks/routes.ts';
import { systemRoutes } from '../../api/system/routes.ts';
import { faultRoutes, faultsEnabled } from '../../api/debug/fault-routes.ts';
import { sessionRoutes } from '../../api/session/routes.ts';
import { SessionManager } from '../../drivers/session/manager.ts';
import { volumeRoutes } from '../../api/volumes/routes.ts';
import { stackRoutes } from '../../api/stacks/routes.ts';
import { createDistribution } from '../../drivers/distribution/distribution.ts';
import { createImageArchive } from '../../drivers/image/archive.ts';
import { createImageCommitter } from '../../drivers/image/commit.ts';
import { hostPlatform } from '../../lib/platform.ts';
import { createLogReader, readPathOf } from '../../drivers/logging/index.ts';
import { parseSignal } from '../../reconcilers/container/signals.ts';

import { createContainerOps } from '../container-ops.ts';
import { blkioWeightSupported, listenTls, registryOptions } from '../daemon-helpers.ts';
import { createSystemInfo } from '../system-info.ts';
import { API_VERSION, BUILD_TIME, ENGINE_VERSION, GIT_COMMIT, MIN_API_VERSION } from '../version.ts';
import { Containers } from '../../store/kinds/container.ts';
import { registerEngineFamilies } from '../engine-metrics.ts';


/** What the routes use beside the store. */
export function serviceComponents({ cfg, log }: DaemonEnv) {
  return [
    component({
      id: 'distribution',
      requires: ['layers', 'paths'],
      init: (ctx) =>
        createDistribution({
          log: log.child({ component: 'distribution' }),
          ...registryOptions(cfg),
          certsDir: process.env.ENGINE_CERTS_DIR || '/etc/engine/certs.d',
          proxies: { http: cfg.httpProxy || undefined, https: cfg.httpsProxy || undefined, noProxy: cfg.noProxy || undefined },
          layers: ctx.get('layers'),
          platform: hostPlatform(),
          tmpDir: ctx.get('paths').tmpDir,
          // Tests shorten the silence a stalled blob download is given (default 60 s).
          ...(Number(process.env.ENGINE_PULL_STALL_TIMEOUT_MS) > 0 ? { stallTimeoutMs: Number(process.env.ENGINE_PULL_STALL_TIMEOUT_MS) } : {}),
        }),
      close: (distribution) => distribution.close(),
    }),
    component({
      id: 'log-reader',
      requires: ['store'],
      init: (ctx) => {
        const store = ctx.get('store');
        return createLogReader({
          pathOf: (id) => {
            const c = store.get(Containers, id);
            return c ? readPathOf(c.spec.hostConfig.LogConfig, c.status.logPath) : undefined;
          },
          log: log.child({ component: 'log-reader' }),
        });
      },
    }),
    component({
      id: 'sessions',
      requires: ['paths'],
      // BuildKit sessions: each relay socket under the exec root; all end when the daemon stops.
      init: (ctx) => new SessionManager({ dir: join(ctx.get('paths').execRoot, 'sessions'), log: log.child({ component: 'session' }) }),
      close: (m) => m.close(),
    }),
    component({
      id: 'authz',
      requires: [],
      // Every configured plugin must be found (a missing one: the daemon does not start); each is
      // activated on its first request. A reload replaces the list (cmd/components/reload.ts).
      init: () => {
        const chain = new AuthzChain([], { dirs: pluginDirs(process.env) });
        chain.validate(cfg.authorizationPlugins ?? []);
        chain.set(cfg.authorizationPlugins ?? []);
        return chain;
      },
    }),
    component({
      id: 'events',
      // After the migrations: their rewrites of old records are not events of the user's.
      requires: ['store', 'migrations'],
      init: (ctx) => new EventRecorder(ctx.get('store')),
      close: (events) => events.close(),
    }),
  ];
}

export function apiComponent({ cfg, log }: DaemonEnv) {
  return component({
    id: 'api',
    // Running: the API serves only once the controllers act on what it writes.
    requires: ['running', 'store', 'paths', 'userns', 'cdi', 'sessions', 'layers', 'supervisor-client', 'runtimes', 'runs', 'execs', 'volumes', 'distribution', 'pulls', 'log-reader', 'events', 'metrics', 'authz', 'cluster', 'swarm', 'admission'],
    init: async (ctx) => {
      const store = ctx.get('store');
      const layers = ctx.get('layers');
      const supervisor = ctx.get('supervisor-client');
      const runtimes = ctx.get('runtimes');
      const runs = ctx.get('runs').registry;
      const volumeDriver = ctx.get('volumes').driver;
      const distribution = ctx.get('distribution');
      const pulls = ctx.get('pulls');
      const logReader = ctx.get('log-reader');
      const events = ctx.get('events');
      const { tmpDir } = ctx.get('paths');
      const idMap = ctx.get('userns').map;
      const attachDeps = {
        store,
        streams: {
          watchRuns: (id: string, fn: Parameters<typeof runs.watchRuns>[1]) => runs.watchRuns(id, fn),
          settled: (id: string) => runs.settled(id),
          resize: (id: string, w: number, h: number) => runs.resize(id, w, h),
        },
        execs: ctx.get('execs').port,
        logs: logReader,
        events,
      };
      const admission = ctx.get('admission');
      const createDefaults = admission.containers.defaults;
      const pullJobs: PullJobsPort = { watch: (name, fn) => pulls.progress.subscribe(name, fn), setCredentials: (name, auth) => pulls.setCredentials(name, auth) };
      const puller = createPuller({ store, jobs: pullJobs });
      // Before the API serves: a build started now must not lose its own scratch layers.
      await removeLeftoverScratch(layers, log).catch((err) => log.warn({ err }, 'removing scratch layers of interrupted builds failed'));
      const builder = createBuilder({ layers, log: log.child({ component: 'build' }), platform: hostPlatform(), tmpDir, ...(idMap ? { idMap } : {}) });
      const backend = buildBackend({ store, resolveImage: admission.containers.resolveImage, defaults: createDefaults, streams: attachDeps.streams, timeoutMs: 120_000 });
      const cdi = ctx.get('cdi').registry;
      const info = createSystemInfo({ config: cfg, layers, supervisor, runtimes, dataRoot: ctx.get('paths').dataRoot, ...(cdi ? { cdi } : {}) });
      const metrics = ctx.get('metrics');
      const onAnswered = metrics.server ? registerEngineFamilies(metrics.registry, { store, info, events }) : undefined;
      const app = createApp({
        log: log.child({ component: 'api' }),
        experimental: !!cfg.experimental,
        version: { api: API_VERSION, min: MIN_API_VERSION },
        onAnswered,
        corsHeader: cfg.apiCorsHeader,
        authz: ctx.get('authz'),
        plugins: [
          systemRoutes({
            store,
            info,
            versionInfo: { version: ENGINE_VERSION, apiVersion: API_VERSION, minApiVersion: MIN_API_VERSION, gitCommit: GIT_COMMIT, buildTime: BUILD_TIME },
            experimental: !!cfg.experimental,
            layers,
            sizeRw: (id) => layers.sizeRW(id),
            volumeSize: (name) => volumeDriver.size(name),
            storeWarnings: () => store.quarantined().map((q) => `WARNING: stored ${q.kind} ${q.name} could not be read and was set aside: ${q.reason}`),
            cluster: () => ctx.get('cluster').current?.membership,
            swarm: ctx.get('swarm'),
          }),
          imageRoutes({
            store,
            archive: createImageArchive({ layers, tmpDir, log }),
            layers,
            commit: createImageCommitter({ layers, log: log.child({ component: 'commit' }), platform: hostPlatform() }),
            events,
            pull: pullHandler({ distribution, store, jobs: pullJobs, puller, onEvent: (a, id, name) => events.image(a, id, name) }),
            push: pushHandler({ distribution, store, onEvent: (a, id, name) => events.image(a, id, name) }),
          }),
          authRoutes({ distribution }),
          buildRoutes({
            store,
            builder,
            experimental: !!cfg.experimental,
            events,
            counted: metrics.engine,
            backend: (req, session) => ({ ...backend, pullImage: buildPull(puller, store, req, session) }),
            sessions: ctx.get('sessions'),
          }),
          containerRoutes({
            store,
            streams: attachDeps.streams,
            logs: logReader,
            signals: { kill: (id, sig) => supervisor.killTask(id, sig) },
            events,
            defaults: createDefaults,
            resolveImage: admission.containers.resolveImage,
            parseSignal: (s) => parseSignal(s),
            swarmAttach: async (body) => (await ctx.get('cluster').current?.overlay.attach(body)) ?? body,
            graphDriverData: (id) => layers.metadataRW(id),
            sizeRw: (id) => layers.sizeRW(id),
            ops: createContainerOps({
              cgroupParent: cfg.cgroupParent || '/engine',
              runInfo: (id) => runs.runInfo(id),
              pids: (id) => supervisor.pids(id),
              layers,
              container: (id) => store.get(Containers, id),
              volumeDir: async (name) => (await volumeDriver.ensure(name)).mountpoint,
              ...(idMap ? { idMap } : {}),
            }),
          }),
          updateRoutes({ store, blkioWeight: blkioWeightSupported() }),
          attachRoutes(attachDeps),
          eventRoutes(events),
          volumeRoutes({ store, usage: { size: (name) => volumeDriver.size(name) }, isManager: () => ctx.get('swarm').local().manager }),
          stackRoutes({
            store,
            // A stack of the swarm's services: a manager's (a worker gets the reference's 503).
            cluster: () => (ctx.get('cluster').current ? ctx.get('swarm').stacks() : undefined),
          }),
          networkRoutes({ store, defaults: admission.networks.defaults, swarm: () => ctx.get('swarm').networks() }),
          sessionRoutes({ sessions: ctx.get('sessions') }),
          // A test's injected fault (ENGINE_DEBUG_FAULTS=1 in the environment only).
          ...(faultsEnabled() ? [faultRoutes()] : []),
        ],
      });
      await app.ready();
      const listeners = await listenAll(app, cfg.hosts, {
        socketGroup: cfg.group,
        log,
        tls: listenTls(cfg),
      });
      log.info({ hosts: listeners.addresses, version: ENGINE_VERSION, storage: layers.driverName }, 'API listen');
      return { app, listeners };
    },
    // First to close: no request arrives while the rest shuts down.
    close: async ({ app, listeners }) => {
      await listeners.close().catch((err) => log.warn({ err }, 'closing listeners'));
      await app.close().catch(() => {});
      for (const h of cfg.hosts) {
        if (h.startsWith('unix://')) rmSync(h.slice('unix://'.length), { force: true });
      }
    },
  });
}

