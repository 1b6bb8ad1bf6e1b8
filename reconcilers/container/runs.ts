// The process registry: the in-memory handles of the containers running in this daemon process
// (stdio hub, log writer, init pid, the OCI spec the run started with), and who listens for them
// (attach, exec, stats, top). It holds nothing that must survive a restart: what does is in the
// container's status. The reconciler adds a run when its task starts and drops it once the run
// is collected; supervisor exit/OOM events land here and wake the reconciler through `exits`
// (a source its controller declares).
import { KeySource } from '../../controllers/source.ts';
import { isCode } from '../../lib/errors.ts';
import type { HubLike, LoggerLike, ProcessIOLike, SupervisorPort } from './deps.ts';

export interface ExitInfo {
  exitStatus: number;
  exitedAt: Date | null;
}

/**
 * How long a run relies on the supervisor's exit event alone. Most short runs end well before,
 * and a Wait costs round trips in the daemon, the supervisor and the shim; after this, a Wait
 * also watches the run, the backstop for an event lost while the event stream was down.
 */
const WAIT_AFTER_MS = 2_000;

/** One start of a container: the in-memory handles of its init process. */
export interface Run {
  io: ProcessIOLike;
  hub: HubLike;
  logger: LoggerLike | null;
  pid: number;
  startedAt: number;
  exit: ExitInfo | null;
  exited: Promise<ExitInfo>;
  /**
   * Its output is closed (the reference's Reset, after the exit's output is drained): until then
   * an attach gets this run's output to its end; from then on it waits for the next run, as the
   * reference's attach made after the Reset does (compose's one-off run attaches after its start
   * and starts again a container it finds stopped: the second run's output reaches it).
   */
  reset: boolean;
  /** Its exit is in the container's status (the teardown done): over for clients. */
  recorded: boolean;
  /** Settles once `recorded` is set. */
  whenRecorded: Promise<void>;
  markRecorded: () => void;
  oom: boolean;
  waitAbort: AbortController;
  /** watchExit has not returned yet (aborting a settled one only costs an AbortError). */
  waiting: boolean;
  /** Ends watchExit's reliance on exit events: one arrived, or some may have been lost. */
  wake: () => void;
  /** The OCI spec this run was started with (exec derives its process from it). */
  oci: { process?: Record<string, unknown> } & Record<string, unknown>;
  rootfs: string;
}

