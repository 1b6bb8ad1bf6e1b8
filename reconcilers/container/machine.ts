// The container lifecycle as an XState v5 machine. The reconciler drives it with the pure
// `transition` function (see controllers/machine-driver.ts): each reconcile first sends OBSERVED
// with the facts it read (spec, status, the clock), then the event that the difference between
// desired and observed calls for; the machine's guards decide whether that step is legal, its
// delays say when the stop's SIGKILL and the policy's restart are due, and its invoked actors name
// the effects, which the reconciler provides (`.provide({ actors })`) over the drivers. Only the
// settled states (created, running, paused, exited, restarting, dead) are persisted with the
// container; a transient one lives in memory between reconciles, and after a crash the restored
// settled state plus what is observed leads back into it, every effect being safe to repeat.
import { assign, fromPromise, setup } from 'xstate';
import type { ContainerPhase, RestartPolicy } from '../../store/kinds/container.ts';
import { decideRestart } from './restart-policy.ts';
import { notProvidedFor } from '../machine-kit.ts';

/** What the reconciler read before this pass: the spec's wishes and the clock. */
export interface ContainerFacts {
  /** The container id (the effects' input). */
  id: string;
  now: number;
  /** desired is running or paused (removal and stop are their own events). */
  wantUp: boolean;
  policy: RestartPolicy;
  autoRemove: boolean;
  manuallyStopped: boolean;
  /** Grace period of a stop asked for now, in seconds (negative: no end). */
  stopTimeoutS: number;
}

/**
 * What the machine itself keeps: the deadlines and the restart bookkeeping. Mirrored into the
 * container's status and restored from it with the settled state.
 */
export interface ContainerMemory {
  /** The stop under way ends at (epoch ms; -1 no end; null no stop under way). */
  stopDeadline: number | null;
  /** When the policy's next restart is due (epoch ms), while restarting. */
  restartAt: number | null;
  restartCount: number;
  restartDelayMs: number;
}

export interface ContainerContext extends ContainerFacts, ContainerMemory {
  /** Once the run is collected, start a new one (a restart was asked for). */
  thenStart: boolean;
  /** Once the run is collected, remove the container (a removal was asked for). */
  thenRemove: boolean;
}

export type ContainerEvent =
  | { type: 'OBSERVED'; facts: ContainerFacts }
  | { type: 'START' }
  | { type: 'STOP' }
  | { type: 'RESTART' }
  | { type: 'PAUSE' }
  | { type: 'RESUME' }
  | { type: 'EXITED' }
  | { type: 'REMOVE' };

/** What every effect is given. */
export interface EffectInput {
  id: string;
}

/** What the start effect reports: whether the task runs, and whether the container ever ran. */
export interface StartOutput {
  started: boolean;
  neverRan: boolean;
}

/** What the collect effect reports of the run it collected. */
export interface CollectOutput {
  exitCode: number;
  ranMs: number;
  /** The run was a leftover of a daemon that crashed (no handles here; stopped at boot). */
  leftover: boolean;
}

/** After SIGKILL, how long until the kill is sent again if no exit has arrived. */
export const KILL_RECHECK_MS = 5_000;

/** Every effect gets the container id. */
const idInput = ({ context }: { context: ContainerContext }) => ({ id: context.id });

const notProvided = notProvidedFor('container');

/** The reference daemon's back-off: 100 ms, doubling while runs last under 10 s, at most 1 min. */
export function nextRestartDelay(prevMs: number, ranMs: number): number {
  return ranMs >= 10_000 || !prevMs ? 100 : Math.min(prevMs * 2, 60_000);
}

export const INITIAL_FACTS: ContainerFacts = {
  id: '',
  now: 0,
  wantUp: false,
  policy: { Name: 'no', MaximumRetryCount: 0 },
  autoRemove: false,
  manuallyStopped: false,
  stopTimeoutS: 10,
};

export const INITIAL_MEMORY: ContainerMemory = { stopDeadline: null, restartAt: null, restartCount: 0, restartDelayMs: 0 };

