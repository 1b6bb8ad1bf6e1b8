// The one place that wires everything: store, drivers, reconcilers, controllers, API, listeners,
// and the orderly shutdown on SIGTERM/SIGINT.
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { makeLogger } from './log-format.ts';
import { createApp } from '../api/app.ts';
import { listenAll, type ListenTls } from '../api/listen.ts';
import { containerRoutes } from '../api/containers/routes.ts';
import { imageRoutes } from '../api/images/routes.ts';
import { resolveImage } from '../api/images/resolve.ts';
import { systemRoutes } from '../api/system/routes.ts';
import { attachRoutes, upgradeHandler } from '../api/attach/routes.ts';
import { moreContainerRoutes } from '../api/containers/more-routes.ts';
import { updateRoutes } from '../api/containers/update.ts';
import { EventRecorder } from '../api/events/recorder.ts';
import { eventRoutes } from '../api/events/routes.ts';
import { networkRoutes } from '../api/networks/routes.ts';
import { ExecManager } from '../reconcilers/container/exec.ts';
import { execProbes } from '../reconcilers/container/probe.ts';
import { ensureShm, releaseShm } from '../drivers/sys/shm.ts';
import { createContainerOps } from './container-ops.ts';
import { BridgeDriver } from '../drivers/network/bridge-driver.ts';
import { hostRouteSubnets } from '../drivers/network/routes.ts';
import { dnsUpstreams, startDnsServer } from '../drivers/network/dns-server.ts';
import { NetworkDns } from '../reconcilers/network/dns.ts';
import { DEFAULT_CHAIN_PREFIX } from '../reconcilers/network/deps.ts';
import { createDistribution, type ReloadableRegistryOptions } from '../drivers/distribution/distribution.ts';
import { hostPlatform } from '../drivers/image/platform.ts';
import { pullHandler } from '../api/distribution/pull-handler.ts';
import { pushHandler } from '../api/distribution/push-handler.ts';
import { authRoutes } from '../api/distribution/auth-routes.ts';
import { ensureDefaultNetwork, findNetworkByName } from '../reconcilers/network/default-network.ts';
import { NetworkReconciler } from '../reconcilers/network/reconciler.ts';
import { NetworkAttacher } from '../reconcilers/network/attacher.ts';
import { PortPublisher } from '../reconcilers/network/ports.ts';
import { LinkFirewall } from '../reconcilers/network/link-rules.ts';
import { PortProxies } from '../drivers/network/port-proxy.ts';
import { NETWORK_KIND } from '../store/network-types.ts';
import { VOLUME_KIND } from '../store/volume-types.ts';
import { LocalVolumeDriver } from '../drivers/volume/local.ts';
import { VolumeMounter } from '../reconcilers/volume/mounter.ts';
import { VolumeReconciler } from '../reconcilers/volume/reconciler.ts';
import { volumeRoutes } from '../api/volumes/routes.ts';
import type { ConfigSources, DaemonConfig } from '../config/load.ts';
import { diffReload } from '../config/reload.ts';
import { Controller } from '../controllers/controller.ts';
import { Manager } from '../controllers/manager.ts';
import { createImageArchive } from '../drivers/image/archive.ts';
import { createImageCommitter } from '../drivers/image/commit.ts';
import { createLogging, createLogReader, validateLogConfig } from '../drivers/logging/index.ts';
import { createSpecBuilder, resolveUser, validateBind } from '../drivers/oci/index.ts';
import { createLayerStore } from '../drivers/storage/layer-store.ts';
import { createStdio } from '../drivers/stdio/stdio.ts';
import { createSupervisorClient } from '../drivers/supervisor/client.ts';
import { subscribeEvents } from '../drivers/supervisor/events.ts';
import { startSupervisor, type SupervisorProcess } from '../drivers/supervisor/process.ts';
import { createRuntimes, type Runtimes } from '../drivers/supervisor/runtimes.ts';
import { ContainerReconciler } from '../reconcilers/container/reconciler.ts';
import { RunRegistry } from '../reconcilers/container/runs.ts';
import { migrateEndpoints } from '../reconcilers/endpoint/migrate.ts';
import { EndpointReconciler, endpointTriggers, primaryEndpointTriggers } from '../reconcilers/endpoint/reconciler.ts';
import { ENDPOINT_KIND } from '../store/endpoint-types.ts';
import { parseSignal } from '../reconcilers/container/signals.ts';
import { ImageReconciler } from '../reconcilers/image/reconciler.ts';
import { STORE_SCHEMAS } from '../store/schemas/index.ts';
import { openStore } from '../store/store.ts';
import type { ContainerSpec, ContainerStatus } from '../store/types.ts';
import { KIND } from '../store/types.ts';
import { acquirePidfile } from './pidfile.ts';
import { createSystemInfo } from './system-info.ts';
import { API_VERSION, BUILD_TIME, ENGINE_VERSION, GIT_COMMIT, MIN_API_VERSION } from './version.ts';

