// The image lifecycle as an XState v5 machine. The reconciler drives it with the pure
// `transition` function (see controllers/machine-driver.ts): each reconcile sends OBSERVED with
// the facts it read (the record's name, its top layer's chain id, the clock), then VERIFY when the
// status has not seen this generation yet and REMOVE for an image marked removed.
//
//   pending --VERIFY--> verifying --layers present--> ready
//                               \--top layer missing--> failed
//   ready | failed --VERIFY (a new generation)--> verifying
//   any settled --REMOVE--> removing --done--> removed
//
// Nothing here waits on time: an image is not looked at again until its record changes, so the
// machine has no delays and a reconcile never asks to be requeued. A failed removal is thrown by
// the reconciler (the controller retries it with back-off); the record still says removed.
import { assign, fromPromise, setup } from 'xstate';
import type { ImageStatus } from '../../store/kinds/image.ts';
import { errorParams, notProvidedFor, type ErrorParams } from '../machine-kit.ts';

/** What the reconciler read before this pass. */
export interface ImageFacts {
  /** The record's name, the image id (the effects' input). */
  id: string;
  now: number;
  /** Chain id of the image's top layer, null for an image with no layers. */
  chainId: string | null;
}

/** What the machine keeps of the last effect's outcome (memory only, never persisted). */
export interface ImageMemory {
  /** Why the image failed (status.error), '' when it did not. */
  error: string;
  /** The last effect's failure itself, for the reconciler to throw. */
  cause: unknown;
}

export interface ImageContext extends ImageFacts, ImageMemory {}

export type ImageEvent = { type: 'OBSERVED'; facts: ImageFacts } | { type: 'VERIFY' } | { type: 'REMOVE' };

/** What every effect is given. */
export interface EffectInput {
  id: string;
}

/** What the verify effect reports. */
export interface VerifyOutput {
  /** The image's top layer is not in the layer store. */
  missing: boolean;
}

const idInput = ({ context }: { context: ImageContext }) => ({ id: context.id });

const notProvided = notProvidedFor('image');

export const INITIAL_FACTS: ImageFacts = { id: '', now: 0, chainId: null };

export const INITIAL_MEMORY: ImageMemory = { error: '', cause: null };

/** The machine's context for an image restored from status (or new). */
export function restoredContext(facts: ImageFacts): ImageContext {
  return { ...facts, ...INITIAL_MEMORY };
}

/** status.error of an image whose top layer is missing. */
export function missingLayerError(chainId: string | null): string {
  return `layer ${chainId} is missing`;
}

export const imageLifecycle = setup({
  types: {
    context: {} as ImageContext,
    events: {} as ImageEvent,
    input: {} as Partial<ImageFacts> | undefined,
  },
  actors: {
    /** Is the image's top layer (and so every layer below it) present? */
    verifyLayers: fromPromise<VerifyOutput, EffectInput>(notProvided('verifyLayers')),
    /** Remove the layers no other image shares, top first, then the record. */
    release: fromPromise<void, EffectInput>(notProvided('release')),
  },
  actions: {
    /** A failed effect: remember it for the reconciler to throw; params: `errorParams`. */
    failure: assign((_, { error }: ErrorParams) => ({ cause: error })),
  },
  guards: {
    /** params: the verify effect's output, from its done event. */
    missing: (_, output: VerifyOutput) => output.missing,
  },
}).createMachine({
  id: 'image',
  initial: 'pending',
  context: ({ input }) => restoredContext({ ...INITIAL_FACTS, ...input }),
  on: {
    OBSERVED: { actions: assign(({ event }) => ({ ...event.facts })) },
  },
  states: {
    pending: {
      on: { VERIFY: 'verifying', REMOVE: 'removing' },
    },
    verifying: {
      entry: assign({ error: '', cause: null }),
      invoke: {
        id: 'verifyLayers',
        src: 'verifyLayers',
        input: idInput,
        onDone: [
          { guard: { type: 'missing', params: ({ event }) => event.output }, target: 'failed', actions: assign(({ context }) => ({ error: missingLayerError(context.chainId) })) },
          { target: 'ready' },
        ],
        // Not known (the check itself threw): the status is left as it was.
        onError: { target: 'pending', actions: { type: 'failure', params: errorParams } },
      },
    },
    ready: {
      on: { VERIFY: 'verifying', REMOVE: 'removing' },
    },
    failed: {
      on: { VERIFY: 'verifying', REMOVE: 'removing' },
    },
    removing: {
      initial: 'releasing',
      states: {
        releasing: {
          invoke: { id: 'release', src: 'release', input: idInput, onDone: '#image.removed', onError: { target: 'stalled', actions: { type: 'failure', params: errorParams } } },
        },
        // The release failed; the record still says removed, so the next reconcile asks again.
        stalled: { on: { REMOVE: 'releasing' } },
      },
    },
    removed: { type: 'final' },
  },
});

/** States a reconcile can end in (an effect always completes within one reconcile). */
export const SETTLED = ['pending', 'ready', 'failed'] as const;
export type SettledState = (typeof SETTLED)[number];

/**
 * The state an image whose status says `phase` is restored to. Phase 'removing' is never written
 * by this reconciler; such an image is treated as not yet verified (the events decide what runs).
 */
export function settledStateOf(phase: ImageStatus['phase']): SettledState {
  return phase === 'removing' ? 'pending' : phase;
}