/** The machine's context for a container restored from status (or new). */
export function restoredContext(facts: ContainerFacts, memory: Partial<ContainerMemory> = {}): ContainerContext {
  return { ...facts, ...INITIAL_MEMORY, ...memory, thenStart: false, thenRemove: false };
}

export const containerLifecycle = setup({
  types: {
    context: {} as ContainerContext,
    events: {} as ContainerEvent,
    input: {} as Partial<ContainerFacts & ContainerMemory> | undefined,
  },
  actors: {
    startRun: fromPromise<StartOutput, EffectInput>(notProvided('startRun')),
    signalStop: fromPromise<void, EffectInput>(notProvided('signalStop')),
    killRun: fromPromise<void, EffectInput>(notProvided('killRun')),
    pauseRun: fromPromise<void, EffectInput>(notProvided('pauseRun')),
    resumeRun: fromPromise<void, EffectInput>(notProvided('resumeRun')),
    collectRun: fromPromise<CollectOutput, EffectInput>(notProvided('collectRun')),
    teardown: fromPromise<void, EffectInput>(notProvided('teardown')),
  },
  // Guards on an effect's outcome take it as params (`params: ({ event }) => event.output` in the
  // invoke's onDone), so the output is typed by the actor declared above.
  guards: {
    started: (_, output: StartOutput) => output.started,
    neverRan: (_, output: StartOutput) => output.neverRan,
    thenRemove: ({ context }) => context.thenRemove,
    thenStart: ({ context }) => context.thenStart && context.wantUp,
    // A leftover stopped at boot comes back when its policy says so, at once, as the reference does.
    bootRestart: ({ context }, run: CollectOutput) =>
      run.leftover && context.wantUp && !context.manuallyStopped && (context.policy.Name === 'always' || context.policy.Name === 'unless-stopped'),
    policyRestarts: ({ context }, run: CollectOutput) =>
      !run.leftover && context.wantUp && decideRestart(context.policy, run.exitCode, context.restartCount, context.manuallyStopped),
    autoRemove: ({ context }) => context.autoRemove,
    hasDeadline: ({ context }) => context.stopDeadline !== null && context.stopDeadline >= 0,
  },
  delays: {
    // Time is a fact read by the reconciler (OBSERVED.now), so the machine stays pure and tests
    // drive it with a simulated clock. A stop with no end waits for the exit alone (Infinity).
    grace: ({ context }) => (context.stopDeadline === null || context.stopDeadline < 0 ? Infinity : Math.max(0, context.stopDeadline - context.now)),
    killRecheck: KILL_RECHECK_MS,
    backoff: ({ context }) => Math.max(0, (context.restartAt ?? 0) - context.now),
  },
}).createMachine({
  id: 'container',
  initial: 'created',
  context: ({ input }) => restoredContext({ ...INITIAL_FACTS, ...input }, input),
  on: {
    OBSERVED: { actions: assign(({ event }) => ({ ...event.facts })) },
  },
  states: {
    created: {
      on: { START: 'starting', REMOVE: 'removing' },
    },
    starting: {
      entry: assign({ thenStart: false }),
      invoke: {
        id: 'startRun',
        src: 'startRun',
        input: idInput,
        onDone: [
          { guard: { type: 'started', params: ({ event }) => event.output }, target: 'running' },
          { guard: { type: 'neverRan', params: ({ event }) => event.output }, target: 'created' },
          { target: 'exited' },
        ],
        onError: 'exited',
      },
    },
    running: {
      on: {
        STOP: 'stopping',
        RESTART: { target: 'stopping', actions: assign({ thenStart: true }) },
        PAUSE: 'pausing',
        EXITED: 'collecting',
        REMOVE: { target: 'killing', actions: assign({ thenRemove: true }) },
      },
    },
    pausing: {
      invoke: { id: 'pauseRun', src: 'pauseRun', input: idInput, onDone: 'paused', onError: 'running' },
      on: { EXITED: 'collecting' },
    },
    paused: {
      on: {
        RESUME: 'resuming',
        STOP: 'stopping',
        RESTART: { target: 'stopping', actions: assign({ thenStart: true }) },
        EXITED: 'collecting',
        REMOVE: { target: 'killing', actions: assign({ thenRemove: true }) },
      },
    },
    resuming: {
      invoke: { id: 'resumeRun', src: 'resumeRun', input: idInput, onDone: 'running', onError: 'paused' },
      on: { EXITED: 'collecting' },
    },
    stopping: {
      // The deadline is set once per stop: a stop resumed after a crash keeps the one in status.
      entry: assign(({ context }) => ({
        stopDeadline: context.stopDeadline ?? (context.stopTimeoutS < 0 ? -1 : context.now + context.stopTimeoutS * 1000),
      })),
      initial: 'signalling',
      states: {
        signalling: { invoke: { id: 'signalStop', src: 'signalStop', input: idInput, onDone: 'waiting', onError: 'waiting' } },
        waiting: { after: { grace: { guard: 'hasDeadline', target: '#container.killing' } } },
      },
      on: {
        EXITED: 'collecting',
        RESTART: { actions: assign({ thenStart: true }) },
        REMOVE: { target: 'killing', actions: assign({ thenRemove: true }) },
      },
    },
    killing: {
      initial: 'signalling',
      states: {
        signalling: { invoke: { id: 'killRun', src: 'killRun', input: idInput, onDone: 'waiting', onError: 'waiting' } },
        waiting: { after: { killRecheck: 'signalling' } },
      },
      on: {
        EXITED: 'collecting',
        RESTART: { actions: assign({ thenStart: true }) },
        REMOVE: { actions: assign({ thenRemove: true }) },
      },
    },
    collecting: {
      invoke: {
        id: 'collectRun',
        src: 'collectRun',
        input: idInput,
        onDone: [
          { guard: 'thenRemove', target: 'removing' },
          { guard: 'thenStart', target: 'starting' },
          { guard: { type: 'bootRestart', params: ({ event }) => event.output }, target: 'starting' },
          {
            guard: { type: 'policyRestarts', params: ({ event }) => event.output },
            target: 'restarting',
            actions: assign(({ context, event }) => {
              const delay = nextRestartDelay(context.restartDelayMs, event.output.ranMs);
              return { restartDelayMs: delay, restartAt: context.now + delay };
            }),
          },
          { guard: 'autoRemove', target: 'removing', actions: assign({ restartDelayMs: 0 }) },
          { target: 'exited', actions: assign({ restartDelayMs: 0 }) },
        ],
        onError: 'exited',
      },
      exit: assign({ stopDeadline: null }),
    },
    restarting: {
      after: { backoff: { target: 'starting', actions: assign(({ context }) => ({ restartCount: context.restartCount + 1, restartAt: null })) } },
      on: {
        START: { target: 'starting', actions: assign({ restartAt: null }) },
        STOP: { target: 'exited', actions: assign({ restartAt: null }) },
        REMOVE: 'removing',
      },
    },
    exited: {
      on: { START: 'starting', REMOVE: 'removing' },
    },
    removing: {
      invoke: { id: 'teardown', src: 'teardown', input: idInput, onDone: 'removed' },
    },
    removed: { type: 'final' },
    dead: {
      on: { REMOVE: 'removing' },
    },
  },
});

/** States persisted with the container; any other is rebuilt from observation after a crash. */
export const SETTLED = ['created', 'running', 'paused', 'exited', 'restarting', 'dead'] as const;
export type SettledState = (typeof SETTLED)[number];

/** The settled state a container in `phase` is in (the state to restore from status). */
export function settledStateOf(phase: ContainerPhase): SettledState {
  switch (phase) {
    case 'created':
    case 'running':
    case 'paused':
    case 'exited':
    case 'restarting':
    case 'dead':
      return phase;
    case 'removing':
      return 'exited';
  }
}
