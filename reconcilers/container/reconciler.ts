// Container reconciler: makes the supervisor, storage and logs match each container's spec.
// Level-triggered: it receives an id, re-reads the record and the process registry, and acts on
// the difference between what the spec wants (`desired`, `runGeneration`) and what status and
// the supervisor show. It keeps no memory of API calls: running it twice, or after a crash at
// any line, converges to the same result. Anything that waits on time (a stop's grace period, a
// restart's back-off) is a deadline in status and a `requeueAfter`, never a sleeping worker;
// exits reach it as keys through the registry.
import { rmSync } from 'node:fs';
import { isCode } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import type { ContainerPhase, ContainerSpec, ContainerStatus, Resource } from '../../store/types.ts';
import { KIND } from '../../store/types.ts';
import type { ReconcilerStore } from '../store-like.ts';
import type { ContainerReconcilerDeps, TaskState } from './deps.ts';
import { decideRestart } from './restart-policy.ts';
import { RunSteps, type ReconcileContext } from './run-steps.ts';
import type { Run, RunRegistry } from './runs.ts';
import { parseSignal } from './signals.ts';
import { StagedStatus } from './staged-status.ts';

export type { ReconcileContext } from './run-steps.ts';

type C = { spec: ContainerSpec; status: ContainerStatus };
type Requeue = number | undefined;

/**
 * After SIGKILL, how long until the reconciler looks again if no exit has woken it (an exit
 * event lost while the supervisor's stream was down; the run's Wait backstop normally answers).
 */
const KILL_RECHECK_MS = 5_000;

/** Phases in which a task is (or was, for a leftover) alive. */
const live = (p: ContainerPhase) => p === 'running' || p === 'paused';

export class ContainerReconciler {
  readonly name = 'container';
  readonly kind = KIND.container;
  private readonly store: ReconcilerStore;
  private readonly deps: ContainerReconcilerDeps;
  private readonly runs: RunRegistry;
  private readonly status: StagedStatus;
  private readonly steps: RunSteps;

  constructor(store: ReconcilerStore, deps: ContainerReconcilerDeps, runs: RunRegistry) {
    this.store = store;
    this.deps = deps;
    this.runs = runs;
    this.status = new StagedStatus(store);
    this.steps = new RunSteps(store, deps, runs, this.status);
  }

  async reconcile(id: string, ctx: ReconcileContext): Promise<void | { requeueAfter: number }> {
    const r = this.store.get<ContainerSpec, ContainerStatus>(KIND.container, id);
    if (!r) return;
    let requeue: Requeue;
    try {
      if (r.spec.desired === 'removed') {
        requeue = await this.remove(id, ctx);
      } else {
        requeue = await this.converge(id, r, ctx);
        // Seen and acted on, also when what it asked for now waits on a deadline.
        this.status.stage(id, (x) => ({ ...x, observedGeneration: Math.max(x.observedGeneration, r.generation) }));
      }
    } finally {
      // Whatever the steps staged, also when one of them threw: what happened is recorded.
      this.status.flush(id);
    }
    return requeue === undefined ? undefined : { requeueAfter: Math.max(0, requeue) };
  }

  /** One pass from what is observed toward the spec; status changes are written once, at the end. */
  private async converge(id: string, r: Resource<ContainerSpec, ContainerStatus>, ctx: ReconcileContext): Promise<Requeue> {
    const spec = r.spec;
    if (!this.status.get(id).prepared) await this.steps.prepare(id, spec);

    let run = this.runs.get(id);
    if (run?.exit) {
      await this.collect(id, run, spec);
      run = undefined;
    }
    if (!run && live(this.status.get(id).phase)) {
      // Status says a task is alive but this process holds no run: a leftover of a daemon that
      // crashed. It is stopped with the same deadline steps as any stop, then collected.
      const wait = await this.settleLeftover(id, spec, ctx);
      if (wait !== undefined) return wait;
    }

    const wantUp = spec.desired === 'running' || spec.desired === 'paused';
    const newRun = spec.runGeneration > this.status.get(id).runGeneration;
    let requeue: Requeue;
    if (run) {
      if (!wantUp || newRun) return this.stopStep(id, spec, newRun);
      await this.pauseStep(id, spec);
    } else {
      const phase = this.status.get(id).phase;
      if (wantUp && newRun) {
        await this.steps.startRun(id, ctx);
        // With the start's outcome (running, or the error): what `docker start` waits for.
        this.status.stage(id, (s) => ({ ...s, runGeneration: spec.runGeneration, restartAt: null, restartOnBoot: false }));
      } else if (wantUp && phase === 'restarting') {
        requeue = await this.restartWhenDue(id, ctx);
      } else if (wantUp && this.status.get(id).restartOnBoot) {
        this.status.stage(id, (s) => ({ ...s, restartOnBoot: false }));
        if (wantsRestartOnBoot(spec)) await this.steps.startRun(id, ctx);
      } else if (!wantUp && (phase === 'restarting' || this.status.get(id).restartOnBoot)) {
        this.status.stage(id, (s) => ({ ...s, phase: phase === 'restarting' ? 'exited' : phase, restartAt: null, restartOnBoot: false }));
      }
    }
    return requeue;
  }