function levelOf(config: DaemonConfig): string {
  return config.debug ? 'debug' : config.logLevel === 'fatal' ? 'fatal' : config.logLevel;
}

export async function runDaemon(config: DaemonConfig, sources: unknown): Promise<number> {
  const log = makeLogger({ level: levelOf(config), format: config.logFormat || 'text' });
  // SIGHUP reloads the configuration file (set up once the daemon runs); until then, and after
  // a refused reload, it changes nothing — it must never end the daemon, Node's default.
  let onReload: () => void = () => log.warn('SIGHUP before the daemon was ready: ignored');
  process.on('SIGHUP', () => onReload());
  const releasePidfile = acquirePidfile(config.pidfile);
  const cleanups: Array<[string, () => Promise<void> | void]> = [];
  const step = (name: string, fn: () => Promise<void> | void) => cleanups.unshift([name, fn]);
  step('pidfile', releasePidfile);

  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
  process.on('uncaughtException', (err) => log.error({ err }, 'uncaught exception'));

  warnUnapplied(config, (sources ?? {}) as Partial<ConfigSources>, log);
  let code: number;
  try {
    code = await serve(config, log, step);
  } catch (err) {
    log.error({ err }, 'engined failed to start');
    await runCleanups(cleanups, log);
    throw err;
  }
  await runCleanups(cleanups, log);
  log.info('engined stopped');
  log.flush();
  return code;

  async function serve(cfg: DaemonConfig, logger: Logger, onStop: typeof step): Promise<number> {
    const dataRoot = cfg.dataRoot;
    const execRoot = cfg.execRoot;
    const tmpDir = process.env.ENGINE_TMPDIR || join(dataRoot, 'tmp');
    for (const d of [dataRoot, execRoot, tmpDir]) mkdirSync(d, { recursive: true, mode: 0o711 });

    const store = openStore(join(dataRoot, 'engine.db'), { log: logger.child({ component: 'store' }), schemas: STORE_SCHEMAS });
    onStop('store', () => store.close());

    const driver = cfg.storageDriver === 'vfs' ? 'vfs' : 'overlay2';
    if (cfg.storageDriver && cfg.storageDriver !== 'overlay2' && cfg.storageDriver !== 'vfs') {
      throw new Error(`error initializing graphdriver: driver not supported: ${cfg.storageDriver}`);
    }
    const layers = await createLayerStore({
      dataRoot,
      driver,
      tmpDir,
      usePigz: !process.env.ENGINE_DISABLE_PIGZ,
      log: logger.child({ component: 'layers' }),
    });
    onStop('layers', () => layers.cleanup());

    let supervisorProcess: SupervisorProcess | null = null;
    let address = cfg.supervisor;
    if (!address) {
      supervisorProcess = await startSupervisor({
        root: join(dataRoot, 'containerd'),
        state: join(execRoot, 'containerd', 'state'),
        configDir: join(execRoot, 'containerd'),
        log: logger.child({ component: 'supervisor' }),
        debug: cfg.debug,
      });
      address = supervisorProcess.address;
      const p = supervisorProcess;
      onStop('supervisor', () => p.stop());
    }
    const namespace = cfg.supervisorNamespace || 'engine';
    const supervisor = createSupervisorClient({ address, namespace, log: logger.child({ component: 'supervisor-client' }) });
    onStop('supervisor-client', () => supervisor.close());
    // Behind a stable object: a reload may replace the runtime table.
    const makeRuntimes = (c: DaemonConfig) => createRuntimes({ defaultRuntime: c.defaultRuntime || 'stdrt', runtimes: c.runtimes ?? {}, execRoot });
    let runtimeTable = makeRuntimes(cfg);
    const runtimes: Runtimes = {
      resolve: (name) => runtimeTable.resolve(name),
      names: () => runtimeTable.names(),
      get default() {
        return runtimeTable.default;
      },
    };

    const stdio = createStdio(logger.child({ component: 'stdio' }));
    const logging = createLogging({ log: logger.child({ component: 'logging' }) });
    const spec = createSpecBuilder({
      log: logger.child({ component: 'oci' }),
      defaultShmSize: cfg.defaultShmSize,
      dns: { servers: cfg.dns ?? [], search: cfg.dnsSearch ?? [], options: cfg.dnsOpts ?? [] },
      init: cfg.init,
      initPath: cfg.initPath || findInit(),
      seccomp: seccompProfile(cfg.seccompProfile),
      noNewPrivileges: cfg.noNewPrivileges,
      defaultUlimits: Object.values(cfg.defaultUlimits ?? {}),
      hostGatewayIp: () => cfg.hostGatewayIp || findNetworkByName(store, 'bridge')?.spec.ipam.Config[0]?.Gateway || '',
    });

    const bridgeDriver = new BridgeDriver({ log: logger.child({ component: 'network' }) });
    await ensureDefaultNetwork(
      store,
      {
        bridge: cfg.bridge,
        bip: cfg.bip,
        fixedCidr: cfg.fixedCidr,
        mtu: cfg.mtu,
        iptables: cfg.iptables,
        ipForward: cfg.ipForward,
        ipMasq: cfg.ipMasq,
        icc: cfg.icc,
        defaultGateway: cfg.defaultGateway,
        ipv6: cfg.ipv6,
        fixedCidrV6: cfg.fixedCidrV6,
        defaultGatewayV6: cfg.defaultGatewayV6,
        ip6tables: cfg.ip6tables,
        userlandProxy: cfg.userlandProxy,
        // Tests running several daemons side by side give each its own chains.
        chainPrefix: process.env.ENGINE_IPTABLES_CHAIN_PREFIX || undefined,
      },
      { driver: bridgeDriver },
    );
    const network = new NetworkAttacher(store, bridgeDriver, logger);
    const proxies = new PortProxies({ log: logger.child({ component: 'port-proxy' }), binary: cfg.userlandProxyPath || undefined });
    onStop('port-proxies', () => proxies.closeAll());
    const ports = new PortPublisher(store, bridgeDriver, {
      log: logger.child({ component: 'ports' }),
      defaultIp: cfg.ip || '0.0.0.0',
      userlandProxy: cfg.userlandProxy !== false,
      proxy: cfg.userlandProxy !== false ? proxies : undefined,
    });
    // No run of the last life is left (they are stopped at start-up): neither are its published ports.
    const swept = await ports.sweep();
    if (swept) logger.info({ ports: swept }, 'published ports of the previous run released');
    const volumeDriver = new LocalVolumeDriver({ root: join(dataRoot, 'volumes') });
    const volumes = new VolumeMounter(store, volumeDriver);

    let exitEvents: { readonly live: boolean } | null = null;
    const runs = new RunRegistry({ supervisor, exitEventsLive: () => exitEvents?.live ?? false });
    const execs = new ExecManager({
      supervisor,
      stdio,
      host: runs,
      execRoot,
      log: logger.child({ component: 'exec' }),
      resolveUser: (rootfs, user) => resolveUser(rootfs, user),
    });
    const containers = new ContainerReconciler(store, {
      network,
      shm: { ensure: ensureShm, release: releaseShm },
      probes: execProbes(execs, supervisor),
      volumes,
      ports,
      links: new LinkFirewall(store, bridgeDriver, logger.child({ component: 'links' })),
      supervisor,
      stdio,
      logging,
      layers,
      spec,
      runtimes,
      dataRoot,
      execRoot,
      cgroupParent: cfg.cgroupParent || '/engine',
      log: logger.child({ component: 'container-reconciler' }),
    }, runs);
    const images = new ImageReconciler(store, layers, { log: logger.child({ component: 'images' }) });

    const manager = new Manager();
    const containerCtl = new Controller({ name: 'container', kind: KIND.container, store, reconciler: containers, log: logger, workers: 16, specChangesOnly: true });
    const imageCtl = new Controller({ name: 'image', kind: KIND.image, store, reconciler: images, log: logger, workers: 2 });
    runs.enqueue = (key) => containerCtl.enqueue(key);
    const dnsLog = logger.child({ component: 'dns' });
    const dns = new NetworkDns(store, { start: (o) => startDnsServer({ ...o, log: dnsLog }) }, dnsUpstreams(() => cfg.dns ?? []), dnsLog);
    onStop('dns', () => dns.closeAll());
    const networkCtl = new Controller({ name: 'network', kind: NETWORK_KIND.network, store, reconciler: new NetworkReconciler(store, bridgeDriver, { dns, recheckMs: recheckMsFromEnv() }), log: logger, workers: 1 });
    manager.add(networkCtl);
    manager.add(new Controller({ name: 'volume', kind: VOLUME_KIND, store, reconciler: new VolumeReconciler(store, volumeDriver), log: logger, workers: 2 }));
    manager.add(imageCtl);
    manager.add(containerCtl);
    const endpointCtl = new Controller({ name: 'endpoint', kind: ENDPOINT_KIND, store, reconciler: new EndpointReconciler(store, network), log: logger, workers: 4, specChangesOnly: true });
    manager.add(endpointCtl);
    onStop('endpoint-triggers', endpointTriggers(store, (key) => endpointCtl.enqueue(key)));
    onStop('primary-endpoint-triggers', primaryEndpointTriggers(store, (id) => containerCtl.enqueue(id)));

    const supEvents = subscribeEvents({
      address,
      namespace,
      log: logger.child({ component: 'supervisor-events' }),
      onExit: (e) => {
        if (e.id === e.containerId || !e.id) runs.notifyExit(e.containerId, { pid: e.pid, exitStatus: e.exitStatus, exitedAt: e.exitedAt });
      },
      onOom: (id) => runs.notifyOom(id),
      onReady: () => runs.exitEventsResumed(),
    });
    exitEvents = supEvents;
    onStop('supervisor-events', () => supEvents.close());

    const endpointsMigrated = migrateEndpoints(store);
    if (endpointsMigrated) logger.info({ containers: endpointsMigrated }, 'networks beside NetworkMode migrated to endpoint records');
    await manager.start();
    // Beside the first reconciles, not before them: the API serves while orphans are killed.
    void containers
      .collectOrphans()
      .then((ids) => ids.length && logger.info({ containers: ids }, 'supervisor containers without a record removed'))
      .catch((err) => logger.warn({ err }, 'collecting supervisor containers without a record failed'));

    const archive = createImageArchive({ layers, tmpDir, log: logger });
    const distribution = createDistribution({
      log: logger.child({ component: 'distribution' }),
      ...registryOptions(cfg),
      certsDir: process.env.ENGINE_CERTS_DIR || '/etc/engine/certs.d',
      proxies: { http: cfg.httpProxy || undefined, https: cfg.httpsProxy || undefined, noProxy: cfg.noProxy || undefined },
      layers,
      platform: hostPlatform(),
      tmpDir,
    });
    onStop('distribution', () => distribution.close());
    const logReader = createLogReader({
      pathOf: (id) => store.get<ContainerSpec, ContainerStatus>(KIND.container, id)?.status.logPath || undefined,
      log: logger.child({ component: 'log-reader' }),
    });
    const info = createSystemInfo({ config: cfg, layers, supervisor, runtimes });
    const events = new EventRecorder(store);
    onStop('events', () => events.close());
    const cgroupParent = cfg.cgroupParent || '/engine';
    const ops = createContainerOps({
      cgroupParent,
      runInfo: (id) => runs.runInfo(id),
      pids: (id) => supervisor.pids(id),
      layers,
    });
    const attachDeps = {
      store,
      streams: { watchRuns: (id: string, fn: Parameters<typeof runs.watchRuns>[1]) => runs.watchRuns(id, fn), resize: (id: string, w: number, h: number) => runs.resize(id, w, h) },
      execs,
      logs: logReader,
      version: { api: API_VERSION, min: MIN_API_VERSION },
      events,
    };

    const app = createApp({
      log: logger.child({ component: 'api' }),
      experimental: !!cfg.experimental,
      version: { api: API_VERSION, min: MIN_API_VERSION },
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
        }),
        imageRoutes({
          store,
          archive,
          layers,
          commit: createImageCommitter({ layers, log: logger.child({ component: 'commit' }), platform: hostPlatform() }),
          events,
          pull: pullHandler({ distribution, store, onEvent: (a, id, name) => events.image(a, id, name) }),
          push: pushHandler({ distribution, store, onEvent: (a, id, name) => events.image(a, id, name) }),
        }),
        authRoutes({ distribution }),
        containerRoutes({
          store,
          logs: logReader,
          signals: { kill: (id, sig) => supervisor.killTask(id, sig) },
          events,
          defaults: {
            get runtime() {
              return runtimes.default;
            },
            hasRuntime: (n) => runtimes.names().includes(n),
            shmSize: cfg.defaultShmSize || 64 * 1024 * 1024,
            ipcMode: cfg.defaultIpcMode || 'private',
            cgroupnsMode: cfg.defaultCgroupnsMode || 'private',
            blkioWeight: blkioWeightSupported(),
            hostCpus: hostCpus(),
            logConfig: { Type: cfg.logDriver || 'json-file', Config: cfg.logOpts ?? {} },
            validateLogConfig,
            validateBind,
          },
          resolveImage: (ref) => resolveImage(store, ref),
          parseSignal: (s) => parseSignal(s),
          graphDriverData: (id) => layers.metadataRW(id),
          sizeRw: (id) => layers.sizeRW(id),
        }),
        moreContainerRoutes({ store, ops, sizeRw: (id) => layers.sizeRW(id) }),
        updateRoutes({ store, blkioWeight: blkioWeightSupported() }),
        attachRoutes(attachDeps),
        eventRoutes(events),
        volumeRoutes({ store, usage: { size: (name) => volumeDriver.size(name) } }),
        networkRoutes({
          store,
          defaults: {
            mtu: cfg.mtu,
            iptables: cfg.iptables,
            ip6tables: cfg.iptables && cfg.ip6tables,
            ipForward: cfg.ipForward,
            userlandProxy: cfg.userlandProxy,
            chainPrefix: process.env.ENGINE_IPTABLES_CHAIN_PREFIX || DEFAULT_CHAIN_PREFIX,
            pools: cfg.defaultAddressPools ?? [],
            driverOpts: cfg.defaultNetworkOpts ?? {},
            hostRoutes: hostRouteSubnets,
          },
        }),
      ],
    });
    await app.ready();
    const listeners = await listenAll(app, cfg.hosts, {
      socketGroup: cfg.group,
      log: logger,
      tls: listenTls(cfg),
      onUpgrade: upgradeHandler(attachDeps, logger.child({ component: 'attach' })),
    });
    logger.info({ hosts: listeners.addresses, version: ENGINE_VERSION, storage: layers.driverName }, 'API listen');

    onReload = () => {
      let text = '{}';
      try {
        text = readFileSync(cfg.configFile, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
          logger.error({ err, file: cfg.configFile }, 'reload: cannot read the configuration file; nothing changed');
          return;
        }
      }
      const r = diffReload(cfg, text, sources as Partial<ConfigSources>);
      if (!r.ok) {
        logger.error({ error: r.error }, 'reload refused: the daemon keeps its configuration');
        return;
      }
      let nextRuntimes = runtimeTable;
      try {
        if (r.changed.some((c) => c.field === 'runtimes' || c.field === 'defaultRuntime')) nextRuntimes = makeRuntimes(r.config);
      } catch (err) {
        logger.error({ err }, 'reload refused: invalid runtimes; the daemon keeps its configuration');
        return;
      }
      runtimeTable = nextRuntimes;
      Object.assign(cfg, r.config);
      logger.level = levelOf(cfg);
      distribution.reconfigure(registryOptions(cfg));
      logger.info({ changed: r.changed.map((c) => c.key) }, 'configuration reloaded');
    };

    await waitForSignal(logger);

    logger.info('shutting down');
    const deadline = setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, (Math.max(cfg.shutdownTimeout, 0) + 60) * 1000);
    deadline.unref();
    await listeners.close().catch((err) => logger.warn({ err }, 'closing listeners'));
    await app.close().catch(() => {});
    for (const h of cfg.hosts) {
      if (h.startsWith('unix://')) rmSync(h.slice('unix://'.length), { force: true });
    }
    await manager.stop();
    await containers.shutdown(cfg.shutdownTimeout);
    return 0;
  }
}

