// Live restore's adoption: a container whose status says it runs, for which this process has no
// run, while the supervisor still has its task alive (the daemon was stopped with --live-restore,
// or killed): the task is taken over instead of stopped. Its FIFOs are opened again (what it wrote
// meanwhile, up to the pipes' capacity, is read first, in order), its log appended to, its root
// filesystem and volumes counted as in use, its published ports proxied again (rules and claims were
// kept), and the run registered with the same pid, so exits, stop, exec, attach and healthchecks
// work as for a run started here. Network endpoints are left as they are: the task's namespace
// still holds them.
import { linkedContainers } from './links.ts';
import type { ReconcileContext } from '../../controllers/controller.ts';
import { isCode } from '../../lib/errors.ts';
import { Containers } from '../../store/kinds/container.ts';
import type { ReconcilerStore } from '../store-like.ts';
import type { ContainerReconcilerDeps, LoggerLike } from './deps.ts';
import { containerLogInfo } from './deps.ts';
import type { RunRegistry } from './runs.ts';
import { withCloseIO } from './close-io.ts';
import type { RunSteps } from './run-steps.ts';
import type { StagedStatus } from './staged-status.ts';

export class RunAdoption {
  private readonly store: ReconcilerStore;
  private readonly deps: ContainerReconcilerDeps;
  private readonly runs: RunRegistry;
  private readonly status: StagedStatus;
  private readonly steps: RunSteps;

  constructor(store: ReconcilerStore, deps: ContainerReconcilerDeps, runs: RunRegistry, status: StagedStatus, steps: RunSteps) {
    this.store = store;
    this.deps = deps;
    this.runs = runs;
    this.status = status;
    this.steps = steps;
  }

  /** Whether live restore is on now (the option is reloadable). */
  enabled(): boolean {
    return !!this.deps.liveRestore?.();
  }

  /**
   * Takes the container's live task over; false when there is none to take (it ended while the
   * daemon was away, or the supervisor lost it): the caller then collects it as a leftover.
   */
  async adopt(id: string, ctx: ReconcileContext): Promise<boolean> {
    const sup = this.deps.supervisor;
    let task;
    try {
      task = await sup.getTask(id);
    } catch (err) {
      if (isCode(err, 'NotFound')) return false;
      throw err;
    }
    if (task.status !== 'RUNNING' && task.status !== 'PAUSED' && task.status !== 'PAUSING') return false;
    const r = this.store.get(Containers, id);
    if (!r) return false;
    const spec = r.spec;
    const status = this.status.get(id);
    const { oci, rootfs } = await this.steps.start.runSpec(id, spec, linkedContainers(this.store, spec));
    this.steps.records.clean.delete(id);
    const io = await this.deps.stdio.open({ dir: this.steps.paths.fifoDir(id), procId: 'init', stdin: !!spec.config.OpenStdin, tty: !!spec.config.Tty });
    const hub = withCloseIO(this.deps.stdio.hub(io), () => sup.closeIO(id, undefined));
    this.runs.announce(id, hub, (err) => ctx.log.warn({ err }, 'attach watcher failed'));
    let logger: LoggerLike | null = null;
    if (status.logPath) {
      // A remote log driver that cannot connect now leaves the adopted container without logging.
      logger = await Promise.resolve()
        .then(() => this.deps.logging.open(id, status.logPath, spec.hostConfig.LogConfig, containerLogInfo(spec)))
        .catch((err: unknown) => {
          ctx.log.warn({ err }, 'starting the log driver of the adopted container failed');
          return null;
        });
      if (logger) {
        const l = logger;
        hub.subscribe((stream, chunk) => l.log(stream, chunk), undefined, { copies: l.copiesChunks === true });
      }
    }
    const startedAt = Date.parse(status.startedAt);
    this.runs.add(id, { io, hub, logger, pid: task.pid, startedAt: Number.isFinite(startedAt) ? startedAt : Date.now(), oci, rootfs });
    const ports = this.deps.ports?.adopt ? await this.deps.ports.adopt(id).catch((err: unknown) => {
      ctx.log.warn({ err }, 'proxying the published ports of an adopted container again failed');
      return status.ports;
    }) : status.ports;
    this.status.stage(id, (s) => ({ ...s, pid: task.pid, phase: task.status === 'RUNNING' ? 'running' : 'paused', ports }));
    ctx.log.info({ pid: task.pid }, 'adopted the running container (live restore)');
    return true;
  }
}
