// The one machine host of the machine-driven reconcilers (container, endpoint, network, volume).
// A reconciler keeps no machines of its own: per key the host holds the machine of a transient
// state between reconciles (a settled one is rebuilt from the record's status by the reconciler's
// `restore`), drives it through one pass (controllers/machine-driver.ts), and runs its effects —
// XState promise actors, which get `{ input, signal }` — with a signal that is aborted when the
// reconcile is cut off, when the host stops (daemon shutdown) and at the effect's deadline.
import { EngineError } from '../lib/errors.ts';
import { drive, type MachineTimer } from './machine-driver.ts';
import type { AnyStateMachine, EventFromLogic, Snapshot, SnapshotFrom } from 'xstate';

export interface Held<M extends AnyStateMachine> {
  snapshot: SnapshotFrom<M>;
  timers: MachineTimer[];
}

export interface Pass<M extends AnyStateMachine> extends Held<M> {
  /** ms until the earliest timer, or undefined when none is pending. */
  requeueAfter: number | undefined;
}

export interface MachineHostOptions {
  /** For errors and logs: 'container', 'endpoint'. */
  name: string;
  /** How long one effect may run before its signal is aborted and the machine gets an error. Default 10 min. */
  effectDeadlineMs?: number;
}

const DEFAULT_EFFECT_DEADLINE_MS = 10 * 60_000;

export class MachineHost<M extends AnyStateMachine> {
  readonly machine: M;
  private readonly name: string;
  private readonly effectDeadlineMs: number;
  private readonly held = new Map<string, Held<M>>();
  private readonly stopping = new AbortController();

  constructor(machine: M, opts: MachineHostOptions) {
    this.machine = machine;
    this.name = opts.name;
    this.effectDeadlineMs = opts.effectDeadlineMs ?? DEFAULT_EFFECT_DEADLINE_MS;
  }

  /** The machine held for `key`, else the one `restore` rebuilds from the record. */
  current(key: string, restore: () => Held<M>): Held<M> {
    return this.held.get(key) ?? restore();
  }

  /**
   * One pass: the due timers, then `events`; each effect a transition starts runs to its end and
   * its outcome is fed back, until the machine waits on the world. A pass cut off (`signal`, or
   * the host stopping) before the machine ended drops what is held for the key and throws Canceled:
   * the next reconcile starts again from the record.
   */
  async run(key: string, from: Held<M>, events: ReadonlyArray<EventFromLogic<M>>, opts: { signal: AbortSignal; now: () => number }): Promise<Pass<M>> {
    const signal = AbortSignal.any([opts.signal, this.stopping.signal]);
    const res = await drive(this.machine, from.snapshot, from.timers, events, { signal, now: opts.now, effectDeadlineMs: this.effectDeadlineMs });
    if (signal.aborted && !ended(res.snapshot)) {
      this.held.delete(key);
      throw new EngineError('Canceled', `${this.name} ${key}: reconcile canceled`, { cause: signal.reason });
    }
    return res;
  }

  /**
   * After a pass: a machine that ended, or one in a settled state (`settled`: the reconciler
   * records that state in status and rebuilds it from there), is let go; a transient one is held
   * for the next reconcile of `key`.
   */
  keep(key: string, held: Held<M>, settled = false): void {
    if (ended(held.snapshot) || settled) this.held.delete(key);
    else this.held.set(key, { snapshot: held.snapshot, timers: held.timers });
  }

  /** The record is gone: nothing is held for it. */
  forget(key: string): void {
    this.held.delete(key);
  }

  /** How many machines are held (tests, metrics). */
  get size(): number {
    return this.held.size;
  }

  /** Daemon shutdown: the effects under way are aborted; a pass that is cut off throws Canceled. */
  stop(reason: unknown = new Error(`${this.name} machines stopped`)): void {
    this.stopping.abort(reason);
  }
}

/** The machine reached a final state. */
function ended(snapshot: unknown): boolean {
  return (snapshot as Snapshot<unknown>).status === 'done';
}
