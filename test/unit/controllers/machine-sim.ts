// A lifecycle machine under a simulated clock, for table tests of the kinds' machines: events go
// through the machine driver's pure `step`; effects the machine starts wait until the test
// completes or fails them; delayed events fire when the clock is advanced past them.
import assert from 'node:assert/strict';
import type { AnyStateMachine, ContextFrom, SnapshotFrom } from 'xstate';
import { step, type MachineTimer } from '../../../controllers/machine-driver.ts';

export class MachineSim<M extends AnyStateMachine> {
  readonly machine: M;
  snap: SnapshotFrom<M>;
  timers: MachineTimer[] = [];
  now: number;
  /** Effects started and not yet completed, by invoke id. */
  pending: string[] = [];
  /** Every effect started, in order. */
  started: string[] = [];

  constructor(machine: M, snap: SnapshotFrom<M>, now: number) {
    this.machine = machine;
    this.snap = snap;
    this.now = now;
  }

  /** The state value flattened: "stopping.waiting". */
  get state(): string {
    const flat = (v: unknown): string => (typeof v === 'string' ? v : Object.entries(v as Record<string, unknown>).map(([k, s]) => `${k}.${flat(s)}`)[0]!);
    return flat((this.snap as unknown as { value: unknown }).value);
  }

  get ctx(): ContextFrom<M> {
    return (this.snap as unknown as { context: ContextFrom<M> }).context;
  }

  send(type: string, extra: Record<string, unknown> = {}): this {
    const r = step(this.machine, this.snap, { type, ...extra } as never, this.timers, this.now);
    this.snap = r.snapshot;
    this.timers = r.timers;
    for (const e of r.effects) {
      this.pending.push(e.id);
      this.started.push(e.id);
    }
    for (const ev of r.raised) this.send(ev.type);
    return this;
  }

  /** What a reconcile tells the machine first (the facts it read); subclasses send theirs. */
  observe(): this {
    return this;
  }

  done(id: string, output?: unknown): this {
    this.take(id);
    return this.send(`xstate.done.actor.${id}`, { output });
  }

  fail(id: string, error: unknown): this {
    this.take(id);
    return this.send(`xstate.error.actor.${id}`, { error });
  }

  /** Moves the clock, observes, then delivers the timers now due, earliest first. */
  advance(ms: number): this {
    this.now += ms;
    this.observe();
    for (const t of [...this.timers].sort((a, b) => a.at - b.at)) {
      if (t.at > this.now) continue;
      this.timers = this.timers.filter((x) => x !== t);
      this.send(t.event.type);
    }
    return this;
  }

  private take(id: string): void {
    assert.ok(this.pending.includes(id), `${id} is not running (pending: ${this.pending})`);
    this.pending = this.pending.filter((p) => p !== id);
  }
}