  /** Collect an exited run; then its restart policy or auto-removal, unless a new run replaces it. */
  private async collect(id: string, run: Run, spec: ContainerSpec): Promise<void> {
    const ranMs = await this.steps.finishRun(id, run);
    const s = this.status.get(id);
    if (spec.runGeneration > s.runGeneration) return;
    const wantUp = spec.desired === 'running' || spec.desired === 'paused';
    if (wantUp && decideRestart(spec.hostConfig.RestartPolicy, s.exitCode, s.restartCount, spec.manuallyStopped)) {
      // The reference daemon's back-off: 100 ms, doubling while runs last under 10 s, at most 1 min.
      const prev = s.restartDelayMs ?? 0;
      const delay = ranMs >= 10_000 || !prev ? 100 : Math.min(prev * 2, 60_000);
      this.status.set(id, (x) => ({ ...x, phase: 'restarting', restartAt: Date.now() + delay, restartDelayMs: delay }));
      return;
    }
    if (s.restartDelayMs) this.status.stage(id, (x) => ({ ...x, restartDelayMs: 0 }));
    if (spec.hostConfig.AutoRemove) {
      this.store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, id, (sp) => ({ ...sp, desired: 'removed', remove: { force: true, volumes: true } }));
    }
  }

  private async restartWhenDue(id: string, ctx: ReconcileContext): Promise<Requeue> {
    const at = this.status.get(id).restartAt ?? 0;
    if (at > Date.now()) return at - Date.now();
    this.status.stage(id, (s) => ({ ...s, phase: 'exited', restartCount: s.restartCount + 1, restartAt: null }));
    await this.steps.startRun(id, ctx);
    return undefined;
  }

  /**
   * Stop without waiting: the stop signal and a deadline in status the first time; SIGKILL once
   * the deadline has passed. The run's exit (an event, or Wait) queues the key to collect it.
   */
  private async stopStep(id: string, spec: ContainerSpec, replacing: boolean): Promise<Requeue> {
    const s = this.status.get(id);
    const { signal, timeout } = stopParams(spec, replacing || spec.desired === 'stopped');
    if (s.stopDeadline == null) {
      if (s.phase === 'paused') await this.deps.supervisor.resume(id).catch(() => {});
      await this.steps.signal(id, parseSignal(signal, 'SIGTERM'));
      const deadline = timeout < 0 ? -1 : Date.now() + timeout * 1000;
      this.status.stage(id, (x) => ({ ...x, phase: x.phase === 'paused' ? 'running' : x.phase, stopDeadline: deadline, stopKilled: false }));
      if (timeout !== 0) return timeout < 0 ? undefined : timeout * 1000;
    }
    return this.killWhenDue(id);
  }

  /** SIGKILL once the stop deadline has passed (again on every recheck: it is idempotent). */
  private async killWhenDue(id: string): Promise<Requeue> {
    const deadline = this.status.get(id).stopDeadline ?? -1;
    if (deadline < 0) return undefined;
    if (deadline > Date.now()) return deadline - Date.now();
    await this.deps.supervisor.killTask(id, 9, { all: true }).catch((err) => {
      if (!isCode(err, 'NotFound')) throw err;
    });
    this.status.stage(id, (x) => ({ ...x, stopKilled: true }));
    return KILL_RECHECK_MS;
  }

  private async pauseStep(id: string, spec: ContainerSpec): Promise<void> {
    const phase = this.status.get(id).phase;
    if (spec.desired === 'paused' && phase === 'running') {
      await this.deps.supervisor.pause(id);
      this.status.stage(id, (x) => ({ ...x, phase: 'paused' }));
    } else if (spec.desired !== 'paused' && phase === 'paused') {
      await this.deps.supervisor.resume(id);
      this.status.stage(id, (x) => ({ ...x, phase: 'running' }));
    }
  }

  /**
   * A task this process has no run for (the daemon crashed or was killed): stopped as the
   * reference daemon does at boot without live-restore (stop signal, SIGKILL at the deadline),
   * through the same deadline steps, then collected. Answers a requeue while it is stopping.
   */
  private async settleLeftover(id: string, spec: ContainerSpec, ctx: ReconcileContext): Promise<Requeue> {
    const sup = this.deps.supervisor;
    let task: TaskState | null = null;
    try {
      task = await sup.getTask(id);
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
    }
    if (task && task.status !== 'STOPPED' && task.status !== 'CREATED' && task.status !== 'UNKNOWN') {
      if (this.status.get(id).stopDeadline == null) {
        ctx.log.info('stopping container left running by a previous daemon');
        return this.stopStep(id, spec, spec.runGeneration > this.status.get(id).runGeneration);
      }
      return this.killWhenDue(id);
    }
    let exitStatus = task?.exitStatus ?? 255;
    let exitedAt = task?.exitedAt ?? null;
    if (task) {
      try {
        const d = await sup.deleteTask(id);
        exitStatus = d.exitStatus;
        exitedAt = d.exitedAt;
      } catch (err) {
        if (!isCode(err, 'NotFound')) ctx.log.warn({ err }, 'deleting a leftover task failed');
      }
    }
    await sup.deleteContainer(id).catch(() => {});
    await this.deps.network?.detach(id).catch(() => {});
    await this.deps.layers.unmountRW(id).catch(() => {});
    this.status.set(id, (s) => ({
      ...s,
      restartOnBoot: wantsRestartOnBoot(spec),
      phase: 'exited',
      pid: 0,
      exitCode: exitStatus,
      finishedAt: rfc3339Nano(exitedAt ?? new Date()),
      exitSeq: s.exitSeq + 1,
      stopDeadline: null,
      stopKilled: false,
    }));
    return undefined;
  }

  /** Stop every running container (daemon shutdown), each within its stop timeout capped at `timeoutS`. */
  async shutdown(timeoutS: number): Promise<void> {
    await Promise.all(
      this.runs.ids().map(async (id) => {
        const run = this.runs.get(id);
        const r = this.store.get<ContainerSpec, ContainerStatus>(KIND.container, id);
        if (!run || !r) return;
        try {
          if (!run.exit) await this.steps.stopProcess(id, run, r.spec.config.StopSignal, Math.min(timeoutS, r.spec.config.StopTimeout ?? 10));
          await this.steps.finishRun(id, run);
          if (wantsRestartOnBoot(r.spec)) this.status.set(id, (s) => ({ ...s, restartOnBoot: true }));
        } catch (err) {
          this.deps.log.warn({ err, id }, 'stopping container at shutdown failed');
        }
      }),
    );
  }

  /** Removal: SIGKILL a live run and wait for its exit by requeue, then tear everything down. */
  private async remove(id: string, ctx: ReconcileContext): Promise<Requeue> {
    const run = this.runs.get(id);
    if (run && !run.exit) {
      await this.steps.signal(id, 9);
      this.status.stage(id, (s) => ({ ...s, stopKilled: true }));
      return KILL_RECHECK_MS;
    }
    if (run) await this.steps.finishRun(id, run);
    else if (!this.steps.supervisorClean.has(id)) await this.steps.clearSupervisor(id);
    this.status.set(id, (s) => ({ ...s, phase: 'removing' }));
    const network = this.deps.network;
    await Promise.all([
      network ? network.detach(id).catch(() => {}).then(() => network.release(id)) : undefined,
      this.deps.layers.removeRW(id),
      this.steps.removeContainerDir(id),
    ]);
    // Normally gone with the run's FIFOs already: one lstat.
    rmSync(this.steps.fifoDir(id), { recursive: true, force: true });
    this.steps.supervisorClean.delete(id);
    this.status.drop(id);
    this.store.delete(KIND.container, id);
    if (this.deps.log.isLevelEnabled?.('debug') ?? true) ctx.log.debug('container removed');
    return undefined;
  }
}

/**
 * The signal and grace period (seconds, negative: no end) of a stop. The options of `docker
 * stop/restart` apply to the stop they asked for; a container stopped by the daemon (a leftover)
 * uses its own configuration.
 */
function stopParams(spec: ContainerSpec, asked: boolean): { signal: string | undefined; timeout: number } {
  const opts = asked ? spec.stopOptions : undefined;
  return { signal: opts?.signal || spec.config.StopSignal, timeout: opts?.timeout ?? spec.config.StopTimeout ?? 10 };
}

/** Containers the daemon (not the user) stopped come back at the next start when their policy says so. */
function wantsRestartOnBoot(spec: ContainerSpec): boolean {
  const p = spec.hostConfig.RestartPolicy?.Name ?? '';
  return !spec.manuallyStopped && spec.desired !== 'stopped' && spec.desired !== 'removed' && (p === 'always' || p === 'unless-stopped');
}

export type { C as ContainerResource };