async function runCleanups(cleanups: Array<[string, () => Promise<void> | void]>, log: Logger): Promise<void> {
  for (const [name, fn] of cleanups) {
    try {
      await fn();
    } catch (err) {
      log.warn({ err, step: name }, 'cleanup step failed');
    }
  }
}

/** The registry options a reload may change, with the spec's defaults. */
function registryOptions(c: DaemonConfig): ReloadableRegistryOptions {
  return {
    insecureRegistries: c.insecureRegistries ?? [],
    registryMirrors: c.registryMirrors ?? [],
    maxConcurrentDownloads: c.maxConcurrentDownloads || 3,
    maxDownloadAttempts: c.maxDownloadAttempts || 5,
    maxConcurrentUploads: c.maxConcurrentUploads || 5,
    allowNondistributable: c.allowNondistributableArtifacts ?? [],
  };
}

/**
 * Options the table accepts (so configurations written for the reference daemon load) whose
 * effect this daemon does not implement yet: set explicitly, each one is named in a warning
 * rather than silently ignored.
 */
const NOT_APPLIED_YET = [
  'apiCorsHeader', 'authorizationPlugins', 'cdiSpecDirs', 'clusterDefaultAdvertiseAddr', 'cpuRtPeriod', 'cpuRtRuntime',
  'execOpts', 'metricsAddr', 'networkControlPlaneMtu',
  'noPivotRoot', 'nodeGenericResources', 'oomScoreAdjust', 'rawLogs', 'rootless', 'selinuxEnabled',
  'storageOpts', 'usernsRemap',
] as const;