export interface RunRegistryDeps {
  supervisor: Pick<SupervisorPort, 'waitTask' | 'resizePty'>;
  /**
   * Whether the supervisor's exit events are being received now (notifyExit). While they are,
   * a run relies on them for a while before it also asks Wait. Absent: Wait at once.
   */
  exitEventsLive?: () => boolean;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export class RunRegistry {
  private readonly runs = new Map<string, Run>();
  private readonly watchers = new Map<string, Set<(hub: HubLike) => void>>();
  private readonly deps: RunRegistryDeps;
  /** A run ended (supervisor event or Wait): the container's key, for its controller. */
  readonly exits = new KeySource();

  constructor(deps: RunRegistryDeps) {
    this.deps = deps;
  }

  get(id: string): Run | undefined {
    return this.runs.get(id);
  }

  ids(): string[] {
    return [...this.runs.keys()];
  }

  /**
   * Registers a run whose task exists (created, maybe not started yet) and begins watching for
   * its exit. `run.exited` settles with the exit, from an event or from Wait.
   */
  add(id: string, fields: Omit<Run, 'exit' | 'exited' | 'reset' | 'recorded' | 'whenRecorded' | 'markRecorded' | 'oom' | 'waitAbort' | 'waiting' | 'wake'>): Run {
    const recorded = Promise.withResolvers<void>();
    const run: Run = {
      ...fields,
      exit: null,
      exited: undefined as unknown as Promise<ExitInfo>,
      reset: false,
      recorded: false,
      whenRecorded: recorded.promise,
      markRecorded: () => {
        run.recorded = true;
        recorded.resolve();
      },
      oom: false,
      waitAbort: new AbortController(),
      waiting: true,
      wake: () => {},
    };
    run.exited = this.watchExit(id, run).finally(() => (run.waiting = false));
    this.runs.set(id, run);
    return run;
  }

  /** Forgets the run and stops watching it (collected, or its start failed). */
  delete(id: string, run?: Run): void {
    const cur = this.runs.get(id);
    if (!cur || (run && cur !== run)) return;
    this.stopWatching(cur);
    this.runs.delete(id);
    cur.markRecorded();
  }

  /**
   * Settles at once unless the container's process has exited and its stop is not recorded yet
   * (the task's teardown, some tens of ms); then once it is, or after `maxMs`. Inspect waits on
   * it as the reference's inspect waits for the container's lock held while an exit is handled:
   * a client that finds the container running right after its process ended would wait for an
   * end that has already come.
   */
  async settled(id: string, maxMs = 3000): Promise<void> {
    const run = this.runs.get(id);
    if (!run || !run.exit || run.recorded) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([run.whenRecorded, new Promise<void>((r) => (timer = setTimeout(r, maxMs)))]);
    clearTimeout(timer);
  }

  /** Ends the exit watch of `run` (its exit is known, or it is being given up). */
  stopWatching(run: Run): void {
    if (run.waiting) run.waitAbort.abort();
  }

  /** A new run's hub, before its process starts: attach clients waiting for the next run get it. */
  announce(id: string, hub: HubLike, onError: (err: unknown) => void): void {
    for (const fn of this.watchers.get(id) ?? []) {
      try {
        fn(hub);
      } catch (err) {
        onError(err);
      }
    }
  }

  /** Called for supervisor exit events: an exit can arrive both here and from Wait; both are idempotent. */
  notifyExit(containerId: string, info: ExitInfo & { pid?: number }): void {
    const run = this.runs.get(containerId);
    // The pid tells this run's exit from a late event of the run before it (restarts).
    if (run && !run.exit && !(info.pid && run.pid && info.pid !== run.pid)) {
      run.exit = { exitStatus: info.exitStatus, exitedAt: info.exitedAt };
      run.wake();
    }
    this.exits.emit(containerId);
  }

  /**
   * The exit event stream is (again) live. Exits during a gap were lost: every run still relying
   * on events asks Wait now (one that has exited answers at once).
   */
  exitEventsResumed(): void {
    for (const run of this.runs.values()) run.wake();
  }

  notifyOom(containerId: string): void {
    const run = this.runs.get(containerId);
    if (run) run.oom = true;
  }

  /** Attach: the hub of the current run now, and of every later run before its process starts. */
  watchRuns(containerId: string, fn: (hub: HubLike) => void): () => void {
    let set = this.watchers.get(containerId);
    if (!set) this.watchers.set(containerId, (set = new Set()));
    set.add(fn);
    const run = this.runs.get(containerId);
    if (run && !run.reset) fn(run.hub);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.watchers.get(containerId) === set) this.watchers.delete(containerId);
    };
  }

  /** What exec needs of a running container. */
  runInfo(containerId: string): { pid: number; oci: Run['oci']; rootfs: string } | undefined {
    const run = this.runs.get(containerId);
    return run && !run.exit ? { pid: run.pid, oci: run.oci, rootfs: run.rootfs } : undefined;
  }

  async resize(containerId: string, width: number, height: number): Promise<void> {
    const run = this.runs.get(containerId);
    if (!run || run.exit) return;
    await this.deps.supervisor.resizePty(containerId, undefined, width, height);
  }

  /** Stdio hub of a running container (attach). */
  hubOf(containerId: string): HubLike | undefined {
    const run = this.runs.get(containerId);
    return run && !run.exit ? run.hub : undefined;
  }

  /** Resolve a run's exit from an exit event or from Wait (re-issued if the supervisor restarts). */
  private async watchExit(id: string, run: Run): Promise<ExitInfo> {
    if (this.deps.exitEventsLive?.()) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, WAIT_AFTER_MS).unref();
        const signal = run.waitAbort.signal;
        function done(): void {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          run.wake = () => {};
          resolve();
        }
        run.wake = done;
        signal.addEventListener('abort', done);
      });
      if (run.waitAbort.signal.aborted) return run.exit ?? { exitStatus: 255, exitedAt: null };
    }
    for (;;) {
      if (run.exit) return run.exit;
      try {
        const res = await this.deps.supervisor.waitTask(id, undefined, { signal: run.waitAbort.signal });
        if (!run.exit) run.exit = res;
        this.exits.emit(id);
        return run.exit;
      } catch (err) {
        if (run.waitAbort.signal.aborted) return run.exit ?? { exitStatus: 255, exitedAt: null };
        if (isCode(err, 'NotFound')) {
          if (!run.exit) run.exit = { exitStatus: 255, exitedAt: null };
          this.exits.emit(id);
          return run.exit;
        }
        await sleep(200);
      }
    }
  }
}
