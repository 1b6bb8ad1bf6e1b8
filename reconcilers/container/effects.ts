// The container lifecycle machine's effects (its named actors, provided by the reconciler):
// start a run, signal a stop, kill, pause and resume, collect an exited run (or what a crashed
// daemon left of one), and tear the container down once removed. Each performs one step through
// the run steps and stages what it observed in status; the machine decides which is due.
import type { Logger } from 'pino';
import { isCode } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { Containers } from '../../store/kinds/container.ts';

import type { ReconcilerStore } from '../store-like.ts';
import type { ContainerReconcilerDeps } from './deps.ts';
import type { CollectOutput, StartOutput } from './machine.ts';
import type { ReconcileContext, RunSteps } from './run-steps.ts';
import type { RunRegistry } from './runs.ts';
import { parseSignal, stopParams } from './signals.ts';
import { decideRestart } from './restart-policy.ts';
import type { StagedStatus } from './staged-status.ts';
import { StartRetries } from './start-retry.ts';

export class ContainerEffects {
  private readonly store: ReconcilerStore;
  private readonly deps: ContainerReconcilerDeps;
  private readonly runs: RunRegistry;
  private readonly status: StagedStatus;
  private readonly steps: RunSteps;
  /** Drops the reconciler's machine of a container torn down. */
  private readonly forget: (id: string) => void;
  /** Starts cut off by the supervisor being out of reach, to be tried again (the reconciler requeues). */
  readonly startRetries = new StartRetries();

  constructor(store: ReconcilerStore, deps: ContainerReconcilerDeps, runs: RunRegistry, status: StagedStatus, steps: RunSteps, forget: (id: string) => void) {
    this.store = store;
    this.deps = deps;
    this.runs = runs;
    this.status = status;
    this.steps = steps;
    this.forget = forget;
  }

  /** What an effect works with: its own signal (the host aborts it), and a logger naming the container (made on first use). */
  private ctx(id: string, signal: AbortSignal): ReconcileContext {
    let log: Logger | undefined;
    const parent = this.deps.log;
    return {
      signal,
      get log() {
        return (log ??= parent.child({ container: id }));
      },
    };
  }

  async startEffect(id: string, signal: AbortSignal): Promise<StartOutput> {
    const r = this.store.get(Containers, id)!;
    const neverRan = this.status.get(id).phase === 'created';
    const { unreachable } = await this.steps.start.startRun(id, this.ctx(id, signal));
    // The supervisor out of reach: the start stays pending, tried again after a back-off.
    if (unreachable && this.startRetries.failed(id)) return { started: false, neverRan };
    this.startRetries.settled(id);
    // With the start's outcome (running, or the error): what `docker start` waits for.
    this.status.stage(id, (s) => ({ ...s, runGeneration: Math.max(s.runGeneration, r.spec.runGeneration), restartOnBoot: false }));
    const run = this.runs.get(id);
    return { started: !!run && !run.exit, neverRan };
  }

  async signalStopEffect(id: string, signal: AbortSignal): Promise<void> {
    const r = this.store.get(Containers, id)!;
    // A stop already signalled before a daemon restart (its deadline is in status) is not signalled again.
    if (r.status.stopDeadline != null) return;
    if (!this.runs.get(id)) this.ctx(id, signal).log.info('stopping container left running by a previous daemon');
    if (this.status.get(id).phase === 'paused') {
      await this.deps.supervisor.resume(id).catch(() => {});
      this.status.stage(id, (s) => ({ ...s, phase: 'running' }));
    }
    await this.steps.stop.signal(id, parseSignal(stopParams(r).signal, 'SIGTERM'));
  }

  async killEffect(id: string): Promise<void> {
    await this.deps.supervisor.killTask(id, 9, { all: true }).catch((err) => {
      if (!isCode(err, 'NotFound')) throw err;
    });
  }

  async pauseEffect(id: string, pause: boolean): Promise<void> {
    if (pause) await this.deps.supervisor.pause(id);
    else await this.deps.supervisor.resume(id);
    this.status.stage(id, (s) => ({ ...s, phase: pause ? 'paused' : 'running' }));
  }

  async collectEffect(id: string, signal: AbortSignal): Promise<CollectOutput> {
    const run = this.runs.get(id);
    if (run) {
      const ranMs = await this.steps.stop.finishRun(id, run, (exitCode) => this.phaseAfterExit(id, exitCode));
      return { exitCode: this.status.get(id).exitCode, ranMs, leftover: false };
    }
    return { exitCode: await this.collectLeftover(id, signal), ranMs: 0, leftover: true };
  }

  /**
   * The phase an exit is recorded with: `restarting` when the machine's collect step will go on to
   * the policy's restart (the container wants to be up, no restart or removal was asked for, and the
   * policy restarts it: decideRestart, as the machine's policyRestarts guard), else `exited`.
   */
  private phaseAfterExit(id: string, exitCode: number): 'exited' | 'restarting' {
    const r = this.store.get(Containers, id);
    if (!r) return 'exited';
    const spec = r.spec;
    const wantUp = spec.desired === 'running' || spec.desired === 'paused';
    if (!wantUp || spec.runGeneration > r.status.runGeneration) return 'exited';
    return decideRestart(spec.hostConfig.RestartPolicy, exitCode, this.status.get(id).restartCount, spec.manuallyStopped) ? 'restarting' : 'exited';
  }

  /** What a crashed daemon left of a run: the task and record in the supervisor, network, mount. */
  private async collectLeftover(id: string, signal: AbortSignal): Promise<number> {
    const sup = this.deps.supervisor;
    let exitStatus = 255;
    let exitedAt: Date | null = null;
    try {
      const d = await sup.deleteTask(id);
      exitStatus = d.exitStatus;
      exitedAt = d.exitedAt;
    } catch (err) {
      if (!isCode(err, 'NotFound')) this.ctx(id, signal).log.warn({ err }, 'deleting a leftover task failed');
    }
    await sup.deleteContainer(id).catch(() => {});
    await this.steps.net.unplug(id).catch(() => {});
    // Kept at boot for live restore (ports.sweep): the run they were for is gone.
    await this.deps.ports?.unpublish(id).catch(() => {});
    await this.deps.layers.unmountRW(id).catch(() => {});
    this.status.set(id, (s) => ({
      ...s,
      phase: 'exited',
      pid: 0,
      exitCode: exitStatus,
      finishedAt: rfc3339Nano(exitedAt ?? new Date()),
      exitSeq: s.exitSeq + 1,
      stopDeadline: null,
    }));
    return exitStatus;
  }

  async teardownEffect(id: string, signal: AbortSignal): Promise<void> {
    await this.steps.stop.teardown(id);
    this.status.drop(id);
    this.forget(id);
    const r = this.store.get(Containers, id);
    // Anonymous volumes go with the container when asked (`rm -v`, `--rm`); the volume reconciler
    // removes their data once this record, the last to name them, is gone.
    if (r) this.deps.volumes?.releaseOwned(id, !!r.spec.remove?.volumes || !!r.spec.hostConfig.AutoRemove);
    this.store.delete(Containers, id);
    if (this.deps.log.isLevelEnabled?.('debug') ?? true) this.ctx(id, signal).log.debug('container removed');
  }
}
