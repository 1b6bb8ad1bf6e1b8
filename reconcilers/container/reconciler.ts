// Container reconciler: makes the supervisor, storage and logs match each container's spec.
// Level-triggered: it receives an id, re-reads the record, the process registry and (for a run
// this process has no handle for) the supervisor, turns the difference between what the spec
// wants and what it observed into the lifecycle machine's events, and lets the machine (in
// machine.ts) decide which step is legal and run it through the named effects it provides
// (effects.ts).
//
// The machine is driven with the pure `transition` function on a snapshot, not as a live actor:
// a container has no in-memory actor to lose in a crash, the snapshot of a settled state is
// rebuilt from status, and a transient one (a stop in its grace period) lives in memory between
// reconciles and is rebuilt from observation after a crash. Anything that waits on time is a
// machine delay that becomes `requeueAfter`; a worker never sleeps. Exits reach it as keys
// through the registry.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fromPromise, type SnapshotFrom } from 'xstate';
import { topState } from '../../controllers/machine-driver.ts';
import { MachineHost, type Held } from '../../controllers/machine-host.ts';
import { errorCode, isCode } from '../../lib/errors.ts';
import { type ContainerSpec, type ContainerStatus, Containers, type ContainerResource as CR } from '../../store/kinds/container.ts';

import type { ReconcilerStore } from '../store-like.ts';
import type { ContainerReconcilerDeps } from './deps.ts';
import {
  containerLifecycle,
  restoredContext,
  settledStateOf,
  SETTLED,
  type CollectOutput,
  type ContainerFacts,
  type ContainerEvent,
  type EffectInput,
  type StartOutput,
} from './machine.ts';
import { HealthChecks } from './health.ts';
import { applyResources } from './resources-step.ts';
import { RunAdoption } from './adopt-step.ts';
import { RunSteps, type ReconcileContext } from './run-steps.ts';
import { ContainerEffects } from './effects.ts';
import type { RunRegistry } from './runs.ts';
import { stopParams } from './signals.ts';
import { StagedStatus } from './staged-status.ts';
import { KeySource, type Source } from '../../controllers/source.ts';

export type { ReconcileContext } from './run-steps.ts';

type C = { spec: ContainerSpec; status: ContainerStatus };
type Machine = ReturnType<typeof containerLifecycle.provide>;
type Snapshot = SnapshotFrom<Machine>;


/** States in which a task is (or may be) alive. */
const ALIVE = new Set(['running', 'pausing', 'paused', 'resuming', 'stopping', 'killing']);

/** Rounds of observe-then-drive in one reconcile (an exit collected, then a start asked for). */
const MAX_ROUNDS = 3;

export class ContainerReconciler {
  readonly name = 'container';
  readonly kind = Containers.name;
  private readonly store: ReconcilerStore;
  private readonly deps: ContainerReconcilerDeps;
  private readonly runs: RunRegistry;
  private readonly status: StagedStatus;
  private readonly steps: RunSteps;
  private readonly adoption: RunAdoption;
  /** The machine's effects (./effects.ts). */
  private readonly effects: ContainerEffects;
  /** Machines in transient states, kept between reconciles; settled ones are rebuilt from status. */
  private readonly machines: MachineHost<Machine>;
  /** Healthcheck probes of running containers (when the wiring gives a way to run them). */
  private readonly health: HealthChecks | undefined;
  /** Probe ends (a source of the container controller; silent without probes). */
  readonly probeEnds: Source<string>;

