// Drives an XState v5 machine from a reconciler with the pure `transition` function: no actor
// lives between reconciles and no timer runs inside XState. What a transition asks for comes back
// as actions, and this module turns them into the reconciler's terms:
// - an invoked actor (`xstate.spawnChild`) is an effect: it runs now, as a root actor of the same
//   logic and input (a promise actor: it gets `{ input, signal }`), and its result (or error) is
//   sent back as the machine's done/error event; an abort of the drive's signal or the effect's
//   deadline stops it (aborting its signal) and sends the error event;
// - a delayed event (`xstate.raise` with a delay, e.g. `after`) becomes a timer at an absolute
//   time, and the reconcile answers `requeueAfter` for the earliest one; `xstate.cancel` drops it;
// - an immediate `raise` is sent next.
// Timers are plain data ({ id, event, at }), so the caller may keep them with the snapshot.
import { EngineError } from '../lib/errors.ts';
import { createActor, toPromise, type Actor, type AnyActorLogic, type AnyStateMachine, type EventFromLogic, type SnapshotFrom } from 'xstate';

/** The top-level state of a snapshot ("stopping" for { stopping: "waiting" }). */
export function topState(snapshot: { value: unknown }): string {
  const v = snapshot.value;
  return typeof v === 'string' ? v : Object.keys(v as Record<string, unknown>)[0]!;
}

export interface MachineTimer {
  /** The delayed event's send id (what `xstate.cancel` names). */
  id: string;
  event: { type: string };
  /** Epoch ms when it is due. */
  at: number;
}

export interface Stepped<M extends AnyStateMachine> {
  snapshot: SnapshotFrom<M>;
  timers: MachineTimer[];
  /** Effects the transition started, in order: invoke id, actor source name, its logic and input. */
  effects: Effect[];
  /** Events raised for immediate delivery. */
  raised: Array<{ type: string }>;
}

/** An invoked actor, to be run as an actor of its own (a root actor: the driver can stop it). */
export interface Effect {
  id: string;
  src: string;
  logic: AnyActorLogic;
  input: unknown;
}

/** The effect as an actor of its own, not yet started (its promise gets `{ input, signal }`; stop() aborts the signal). */
export function effectActor(eff: Effect): Actor<AnyActorLogic> {
  return createActor(eff.logic, { input: eff.input });
}

interface ActionLike {
  type: string;
  params?: Record<string, unknown>;
}

type InertScope<M extends AnyStateMachine> = Parameters<M['transition']>[2];

/**
 * The actor scope transitions run in: inert, as xstate's `transition()` makes it (nothing deferred
 * runs, no child starts or registers; the machines here give no systemId), made once per machine.
 * `transition()` makes a new one for every call, and with it an actor that computes the machine's
 * initial snapshot on construction: in a run cycle that was a quarter of everything the daemon
 * allocated (~0.5 MB) and most of a step's time. Only where the actions go changes per call.
 */
const scopes = new WeakMap<AnyStateMachine, InertScope<AnyStateMachine>>();

function inertScope<M extends AnyStateMachine>(machine: M): InertScope<M> {
  let scope = scopes.get(machine);
  if (!scope) {
    const self = createActor(machine);
    scope = { self, defer: () => {}, id: '', logger: () => {}, sessionId: '', stopChild: () => {}, system: self.system, emit: () => {}, actionExecutor: () => {} };
    scopes.set(machine, scope);
  }
  return scope as InertScope<M>;
}

/** xstate's `transition(machine, snapshot, event)`: the next snapshot and the actions to execute. */
export function pureTransition<M extends AnyStateMachine>(machine: M, snapshot: SnapshotFrom<M>, event: EventFromLogic<M>): [SnapshotFrom<M>, unknown[]] {
  const scope = inertScope(machine);
  const actions: unknown[] = [];
  scope.actionExecutor = (a: unknown) => void actions.push(a);
  try {
    return [machine.transition(snapshot, event, scope) as SnapshotFrom<M>, actions];
  } finally {
    scope.actionExecutor = () => {};
  }
}

