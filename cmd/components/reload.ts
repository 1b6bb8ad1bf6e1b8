// The config-reload loop's wiring: the owners of the reloadable options (the logger, the runtime
// registry, the distribution driver; the shared configuration object last, in the reconciler),
// the file source (chokidar's watcher and SIGHUP both read the file into the daemon-config
// record) and the controller that reconciles it. Taken on once the API serves.
import { systemdNotifier, type Notifier } from '../../drivers/sys/sd-notify.ts';
import { hostname } from 'node:os';
import type { DaemonConfig } from '../../config/options.ts';
import { goFormat } from '../../config/values.ts';
import type { Controller } from '../../controllers/controller.ts';
import type { Manager } from '../../controllers/manager.ts';
import { configReloadController } from '../../reconcilers/config-reload/controller.ts';
import { ConfigFileSource } from '../../reconcilers/config-reload/file-source.ts';
import { ConfigReloadReconciler, reloadableValues, type ReloadOwner } from '../../reconcilers/config-reload/reconciler.ts';
import { component } from './registry.ts';
import { levelOf, registryOptions } from '../daemon-helpers.ts';
import { engineId } from '../system-info.ts';
import type { SwappableRuntimes } from './core.ts';
import type { DaemonEnv } from './env.ts';

export interface Reload {
  /** SIGHUP: the file is read again and reconciled. */
  signal(): void;
}

export interface Running extends Reload {
  controller: Controller;
  manager: Manager;
  unwatch: () => Promise<void>;
  /** The daemon's one systemd notifier (its notices go out in order: READY never overtakes a STOPPING). */
  notifier: Notifier | undefined;
}

/** The `daemon reload` event's attributes, as the reference writes them (Go's formats). */
export function reloadAttributes(c: DaemonConfig, runtimes: Pick<SwappableRuntimes, 'default'>): Record<string, string> {
  const json = (v: unknown) => JSON.stringify(v ?? null);
  const configured = Object.entries(c.runtimes ?? {})
    .map(([name, r]) => `${name}:${r.path ?? r.runtimeType ?? ''}`)
    .sort();
  return {
    'allow-nondistributable-artifacts': json(c.allowNondistributableArtifacts),
    'authorization-plugins': json(c.authorizationPlugins),
    debug: String(!!c.debug),
    'default-runtime': runtimes.default,
    features: goFormat(c.features ?? {}),
    'insecure-registries': json(c.insecureRegistries),
    labels: json(c.labels),
    'live-restore': String(!!c.liveRestore),
    'max-concurrent-downloads': String(c.maxConcurrentDownloads),
    'max-concurrent-uploads': String(c.maxConcurrentUploads),
    'max-download-attempts': String(c.maxDownloadAttempts),
    name: hostname(),
    'registry-mirrors': json(c.registryMirrors),
    runtimes: configured.join(' '),
    'shutdown-timeout': String(c.shutdownTimeout),
  };
}

export function reloadComponent({ cfg, log, sources }: DaemonEnv) {
  return component({
    id: 'reload',
    // After the API: a reload is taken only once the daemon runs.
    requires: ['store', 'runtimes', 'distribution', 'events', 'metrics', 'api', 'authz', 'cluster', 'controllers'],
    init: async (ctx) => {
      const store = ctx.get('store');
      const runtimes = ctx.get('runtimes');
      const distribution = ctx.get('distribution');
      const events = ctx.get('events');
      const authz = ctx.get('authz');
      const rlog = log.child({ component: 'config-reload' });
      // Type=notify: RELOADING=1, then READY=1 once the reload settles (drivers/sys/sd-notify.ts).
      const notifier = systemdNotifier(log);
      const cluster = () => ctx.get('cluster').current?.membership;
      const owners: ReloadOwner[] = [
        {
          name: 'runtimes',
          fields: ['runtimes', 'defaultRuntime'],
          prepare: (next, prev) => {
            const table = runtimes.build(next);
            return { apply: () => runtimes.swap(table), rollback: () => runtimes.swap(runtimes.build(prev)) };
          },
        },
        {
          name: 'distribution',
          fields: ['insecureRegistries', 'registryMirrors', 'allowNondistributableArtifacts', 'maxConcurrentDownloads', 'maxConcurrentUploads', 'maxDownloadAttempts'],
          prepare: (next, prev) => ({ apply: () => distribution.reconfigure(registryOptions(next)), rollback: () => distribution.reconfigure(registryOptions(prev)) }),
        },
        {
          name: 'authorization',
          fields: ['authorizationPlugins'],
          prepare: (next, prev) => {
            // A plugin that cannot be found refuses the reload.
            authz.validate(next.authorizationPlugins ?? []);
            return { apply: () => authz.set(next.authorizationPlugins ?? []), rollback: () => authz.set(prev.authorizationPlugins ?? []) };
          },
        },
        {
          name: 'logging',
          fields: ['debug'],
          prepare: (next, prev) => ({
            apply: () => {
              log.level = levelOf(next);
            },
            rollback: () => {
              log.level = levelOf(prev);
            },
          }),
        },
      ];
      // The node record carries the labels: written again once the new configuration is in place
      // (by whichever membership the node has then; none while it is in no cluster).
      const refresh = () => void setImmediate(() => cluster()?.refresh());
      owners.push({ name: 'cluster', fields: ['labels'], prepare: () => ({ apply: refresh, rollback: refresh }) });
      const id = engineId(cfg.dataRoot);
      const reconciler = new ConfigReloadReconciler(store, {
        config: cfg,
        sources,
        owners,
        reloaded: (c) => events.emit('daemon', 'reload', id, reloadAttributes(c, runtimes)),
        settled: (_ok, message) => void notifier?.notify({ READY: '1', STATUS: message }),
        log: rlog,
      });
      const source = new ConfigFileSource(store, cfg.configFile, rlog);
      source.started(reloadableValues(cfg));
      const controller = configReloadController.build({ store, reconciler, log, metrics: ctx.get('metrics').controllers });
      // Run by the manager with every other loop (a reload read before it runs waits in the store).
      const { manager } = ctx.get('controllers');
      manager.add(controller);
      const unwatch = await source.watch();
      const signal = () => {
        void notifier?.notify({ RELOADING: '1', STATUS: 'reloading the configuration' });
        source.read('signal');
      };
      return { signal, controller, manager, unwatch, notifier };
    },
    close: async ({ controller, manager, unwatch }) => {
      await unwatch();
      await manager.remove(controller);
    },
  });
}