  constructor(store: ReconcilerStore, deps: ContainerReconcilerDeps, runs: RunRegistry) {
    this.store = store;
    this.deps = deps;
    this.runs = runs;
    this.status = new StagedStatus(store);
    this.steps = new RunSteps(store, deps, runs, this.status);
    this.adoption = new RunAdoption(store, deps, runs, this.status, this.steps);
    this.effects = new ContainerEffects(store, deps, runs, this.status, this.steps, (id) => this.machines.forget(id));
    if (deps.probes) this.health = new HealthChecks(deps.probes);
    this.probeEnds = this.health?.ends ?? new KeySource();
    const machine = containerLifecycle.provide({
      actors: {
        startRun: fromPromise<StartOutput, EffectInput>(({ input, signal }) => this.effects.startEffect(input.id, signal)),
        signalStop: fromPromise<void, EffectInput>(({ input, signal }) => this.effects.signalStopEffect(input.id, signal)),
        killRun: fromPromise<void, EffectInput>(({ input }) => this.effects.killEffect(input.id)),
        pauseRun: fromPromise<void, EffectInput>(({ input }) => this.effects.pauseEffect(input.id, true)),
        resumeRun: fromPromise<void, EffectInput>(({ input }) => this.effects.pauseEffect(input.id, false)),
        collectRun: fromPromise<CollectOutput, EffectInput>(({ input, signal }) => this.effects.collectEffect(input.id, signal)),
        teardown: fromPromise<void, EffectInput>(({ input, signal }) => this.effects.teardownEffect(input.id, signal)),
      },
    });
    this.machines = new MachineHost(machine, { name: 'container' });
  }

  /** Daemon shutdown: the effects under way are aborted. */
  stop(): void {
    this.machines.stop();
  }

  /**
   * Supervisor containers with no record here (a crash between the supervisor's create and our
   * record's removal): killed and deleted, so no shim outlives what the store knows. At start-up.
   */
  async collectOrphans(): Promise<string[]> {
    const sup = this.deps.supervisor;
    const ids = await sup.listContainers();
    const orphans = ids.filter((id) => !this.store.get(Containers, id));
    await Promise.all(orphans.map((id) => this.steps.records.clear(id)));
    // Network namespaces of runs whose container is gone (a crash between its removal's steps).
    const namespaces = await readdir(join(this.deps.execRoot, 'netns')).catch(() => [] as string[]);
    await Promise.all(namespaces.filter((id) => !this.store.get(Containers, id)).map((id) => this.steps.net.releaseNetns(id).catch(() => {})));
    // Shims the supervisor lost (a task create cut off by a crash): an earlier life's, with no
    // task behind them. (One this life started may be in the middle of its create.)
    for (const id of new Set((await sup.staleShimIds?.()) ?? [])) {
      const hasTask = await sup.getTask(id).then(() => true, (err: unknown) => !isCode(err, 'NotFound'));
      if (!hasTask) await sup.reapShim?.(id);
    }
    return orphans;
  }

