// Pull reconciler: converges kind 'pull' records (store/kinds/pull.ts). A pull whose generation
// the status has not seen (or one left pending or pulling by a daemon that died) is started as a
// job: the download runs outside the reconcile, reports its lines to PullProgress, and on its end
// records the image and tag (pull-record.ts) and enqueues the key; that reconcile writes the
// outcome. A record marked removed (the client that asked went away) has its job aborted and is
// deleted. Registry credentials live in memory only: a pull resumed after a restart goes anonymous.
//
// The lifecycle is the machine in pull-machine.ts, driven through controllers/machine-driver.ts.
import type { Logger } from 'pino';
import { fromPromise, type SnapshotFrom } from 'xstate';
import { topState } from '../../controllers/machine-driver.ts';
import { MachineHost } from '../../controllers/machine-host.ts';
import type { AuthConfig, Distribution } from '../../drivers/distribution/types.ts';
import { errorCode, isSystemError, systemErrorMessage } from '../../lib/errors.ts';
import { parseReference } from '../../lib/reference.ts';
import { type PullSpec, Pulls, type PullResource } from '../../store/kinds/pull.ts';
import { pullLifecycle, type PullEvent, type PullOutcome } from './pull-machine.ts';
import { PullProgress } from './pull-progress.ts';
import { recordPulledImage, type PullStore } from './pull-record.ts';
import { KeySource } from '../../controllers/source.ts';

type Machine = ReturnType<typeof pullLifecycle.provide>;
type Snapshot = SnapshotFrom<Machine>;

interface Job {
  generation: number;
  abort: AbortController;
  outcome: PullOutcome | null;
  ended: Promise<void>;
}

export interface PullReconcilerOptions {
  log?: Logger;
  /** How long recording the image waits for the image reconciler (default 120 s). */
  waitTimeoutMs?: number;
}

const NEVER = new AbortController().signal;

export class PullReconciler {
  readonly name = 'pull';
  readonly kind = Pulls.name;
  readonly progress = new PullProgress();
  /** A pull job ended: its key, for the controller (the reconcile that follows records the outcome). */
  readonly jobEnds = new KeySource();
  private readonly jobs = new Map<string, Job>();
  private readonly credentials = new Map<string, AuthConfig>();
  private readonly machines: MachineHost<Machine>;
  private readonly log: Logger | undefined;
  private readonly waitTimeoutMs: number;
  private readonly store: PullStore;
  private readonly distribution: Pick<Distribution, 'pull'>;
  /** Shutting down: jobs end aborted, and what they leave is not an outcome (the next start resumes them). */
  private stopping = false;

  constructor(store: PullStore, distribution: Pick<Distribution, 'pull'>, opts: PullReconcilerOptions = {}) {
    this.store = store;
    this.distribution = distribution;
    this.log = opts.log;
    this.waitTimeoutMs = opts.waitTimeoutMs ?? 120_000;
    const machine = pullLifecycle.provide({
      actors: {
        start: fromPromise<void, { name: string }>(async ({ input }) => this.startJob(input.name)),
        cancel: fromPromise<void, { name: string }>(async ({ input }) => this.cancel(input.name)),
      },
    });
    // A pull's download is a job beside the reconcile (startJob), never an effect the pass waits on.
    this.machines = new MachineHost(machine, { name: 'pull' });
  }

  /** The credentials the next run of pull `name` uses (memory only, until that run starts; undefined: anonymous). */
  setCredentials(name: string, auth: AuthConfig | undefined): void {
    if (auth) this.credentials.set(name, auth);
    else this.credentials.delete(name);
  }

