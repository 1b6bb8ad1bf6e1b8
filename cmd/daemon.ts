// The daemon's process: pidfile, signals, start of its components (cmd/components/) and their
// orderly close on SIGTERM/SIGINT within the shutdown deadline.
import type { Logger } from 'pino';
import { makeLogger } from './log-format.ts';
import type { ConfigSources, DaemonConfig } from '../config/load.ts';
import { startComponents, type StartedComponents } from './components.ts';
import { daemonComponents } from './components/index.ts';
import type { ComponentValues } from './components/registry.ts';
import { levelOf } from './daemon-helpers.ts';
import { applyDaemonOptions } from './daemon-options.ts';
import { acquirePidfile } from './pidfile.ts';

export async function runDaemon(config: DaemonConfig, sources: unknown): Promise<number> {
  const log = makeLogger({ level: levelOf(config), format: config.logFormat || 'text', raw: config.rawLogs });
  // SIGHUP reloads the configuration file (set up once the daemon runs); until then, and after
  // a refused reload, it changes nothing — it must never end the daemon, Node's default.
  let onReload: () => void = () => log.warn('SIGHUP before the daemon was ready: ignored');
  process.on('SIGHUP', () => onReload());
  const releasePidfile = acquirePidfile(config.pidfile);

  // Listened for from the start: a SIGTERM while the components start (the API may already answer)
  // stops the daemon once they have, through the same orderly close, never Node's default exit
  // (which would leave the supervisor and its shims behind).
  const stopSignal = waitForSignal(log);
  // An uncaught exception or unhandled rejection leaves the process in a state nobody can vouch
  // for (Node's documentation says not to resume): the error is logged with its source-mapped
  // stack and the daemon exits 1 at once, with no orderly close to run through that state. systemd
  // restarts it (engine.service: Restart=always); containers are then treated as after a kill
  // -9: adopted with live restore, else stopped at the start.
  const crash = (what: string) => (err: unknown) => {
    try {
      log.fatal({ err }, `${what}: engined exits`);
    } finally {
      releasePidfileLogged(releasePidfile, log);
      // pino flushes its buffered lines on 'exit'.
      process.exit(1);
    }
  };
  process.on('unhandledRejection', crash('unhandled rejection'));
  process.on('uncaughtException', crash('uncaught exception'));

  const configSources = (sources ?? {}) as Partial<ConfigSources>;
  let started: StartedComponents<ComponentValues>;
  try {
    // Refuses options not implemented yet; sets the daemon's oom_score_adj and cgroup rt budget.
    applyDaemonOptions(config, log);
    // A component that fails to start has the ones before it closed before this rethrows.
    started = await startComponents(daemonComponents({ cfg: config, log, sources: configSources }), log);
  } catch (err) {
    log.error({ err }, 'engined failed to start');
    releasePidfileLogged(releasePidfile, log);
    throw err;
  }
  const reload = started.get('reload');
  onReload = () => reload.signal();
  // Type=notify: the service is up once every component, the API among them, has started.
  const notifier = reload.notifier;
  void notifier?.notify({ READY: '1', STATUS: `serving the Engine API on ${config.hosts.join(', ')}` });

  await stopSignal;

  log.info('shutting down');
  void notifier?.notify({ STOPPING: '1', STATUS: 'shutting down' });
  const deadline = setTimeout(() => {
    log.error('shutdown took too long; exiting');
    process.exit(1);
  }, (Math.max(config.shutdownTimeout, 0) + 60) * 1000);
  deadline.unref();
  await started.close();
  releasePidfileLogged(releasePidfile, log);
  log.info('engined stopped');
  log.flush();
  return 0;
}

function releasePidfileLogged(release: () => void, log: Logger): void {
  try {
    release();
  } catch (err) {
    log.warn({ err, step: 'pidfile' }, 'cleanup step failed');
  }
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
