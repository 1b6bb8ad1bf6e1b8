// The volume lifecycle as an XState v5 machine, driven by the reconciler with the pure
// `transition` function (controllers/machine-driver.ts). Each reconcile sends OBSERVED with the
// facts it read (the name, whether a container still names the volume, the clock), then APPLY
// for a volume the spec wants present or REMOVE for one marked removed.
//
//   pending --APPLY--> creating --done--> ready
//                          \--error--> failed --APPLY--> creating        (the retry)
//   any settled --REMOVE--> removing: waiting while in use (looked at again after `inUseRetry`),
//                           then tearingDown --done--> removed            (data gone, record deleted)
//
// The record is deleted only once the data is gone (the teardown effect does both, in that
// order): the record stands as the finalizer of its data. A volume a container still names is
// never torn down, whatever its spec says.
import { assign, fromPromise, setup } from 'xstate';
import type { VolumeStatus } from '../../store/kinds/volume.ts';
import { errorParams, messageOf, notProvidedFor, type ErrorParams } from '../machine-kit.ts';

export interface VolumeFacts {
  name: string;
  now: number;
  /** Some container (in any state) still mounts it. */
  inUse: boolean;
}

export interface VolumeMemory {
  /** The data directory, once created. */
  mountpoint: string;
  /** The last failure's message (status.error), '' when none. */
  error: string;
  /** The last failure itself, for the reconciler to throw. */
  cause: unknown;
}

export interface VolumeContext extends VolumeFacts, VolumeMemory {}

export type VolumeEvent = { type: 'OBSERVED'; facts: VolumeFacts } | { type: 'APPLY' } | { type: 'REMOVE' };

export interface EffectInput {
  name: string;
}

/** How soon a removal waiting on a container is looked at again. */
export const IN_USE_RETRY_MS = 500;

const nameInput = ({ context }: { context: VolumeContext }) => ({ name: context.name });
const notProvided = notProvidedFor('volume');

export const INITIAL_FACTS: VolumeFacts = { name: '', now: 0, inUse: false };

export function restoredContext(facts: VolumeFacts, mountpoint = ''): VolumeContext {
  return { ...facts, mountpoint, error: '', cause: null };
}

export const volumeLifecycle = setup({
  types: {
    context: {} as VolumeContext,
    events: {} as VolumeEvent,
    input: {} as Partial<VolumeFacts> | undefined,
  },
  actors: {
    /** Make the data directory; answers its path. */
    create: fromPromise<string, EffectInput>(notProvided('create')),
    /** Take the data away (unmount, delete), then the record. */
    teardown: fromPromise<void, EffectInput>(notProvided('teardown')),
  },
  actions: {
    /** A failed effect (params: its error event's error, `errorParams`). */
    failure: assign((_, { error }: ErrorParams) => ({ error: messageOf(error), cause: error })),
  },
  guards: {
    inUse: ({ context }) => context.inUse,
  },
  delays: {
    inUseRetry: IN_USE_RETRY_MS,
  },
}).createMachine({
  id: 'volume',
  initial: 'pending',
  context: ({ input }) => restoredContext({ ...INITIAL_FACTS, ...input }),
  on: {
    OBSERVED: { actions: assign(({ event }) => ({ ...event.facts })) },
  },
  states: {
    pending: { on: { APPLY: 'creating', REMOVE: 'removing' } },
    creating: {
      entry: assign({ error: '', cause: null }),
      invoke: {
        id: 'create',
        src: 'create',
        input: nameInput,
        onDone: { target: 'ready', actions: assign(({ event }) => ({ mountpoint: event.output })) },
        onError: { target: 'failed', actions: { type: 'failure', params: errorParams } },
      },
    },
    ready: { on: { REMOVE: 'removing' } },
    failed: { on: { APPLY: 'creating', REMOVE: 'removing' } },
    removing: {
      initial: 'checking',
      states: {
        checking: { always: [{ guard: 'inUse', target: 'waiting' }, { target: 'tearingDown' }] },
        waiting: { after: { inUseRetry: 'checking' }, on: { REMOVE: 'checking' } },
        tearingDown: {
          invoke: { id: 'teardown', src: 'teardown', input: nameInput, onDone: '#volume.removed', onError: { target: 'stalled', actions: { type: 'failure', params: errorParams } } },
        },
        // The teardown failed; the record still says removed, so the next reconcile asks again.
        stalled: { on: { REMOVE: 'checking' } },
      },
    },
    removed: { type: 'final' },
  },
});

export const SETTLED = ['pending', 'ready', 'failed'] as const;
export type SettledState = (typeof SETTLED)[number];

/** The state a volume whose status says `phase` is restored to (a removal restarts from its check). */
export function settledStateOf(phase: VolumeStatus['phase']): SettledState {
  return phase === 'removing' ? 'ready' : phase;
}