/** One pure transition and what its actions ask for; nothing runs. */
export function step<M extends AnyStateMachine>(machine: M, snapshot: SnapshotFrom<M>, event: EventFromLogic<M>, timers: readonly MachineTimer[], now: number): Stepped<M> {
  const [next, actions] = pureTransition(machine, snapshot, event);
  let ts = [...timers];
  const effects: Stepped<M>['effects'] = [];
  const raised: Array<{ type: string }> = [];
  for (const a of actions as unknown as ActionLike[]) {
    const p = a.params ?? {};
    if (a.type === 'xstate.cancel') {
      ts = ts.filter((t) => t.id !== p.sendId);
    } else if (a.type === 'xstate.raise') {
      const ev = p.event as { type: string };
      const delay = p.delay as number | undefined;
      if (delay === undefined) {
        raised.push(ev);
      } else if (Number.isFinite(delay)) {
        const id = String(p.id ?? ev.type);
        ts = ts.filter((t) => t.id !== id);
        ts.push({ id, event: ev, at: now + Math.max(0, delay) });
      }
      // A delay of Infinity is a wait with no end: nothing to schedule.
    } else if (a.type === 'xstate.spawnChild') {
      // XState made a child of an inert parent (`actorRef`), which cannot be stopped directly: the
      // effect runs as a root actor of the same logic and input instead.
      effects.push({ id: String(p.id), src: String(p.src), logic: (p.actorRef as Actor<AnyActorLogic>).logic, input: p.input });
    }
  }
  return { snapshot: next, timers: ts, effects, raised };
}

export interface DriveResult<M extends AnyStateMachine> {
  snapshot: SnapshotFrom<M>;
  timers: MachineTimer[];
  /** ms until the earliest timer, or undefined when none is pending. */
  requeueAfter: number | undefined;
}

export interface DriveOptions {
  /** Aborts the effects under way (the reconcile was cut off, the daemon is stopping). */
  signal: AbortSignal;
  now: () => number;
  /** Upper bound of transitions in one drive (a machine that loops on itself is a bug). */
  maxSteps?: number;
  /** How long one effect may run; past it, its signal is aborted and the machine gets its error event. Default: no bound. */
  effectDeadlineMs?: number;
}

/**
 * Delivers the due timers, then `events`, running every effect they start to completion (one
 * at a time, in order) and feeding its result back, until the machine waits on the world.
 */
export async function drive<M extends AnyStateMachine>(
  machine: M,
  snapshot: SnapshotFrom<M>,
  timers: readonly MachineTimer[],
  events: ReadonlyArray<EventFromLogic<M>>,
  opts: DriveOptions,
): Promise<DriveResult<M>> {
  let snap = snapshot;
  let ts = [...timers];
  const now0 = opts.now();
  const due = ts.filter((t) => t.at <= now0).sort((a, b) => a.at - b.at);
  ts = ts.filter((t) => t.at > now0);
  const queue: Array<{ type: string }> = [...due.map((t) => t.event), ...events];
  let steps = 0;
  const max = opts.maxSteps ?? 100;
  while (queue.length) {
    if (++steps > max) throw new Error(`machine ${machine.id}: more than ${max} transitions in one reconcile`);
    const ev = queue.shift()!;
    const r = step(machine, snap, ev as EventFromLogic<M>, ts, opts.now());
    snap = r.snapshot;
    ts = r.timers;
    queue.unshift(...r.raised);
    for (const eff of r.effects) queue.push(await runEffect(machine.id, eff, opts.signal, opts.effectDeadlineMs));
  }
  const next = ts.length ? Math.min(...ts.map((t) => t.at)) - opts.now() : undefined;
  return { snapshot: snap, timers: ts, requeueAfter: next === undefined ? undefined : Math.max(0, next) };
}

/**
 * Runs an invoked actor (a promise actor: it gets `{ input, signal }`) to its end; answers the done
 * or error event the machine expects. An abort of `signal`, or the deadline passing, stops the actor
 * (which aborts the signal its promise was given) and answers the error event at once: an effect
 * cut off never reads as done.
 */
async function runEffect(machineId: string, eff: Effect, signal: AbortSignal, deadlineMs: number | undefined): Promise<{ type: string }> {
  const { id } = eff;
  const actor = effectActor(eff);
  const failed = (error: unknown) => ({ type: `xstate.error.actor.${id}`, error }) as { type: string };
  if (signal.aborted) return failed(new EngineError('Canceled', `${machineId} effect ${eff.src}: canceled`, { cause: signal.reason }));
  let cut: (error: unknown) => void = () => {};
  const cutOff = new Promise<{ type: string }>((resolve) => {
    cut = (error) => {
      resolve(failed(error));
      actor.stop();
    };
  });
  const onAbort = () => cut(new EngineError('Canceled', `${machineId} effect ${eff.src}: canceled`, { cause: signal.reason }));
  signal.addEventListener('abort', onAbort, { once: true });
  const timer =
    deadlineMs !== undefined && Number.isFinite(deadlineMs)
      ? setTimeout(() => cut(new EngineError('Unavailable', `${machineId} effect ${eff.src}: no result within ${deadlineMs} ms`)), deadlineMs)
      : undefined;
  try {
    actor.start();
    const ran = toPromise(actor).then(
      (output) => ({ type: `xstate.done.actor.${id}`, output }) as { type: string },
      (error: unknown) => failed(error),
    );
    return await Promise.race([cutOff, ran]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}
