// The network lifecycle as an XState v5 machine. The reconciler drives it with the pure
// `transition` function (see controllers/machine-driver.ts): each reconcile sends OBSERVED with
// the facts it read (the record's name, whether it is a bridge network, the recheck period, the
// clock), then APPLY for a network the spec wants present or REMOVE for one marked removed.
//
//   pending --APPLY--> applying --done--> ready --after recheck--> applying   (drift repair)
//                          \--error--> failed --APPLY--> applying              (the retry)
//   any settled --REMOVE--> removing --done--> removed
//
// The host's state can only be observed by converging it (ensureBridge, ensureIptables answer
// what they had to put back), so every reconcile of a present bridge network applies; the recheck
// delay is what brings a ready network back to applying when nothing else wakes it, and it
// becomes the reconcile's `requeueAfter`. A network with no host state (host, none) is ready at
// once and is never rechecked. A failure is thrown by the reconciler after the status is written,
// so the retry's back-off is the controller's, as for any failed reconcile.
import { assign, fromPromise, setup } from 'xstate';
import { isCode } from '../../lib/errors.ts';
import type { NetworkStatus } from '../../store/kinds/network.ts';
import { errorParams, messageOf, notProvidedFor, type ErrorParams } from '../machine-kit.ts';

/** What the reconciler read before this pass. */
export interface NetworkFacts {
  /** The record's name (the effects' input). */
  id: string;
  now: number;
  /** A bridge network: host state to converge, rechecked every `recheckMs`. */
  bridge: boolean;
  recheckMs: number;
}

/** What the machine keeps of the last effect's outcome (memory only, never persisted). */
export interface NetworkMemory {
  /** What the last converge had to put back. */
  repairs: string[];
  /** The last failure's message (status.error), '' when none. */
  error: string;
  /** The last failure itself, for the reconciler to throw. */
  cause: unknown;
}

export interface NetworkContext extends NetworkFacts, NetworkMemory {}

export type NetworkEvent = { type: 'OBSERVED'; facts: NetworkFacts } | { type: 'APPLY' } | { type: 'REMOVE' };

/** What every effect is given. */
export interface EffectInput {
  id: string;
}

/** How often a ready bridge network is looked at again (drift repair). */
export const RECHECK_MS = 30_000;

const idInput = ({ context }: { context: NetworkContext }) => ({ id: context.id });

const notProvided = notProvidedFor('network');

export const INITIAL_FACTS: NetworkFacts = { id: '', now: 0, bridge: false, recheckMs: RECHECK_MS };

export const INITIAL_MEMORY: NetworkMemory = { repairs: [], error: '', cause: null };

/** The machine's context for a network restored from status (or new). */
export function restoredContext(facts: NetworkFacts): NetworkContext {
  return { ...facts, ...INITIAL_MEMORY };
}

export const networkLifecycle = setup({
  types: {
    context: {} as NetworkContext,
    events: {} as NetworkEvent,
    input: {} as Partial<NetworkFacts> | undefined,
  },
  actors: {
    /** Bring bridge, ip_forward and iptables to the spec, collect orphan addresses; answers the repairs. */
    converge: fromPromise<string[], EffectInput>(notProvided('converge')),
    /** Take the host state away, drop the address records and the network record. */
    teardown: fromPromise<void, EffectInput>(notProvided('teardown')),
  },
  actions: {
    /** A failed effect: remember it (message for status, the error to throw); params: `errorParams`. */
    failure: assign((_, { error }: ErrorParams) => ({ error: messageOf(error), cause: error })),
  },
  guards: {
    bridge: ({ context }) => context.bridge,
    /** The effect's error (params: `errorParams`) is a cancellation. */
    canceled: (_, { error }: ErrorParams) => isCode(error, 'Canceled'),
  },
  delays: {
    // A network with nothing on the host has nothing to drift: no recheck (Infinity: no timer).
    recheck: ({ context }) => (context.bridge ? context.recheckMs : Infinity),
  },
}).createMachine({
  id: 'network',
  initial: 'pending',
  context: ({ input }) => restoredContext({ ...INITIAL_FACTS, ...input }),
  on: {
    OBSERVED: { actions: assign(({ event }) => ({ ...event.facts })) },
  },
  states: {
    pending: {
      on: { APPLY: [{ guard: 'bridge', target: 'applying' }, { target: 'ready' }], REMOVE: 'removing' },
    },
    applying: {
      entry: assign({ repairs: [], error: '', cause: null }),
      invoke: {
        id: 'converge',
        src: 'converge',
        input: idInput,
        onDone: { target: 'ready', actions: assign(({ event }) => ({ repairs: event.output })) },
        onError: [
          // Cancelled (the daemon is stopping): not a failure of the network; status stays.
          { guard: { type: 'canceled', params: errorParams }, target: 'pending', actions: assign(({ event }) => ({ cause: event.error })) },
          { target: 'failed', actions: { type: 'failure', params: errorParams } },
        ],
      },
    },
    ready: {
      after: { recheck: 'applying' },
      on: { APPLY: { guard: 'bridge', target: 'applying' }, REMOVE: 'removing' },
    },
    failed: {
      on: { APPLY: [{ guard: 'bridge', target: 'applying' }, { target: 'ready' }], REMOVE: 'removing' },
    },
    removing: {
      initial: 'tearingDown',
      states: {
        tearingDown: {
          invoke: { id: 'teardown', src: 'teardown', input: idInput, onDone: '#network.removed', onError: { target: 'stalled', actions: { type: 'failure', params: errorParams } } },
        },
        // The teardown failed; the record still says removed, so the next reconcile asks again.
        stalled: { on: { REMOVE: 'tearingDown' } },
      },
    },
    removed: { type: 'final' },
  },
});

/** States a reconcile can end in (an effect always completes within one reconcile). */
export const SETTLED = ['pending', 'ready', 'failed'] as const;
export type SettledState = (typeof SETTLED)[number];

/** The state a network whose status says `phase` is restored to. */
export function settledStateOf(phase: NetworkStatus['phase']): SettledState {
  return phase;
}
