// Drives an XState v5 machine from a reconciler with the pure `transition` function: no actor
// lives between reconciles and no timer runs inside XState. What a transition asks for comes back
// as actions, and this module turns them into the reconciler's terms:
// - an invoked actor (`xstate.spawnChild`) is an effect: it runs now, with the reconcile's
//   AbortSignal, and its result (or error) is sent back as the machine's done/error event;
// - a delayed event (`xstate.raise` with a delay, e.g. `after`) becomes a timer at an absolute
//   time, and the reconcile answers `requeueAfter` for the earliest one; `xstate.cancel` drops it;
// - an immediate `raise` is sent next.
// Timers are plain data ({ id, event, at }), so the caller may keep them with the snapshot.
import { toPromise, transition, type AnyActorRef, type AnyStateMachine, type EventFromLogic, type SnapshotFrom } from 'xstate';

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
  /** Effects the transition started, in order: invoke id, actor source name, the actor to run. */
  effects: Array<{ id: string; src: string; actorRef: AnyActorRef }>;
  /** Events raised for immediate delivery. */
  raised: Array<{ type: string }>;
}

interface ActionLike {
  type: string;
  params?: Record<string, unknown>;
}

/** One pure transition and what its actions ask for; nothing runs. */
export function step<M extends AnyStateMachine>(machine: M, snapshot: SnapshotFrom<M>, event: EventFromLogic<M>, timers: readonly MachineTimer[], now: number): Stepped<M> {
  const [next, actions] = transition(machine, snapshot, event);
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
      effects.push({ id: String(p.id), src: String(p.src), actorRef: p.actorRef as AnyActorRef });
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
  signal: AbortSignal;
  now: () => number;
  /** Upper bound of transitions in one drive (a machine that loops on itself is a bug). */
  maxSteps?: number;
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
    for (const eff of r.effects) queue.push(await runEffect(eff.id, eff.actorRef, opts.signal));
  }
  const next = ts.length ? Math.min(...ts.map((t) => t.at)) - opts.now() : undefined;
  return { snapshot: snap, timers: ts, requeueAfter: next === undefined ? undefined : Math.max(0, next) };
}

/** Runs an invoked actor to its end; answers the done or error event the machine expects. */
async function runEffect(id: string, actor: AnyActorRef, signal: AbortSignal): Promise<{ type: string }> {
  const onAbort = () => actor.stop();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    actor.start();
    const output = await toPromise(actor);
    return { type: `xstate.done.actor.${id}`, output } as { type: string };
  } catch (error) {
    return { type: `xstate.error.actor.${id}`, error } as { type: string };
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