/** The CPUs and memory nodes cpusets may name, as sysfs lists them online (unknown when it cannot be read). */
function hostCpus(): { cpus?: string; mems?: string } {
  const read = (p: string) => (existsSync(p) ? readFileSync(p, 'utf8').trim() || undefined : undefined);
  return { cpus: read('/sys/devices/system/cpu/online'), mems: read('/sys/devices/system/node/online') };
}

/** Whether the kernel offers blkio weights (cgroup v1 with CFQ/BFQ weights, or v2's io.weight). */
function blkioWeightSupported(): boolean {
  if (['/sys/fs/cgroup/blkio/blkio.weight', '/sys/fs/cgroup/blkio/blkio.bfq.weight'].some((p) => existsSync(p))) return true;
  return existsSync('/sys/fs/cgroup/cgroup.controllers') && /\bio\b/.test(readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8'));
}

/** --seccomp-profile: "", "builtin" and "unconfined" as they are, else the profile file's JSON (read once, at start). */
function seccompProfile(value: string | undefined): string | undefined {
  if (!value || value === 'builtin' || value === 'default' || value === 'unconfined') return value || undefined;
  try {
    const text = readFileSync(value, 'utf8');
    JSON.parse(text);
    return text;
  } catch (err) {
    throw new Error(`opening seccomp profile (${value}) failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The init for --init when --init-path names none: docker-init, else tini's static build (containers may have no libc). */
function findInit(): string {
  return ['/usr/local/bin/docker-init', '/usr/bin/docker-init', '/usr/bin/tini-static'].find((p) => existsSync(p)) ?? '';
}

function warnUnapplied(config: DaemonConfig, sources: Partial<ConfigSources>, log: Logger): void {
  for (const f of NOT_APPLIED_YET) {
    const src = sources[f as keyof ConfigSources];
    if (src && src !== 'default') {
      log.warn({ option: f, from: src, value: (config as unknown as Record<string, unknown>)[f] }, 'option accepted but not applied by this version of engined');
    }
  }
}

/** --tls / --tlsverify: the server's key pair (and the CA that client certificates must chain to). */
function listenTls(cfg: DaemonConfig): ListenTls | undefined {
  if (!cfg.tls && !cfg.tlsverify) return undefined;
  const home = process.env.HOME || '/root';
  const path = (p: string) => (p.startsWith('~/') ? join(home, p.slice(2)) : p);
  const read = (what: string, p: string) => {
    try {
      return readFileSync(path(p));
    } catch (err) {
      throw new Error(`could not load ${what} ${path(p)}: ${(err as Error).message}`);
    }
  };
  return {
    cert: read('TLS certificate', cfg.tlscert),
    key: read('TLS key', cfg.tlskey),
    ca: cfg.tlsverify ? read('TLS CA certificate', cfg.tlscacert) : undefined,
    verify: !!cfg.tlsverify,
  };
}

function waitForSignal(log: Logger): Promise<void> {
  return new Promise((resolve) => {
    const onSignal = (sig: NodeJS.Signals) => {
      log.info({ signal: sig }, 'received signal');
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      resolve();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    process.on('SIGPIPE', () => {});
  });
}

/**
 * ENGINE_NETWORK_RECHECK_MS: how often the network reconciler looks for drift (default 30 s). A
 * test knob like ENGINE_IPTABLES_CHAIN_PREFIX (the drift e2e cannot wait 30 s), not a spec option.
 */
function recheckMsFromEnv(): number | undefined {
  const v = Number(process.env.ENGINE_NETWORK_RECHECK_MS);
  return Number.isFinite(v) && v >= 100 ? v : undefined;
}