  async reconcile(id: string, ctx: ReconcileContext): Promise<void | { requeueAfter: number }> {
    const r = this.store.get(Containers, id);
    if (!r) {
      this.machines.forget(id);
      this.effects.startRetries.forget(id);
      return;
    }
    let requeue: number | undefined;
    try {
      if (!this.status.get(id).prepared && r.spec.desired !== 'removed') {
        try {
          await this.steps.prepare(id, r.spec);
        } catch (err) {
          // Seen and failed: the create that waits for it answers with the reason (and is retried).
          this.status.stage(id, (x) => ({ ...x, error: err instanceof Error ? err.message : String(err), errorCode: errorCode(err), observedGeneration: Math.max(x.observedGeneration, r.generation) }));
          throw err;
        }
      }
      let held = this.machines.current(id, () => this.restore(r));
      // Live restore: a task of the last life still running is taken over rather than stopped.
      if (!this.runs.get(id) && ALIVE.has(topState(held.snapshot)) && this.adoption.enabled()) await this.adoption.adopt(id, ctx);
      // Observe, drive; again when the machine moved (what it now accepts may differ).
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const cur = this.store.get(Containers, id);
        if (!cur) break;
        const seen = { ...cur, status: this.status.get(id) };
        const events = await this.observe(seen, held.snapshot);
        const before = JSON.stringify(held.snapshot.value);
        const res = await this.machines.run(id, held, [{ type: 'OBSERVED', facts: this.facts(seen) }, ...events], { signal: ctx.signal, now: Date.now });
        held = { snapshot: res.snapshot, timers: res.timers };
        requeue = res.requeueAfter;
        if (res.snapshot.status === 'done' || JSON.stringify(res.snapshot.value) === before) break;
      }
      // A start the supervisor's absence cut off is tried again (start-retry.ts).
      const retry = this.effects.startRetries.delay(id);
      const now = this.store.get(Containers, id);
      const wantsRun = !!now && now.spec.runGeneration > this.status.get(id).runGeneration && (now.spec.desired === 'running' || now.spec.desired === 'paused');
      if (retry !== undefined && !wantsRun) this.effects.startRetries.forget(id);
      else if (retry !== undefined) requeue = requeue === undefined ? retry : Math.min(requeue, retry);
      const state = topState(held.snapshot);
      const run = this.runs.get(id);
      const spec = this.store.get(Containers, id)?.spec;
      if ((state === 'running' || state === 'paused') && run && !run.exit && spec) {
        await applyResources(id, spec, this.deps, this.status);
        await this.steps.net.leavePrimary(id);
      }
      if (state === 'running' && run && !run.exit && spec && this.health) {
        // A probe due is started beside this reconcile; the wait for the next is a requeue.
        const next = this.health.step(id, spec.config, this.status);
        if (next !== undefined) requeue = requeue === undefined ? next : Math.min(requeue, next);
      } else {
        this.health?.forget(id);
      }
      this.keep(id, held);
      if (this.store.get(Containers, id)) {
        // Seen and acted on, also when what it asked for now waits on a deadline.
        this.status.stage(id, (x) => ({ ...x, observedGeneration: Math.max(x.observedGeneration, r.generation) }));
      }
    } finally {
      // Whatever the steps staged, also when one of them threw: what happened is recorded.
      this.status.flush(id);
    }
    return requeue === undefined ? undefined : { requeueAfter: requeue };
  }

  /** The settled state the container's status records, with the machine's memory from status. */
  private restore(r: CR): Held<Machine> {
    const s = r.status;
    const value = settledStateOf(s.phase);
    const snapshot = this.machines.machine.resolveState({
      value,
      context: restoredContext(this.facts(r), { stopDeadline: s.stopDeadline ?? null, restartAt: s.restartAt ?? null, restartCount: s.restartCount, restartDelayMs: s.restartDelayMs ?? 0 }),
    }) as Snapshot;
    return { snapshot, timers: s.timers ?? [] };
  }

  /** Mirror the machine's memory into status; hold a transient machine in memory. */
  private keep(id: string, held: Held<Machine>): void {
    const state = topState(held.snapshot);
    if (held.snapshot.status === 'done' || !this.store.get(Containers, id)) {
      this.machines.forget(id);
      return;
    }
    const c = held.snapshot.context;
    const settled = (SETTLED as readonly string[]).includes(state);
    this.status.stage(id, (s) => ({
      ...s,
      phase: state === 'restarting' || (state === 'exited' && s.phase === 'restarting') ? (state as 'restarting' | 'exited') : s.phase,
      restartCount: c.restartCount,
      restartDelayMs: c.restartDelayMs,
      restartAt: c.restartAt,
      stopDeadline: c.stopDeadline,
      timers: settled ? held.timers : [],
    }));
    this.machines.keep(id, held, settled);
  }

  /** The spec's wishes and the clock, as the machine reads them. */
  private facts(r: CR): ContainerFacts {
    const spec = r.spec;
    const { timeout } = stopParams(r);
    return {
      id: r.name,
      now: Date.now(),
      wantUp: spec.desired === 'running' || spec.desired === 'paused',
      policy: spec.hostConfig.RestartPolicy,
      autoRemove: !!spec.hostConfig.AutoRemove,
      manuallyStopped: spec.manuallyStopped,
      stopTimeoutS: timeout,
    };
  }

  /**
   * The events the difference between spec and the observed world calls for. The machine
   * ignores those its state does not accept, so this need not know which are legal.
   */
  private async observe(r: CR, snapshot: Snapshot): Promise<ContainerEvent[]> {
    const id = r.name;
    const spec = r.spec;
    const state = topState(snapshot);
    const events: ContainerEvent[] = [];
    const run = this.runs.get(id);
    if (run?.exit) events.push({ type: 'EXITED' });
    else if (!run && ALIVE.has(state) && (await this.leftoverGone(id))) events.push({ type: 'EXITED' });
    const newRun = spec.runGeneration > r.status.runGeneration;
    const wantUp = spec.desired === 'running' || spec.desired === 'paused';
    if (spec.desired === 'removed') events.push({ type: 'REMOVE' });
    // A new run: a live one is stopped and replaced (RESTART), else one starts (START).
    else if (newRun && wantUp && !this.effects.startRetries.delay(id)) events.push({ type: 'RESTART' }, { type: 'START' });
    else if (!wantUp) events.push({ type: 'STOP' });
    // A leftover of a crashed daemon is stopped whatever it wants (no live-restore).
    if (!run && ALIVE.has(state)) events.push({ type: 'STOP' });
    if (wantUp && !newRun && r.status.restartOnBoot && !run) {
      this.status.stage(id, (s) => ({ ...s, restartOnBoot: false }));
      if (wantsRestartOnBoot(spec)) events.push({ type: 'START' });
    } else if (!wantUp && r.status.restartOnBoot) {
      this.status.stage(id, (s) => ({ ...s, restartOnBoot: false }));
    }
    if (spec.desired === 'paused') events.push({ type: 'PAUSE' });
    if (spec.desired === 'running') events.push({ type: 'RESUME' });
    return events;
  }

  /** For a task this process has no run for: has it ended (or is it gone)? */
  private async leftoverGone(id: string): Promise<boolean> {
    try {
      const t = await this.deps.supervisor.getTask(id);
      return t.status === 'STOPPED' || t.status === 'CREATED' || t.status === 'UNKNOWN';
    } catch (err) {
      if (isCode(err, 'NotFound')) return true;
      throw err;
    }
  }

  /** Stop every running container (daemon shutdown), each within its stop timeout capped at `timeoutS`. */
  async shutdown(timeoutS: number): Promise<void> {
    await Promise.all(
      this.runs.ids().map(async (id) => {
        const run = this.runs.get(id);
        const r = this.store.get(Containers, id);
        if (!run || !r) return;
        try {
          if (!run.exit) await this.steps.stop.stopProcess(id, run, r.spec.config.StopSignal, Math.min(timeoutS, r.spec.config.StopTimeout ?? 10));
          await this.steps.stop.finishRun(id, run);
          if (wantsRestartOnBoot(r.spec)) this.status.set(id, (s) => ({ ...s, restartOnBoot: true }));
        } catch (err) {
          this.deps.log.warn({ err, id }, 'stopping container at shutdown failed');
        }
      }),
    );
  }

  /**
   * Daemon shutdown with live restore: the containers go on running. Only this process lets go of
   * them: exit watches end, their streams close (the FIFOs stay for the next daemon) and their logs
   * are flushed and closed.
   */
  async leaveRunning(): Promise<void> {
    await Promise.all(
      this.runs.ids().map(async (id) => {
        const run = this.runs.get(id);
        if (!run) return;
        this.runs.stopWatching(run);
        run.io.close();
        await run.logger?.close().catch((err: unknown) => this.deps.log.warn({ err, id }, 'closing the log of a container left running failed'));
      }),
    );
  }
}

/** Containers the daemon (not the user) stopped come back at the next start when their policy says so. */
function wantsRestartOnBoot(spec: ContainerSpec): boolean {
  const p = spec.hostConfig.RestartPolicy?.Name ?? '';
  return !spec.manuallyStopped && spec.desired !== 'stopped' && spec.desired !== 'removed' && (p === 'always' || p === 'unless-stopped');
}

export type { C as ContainerResource };
