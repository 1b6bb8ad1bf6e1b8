// The pull lifecycle as an XState v5 machine, driven like the image machine (pure `transition`
// through controllers/machine-driver.ts). A pull runs for minutes, so no reconcile waits on it:
// the `start` effect launches the download as a job of the reconciler and returns at once; the
// job's end enqueues the key again and that reconcile sends FINISHED with the outcome.
//
//   pending | done | failed --PULL--> starting --job launched--> pulling
//   pulling --FINISHED ok--> done        pulling --FINISHED not ok--> failed
//   pulling --PULL (the job is gone: a daemon restart)--> starting
//   any --REMOVE--> cancelling --job stopped--> removed
import { assign, fromPromise, setup } from 'xstate';
import { errorParams, notProvidedFor, type ErrorParams } from '../machine-kit.ts';

/** How a job ended. */
export interface PullOutcome {
  ok: boolean;
  imageId: string;
  changed: boolean;
  error: string;
  errorCode: string;
}

export interface PullContext {
  /** The record's name (the effects' input). */
  name: string;
  outcome: PullOutcome | null;
  /** An effect that threw, for the reconciler to throw. */
  cause: unknown;
}

export type PullEvent = { type: 'PULL' } | { type: 'FINISHED'; outcome: PullOutcome } | { type: 'REMOVE' };

const nameInput = ({ context }: { context: PullContext }) => ({ name: context.name });
const notProvided = notProvidedFor('pull');

export const pullLifecycle = setup({
  types: {
    context: {} as PullContext,
    events: {} as PullEvent,
    input: {} as { name: string },
  },
  actors: {
    /** Launch the download job (not wait for it). */
    start: fromPromise<void, { name: string }>(notProvided('start')),
    /** Abort the job, if any, and delete the record. */
    cancel: fromPromise<void, { name: string }>(notProvided('cancel')),
  },
  actions: {
    /** An effect that threw (params: `errorParams`). */
    failure: assign((_, { error }: ErrorParams) => ({ cause: error })),
    /** params: the FINISHED event's outcome. */
    finished: assign((_, outcome: PullOutcome) => ({ outcome })),
  },
  guards: {
    /** params: the FINISHED event's outcome. */
    ok: (_, outcome: PullOutcome) => outcome.ok,
  },
}).createMachine({
  id: 'pull',
  initial: 'pending',
  context: ({ input }) => ({ name: input.name, outcome: null, cause: null }),
  on: { REMOVE: '.cancelling' },
  states: {
    pending: { on: { PULL: 'starting' } },
    starting: {
      invoke: { id: 'start', src: 'start', input: nameInput, onDone: 'pulling', onError: { target: 'pending', actions: { type: 'failure', params: errorParams } } },
    },
    pulling: {
      on: {
        FINISHED: [
          { guard: { type: 'ok', params: ({ event }) => event.outcome }, target: 'done', actions: { type: 'finished', params: ({ event }) => event.outcome } },
          { target: 'failed', actions: { type: 'finished', params: ({ event }) => event.outcome } },
        ],
        PULL: 'starting',
      },
    },
    done: { on: { PULL: 'starting' } },
    failed: { on: { PULL: 'starting' } },
    cancelling: {
      invoke: { id: 'cancel', src: 'cancel', input: nameInput, onDone: 'removed', onError: { target: 'pending', actions: { type: 'failure', params: errorParams } } },
    },
    removed: { type: 'final' },
  },
});