  async reconcile(name: string): Promise<void> {
    if (this.stopping) return;
    const r = this.store.get(Pulls, name);
    const job = this.jobs.get(name);
    if (!r) {
      job?.abort.abort();
      return;
    }
    if (r.spec.desired === 'removed') return void (await this.step(r, { type: 'REMOVE' }));
    if (job && !job.outcome) return; // under way: its end enqueues the key
    if (job?.outcome) {
      this.jobs.delete(name);
      this.progress.clear(name);
      await this.step(r, { type: 'FINISHED', outcome: job.outcome }, job.generation);
    }
    const now = this.store.get(Pulls, name);
    if (!now || now.spec.desired === 'removed') return;
    const unseen = now.status.observedGeneration < now.generation;
    // pending or pulling without a job: never started, or cut off by a daemon restart.
    if (unseen || now.status.phase === 'pending' || now.status.phase === 'pulling') await this.step(now, { type: 'PULL' });
  }

  /** One event through the machine restored from the record's phase; status written from where it ends. */
  private async step(r: PullResource, event: PullEvent, finishedGeneration?: number): Promise<void> {
    const snapshot = this.machines.machine.resolveState({ value: r.status.phase, context: { name: r.name, outcome: null, cause: null } }) as Snapshot;
    const pass = await this.machines.run(r.name, { snapshot, timers: [] }, [event], { signal: NEVER, now: Date.now });
    this.machines.keep(r.name, pass, true);
    const end = pass.snapshot;
    if (end.context.cause != null) throw end.context.cause;
    const state = topState(end);
    if (state === 'removed' || state === 'pending') return;
    const at = new Date().toISOString();
    this.store.updateStatus(Pulls, r.name, (s) => {
      if (state === 'pulling') return { ...s, phase: 'pulling', error: '', errorCode: '', startedAt: at, finishedAt: '' };
      const o = end.context.outcome!;
      return {
        ...s,
        phase: o.ok ? 'done' : 'failed',
        imageId: o.imageId,
        changed: o.changed,
        error: o.error,
        errorCode: o.errorCode,
        finishedAt: at,
        observedGeneration: finishedGeneration ?? s.observedGeneration,
      };
    });
  }

  // ---- effects ----------------------------------------------------------------------------

  private startJob(name: string): void {
    const r = this.store.get(Pulls, name);
    if (!r || this.jobs.has(name)) return;
    const abort = new AbortController();
    const job: Job = { generation: r.generation, abort, outcome: null, ended: Promise.resolve() };
    // Taken, not kept: a secret lives only until the run it was given for starts.
    const auth = this.credentials.get(name);
    this.credentials.delete(name);
    job.ended = this.run(name, r.spec, auth, abort.signal).then((outcome) => {
      if (this.stopping) return;
      job.outcome = outcome;
      if (this.jobs.get(name) === job) this.jobEnds.emit(name);
    });
    this.jobs.set(name, job);
  }

  private async run(name: string, spec: PullSpec, auth: AuthConfig | undefined, signal: AbortSignal): Promise<PullOutcome> {
    try {
      const pulled = await this.distribution.pull(spec.reference, {
        auth,
        platform: spec.platform || undefined,
        holdLayers: true,
        signal,
        onProgress: (m) => this.progress.publish(name, m),
      });
      try {
        const changed = await recordPulledImage(this.store, pulled, parseReference(spec.reference), { timeoutMs: this.waitTimeoutMs, signal });
        return { ok: true, imageId: pulled.id, changed, error: '', errorCode: '' };
      } finally {
        pulled.release();
      }
    } catch (err) {
      if (!signal.aborted) this.log?.info({ err, pull: name }, 'pull failed');
      return { ok: false, imageId: '', changed: false, error: isSystemError(err) ? systemErrorMessage(err) : err instanceof Error ? err.message : String(err), errorCode: errorCode(err) };
    }
  }

  private async cancel(name: string): Promise<void> {
    const job = this.jobs.get(name);
    if (job) {
      job.abort.abort();
      await job.ended;
      this.jobs.delete(name);
    }
    this.progress.clear(name);
    this.credentials.delete(name);
    this.store.delete(Pulls, name);
  }

  /** Aborts every job (daemon shutdown: the records stay wanted, so the next start resumes them). */
  async shutdown(): Promise<void> {
    this.stopping = true;
    const jobs = [...this.jobs.values()];
    for (const j of jobs) j.abort.abort();
    await Promise.all(jobs.map((j) => j.ended));
  }
}
