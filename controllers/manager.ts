// Runs every loop of the daemon the same way, as controller-runtime's Manager does: each is added
// with what it must wait for, started in the order added (a controller others depend on, images
// before containers, is up first), reported ready once it has synced (its first pass over its
// kind), and stopped in reverse. A loop declared `after` others is started once each of those has
// synced (the stack controller reads containers' status: not before the container controller has
// looked at every container once), or after `waitMs` with a warning; it never holds up the loops
// added before it, nor the daemon's start. Loops may be added after the start (those wired once
// the API serves) and removed before the end (stopped then).
import type { Logger } from 'pino';

export interface Runnable {
  readonly name?: string;
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
  /** Resolves once its first pass is done (a controller: every record reconciled once). Absent: ready once started. */
  synced?(): Promise<void>;
}

export interface AddOptions {
  /** Started once each of these has synced. */
  after?: readonly Runnable[];
  /** How long to wait for `after` before starting anyway (default 30 s). */
  waitMs?: number;
}

export type RunnableState = 'pending' | 'starting' | 'running' | 'synced' | 'failed' | 'stopped';

interface Entry {
  r: Runnable;
  opts: AddOptions;
  state: RunnableState;
  /** Settles once this entry's start has been attempted (or given up). */
  started: Promise<void>;
  /** Settles once it has synced (never for one that failed to start or was stopped first). */
  synced: Promise<void>;
  markSynced: () => void;
  cancel: () => void;
}

const DEFAULT_WAIT_MS = 30_000;

export class Manager {
  private readonly entries: Entry[] = [];
  private readonly log: Logger | undefined;
  private running = false;

  constructor(opts: { log?: Logger } = {}) {
    this.log = opts.log;
  }

  /** Adds a loop; once the manager runs, it is started at once (or when its `after` have synced). */
  add(r: Runnable, opts: AddOptions = {}): void {
    let markSynced = () => {};
    const synced = new Promise<void>((resolve) => (markSynced = resolve));
    const e: Entry = { r, opts, state: 'pending', started: Promise.resolve(), synced, markSynced, cancel: () => {} };
    this.entries.push(e);
    if (this.running) e.started = opts.after?.length ? this.startLater(e) : this.startOne(e).catch((err) => this.failed(e, err));
  }

  /**
   * Starts every loop added so far: those without `after` in order, each awaited; if one fails,
   * those already started are stopped and the error thrown. Those with `after` start in the
   * background once what they wait for has synced.
   */
  async start(): Promise<void> {
    this.running = true;
    for (const e of this.entries) {
      if (e.state !== 'pending') continue;
      if (e.opts.after?.length) {
        e.started = this.startLater(e);
        continue;
      }
      try {
        e.started = this.startOne(e);
        await e.started;
      } catch (err) {
        await this.stop();
        throw err;
      }
    }
  }

  /** Resolves once every loop added so far is started and synced. */
  async ready(): Promise<void> {
    await Promise.all(this.entries.map((e) => e.synced));
  }

  /** Each loop's name and state, in the order added. */
  status(): Array<{ name: string; state: RunnableState }> {
    return this.entries.map((e) => ({ name: e.r.name ?? 'unnamed', state: e.state }));
  }

  /** Stops one loop and forgets it (its wiring goes before the manager's end). */
  async remove(r: Runnable): Promise<void> {
    const i = this.entries.findIndex((e) => e.r === r);
    if (i < 0) return;
    const [e] = this.entries.splice(i, 1);
    await this.stopOne(e!);
  }

  /** Stops every loop, last added first; one failing does not keep the others running. */
  async stop(): Promise<void> {
    this.running = false;
    for (const e of [...this.entries].reverse()) await this.stopOne(e);
  }

  private async startOne(e: Entry): Promise<void> {
    e.state = 'starting';
    await e.r.start();
    // Stopped while it started: it is not left running.
    if ((e.state as RunnableState) === 'stopped') {
      await e.r.stop();
      return;
    }
    e.state = 'running';
    const first = e.r.synced ? e.r.synced() : Promise.resolve();
    void first.then(() => {
      if (e.state !== 'running') return;
      e.state = 'synced';
      e.markSynced();
    });
  }

  private startLater(e: Entry): Promise<void> {
    const waitMs = e.opts.waitMs ?? DEFAULT_WAIT_MS;
    let timer: NodeJS.Timeout | undefined;
    const cancelled = new Promise<'cancelled'>((resolve) => (e.cancel = () => resolve('cancelled')));
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), waitMs).unref()));
    const deps = Promise.all(e.opts.after!.map((d) => this.syncedOf(d))).then(() => 'synced' as const);
    return Promise.race([deps, timedOut, cancelled]).then(async (why) => {
      clearTimeout(timer);
      if (why === 'cancelled' || e.state !== 'pending') return;
      if (why === 'timeout') {
        this.log?.warn({ controller: e.r.name, after: e.opts.after!.map((d) => d.name), waitMs }, 'what it starts after has not synced yet; starting it anyway');
      }
      await this.startOne(e).catch((err) => this.failed(e, err));
    });
  }

  /** When `r` has synced: its entry's, or its own for a loop run elsewhere. */
  private syncedOf(r: Runnable): Promise<void> {
    const e = this.entries.find((x) => x.r === r);
    return e ? e.synced : (r.synced?.() ?? Promise.resolve());
  }

  private failed(e: Entry, err: unknown): void {
    e.state = 'failed';
    this.log?.error({ err, controller: e.r.name }, 'starting controller failed');
  }

  private async stopOne(e: Entry): Promise<void> {
    const was = e.state;
    e.state = 'stopped';
    e.cancel();
    if (was === 'pending' || was === 'failed' || was === 'stopped') return;
    // One still starting is stopped by its start once that returns (startOne).
    if (was === 'starting') {
      await e.started.catch(() => {});
      return;
    }
    try {
      await e.r.stop();
    } catch (err) {
      this.log?.error({ err, controller: e.r.name }, 'stopping controller failed');
    }
  }
}
