// The endpoint lifecycle as an XState v5 machine, driven by the reconciler with the pure
// `transition` function (controllers/machine-driver.ts). Each reconcile sends OBSERVED with the
// facts it read (is the container running, which process holds its namespace, does the network
// exist), then APPLY for an endpoint the spec wants present or REMOVE for one marked removed (or
// whose container is gone).
//
//   pending|detached|attached|failed --APPLY--> checking
//     checking: no network          -> detached  (NetworkNotFound)
//               container not running -> detached (ContainerNotRunning)
//               a primary the start step plugged into this run -> attached (adopted, no effect)
//               plugged into this run -> attached
//               otherwise             -> attaching --done--> attached
//                                                  \--error--> failed   (retried with back-off)
//   any settled --REMOVE--> removing: tearingDown --done--> removed (record deleted)
//                                                \--error--> stalled --REMOVE--> tearingDown
//
// A new run of the container is a new network namespace: an endpoint attached to an older pid is
// stale and is plugged again. The interface of a run that ended went with its namespace, so
// "detached" needs no effect; the address stays claimed for the next run.
import { assign, fromPromise, setup } from 'xstate';
import type { EndpointAddresses } from '../../store/kinds/endpoint.ts';
import { errorParams, messageOf, notProvidedFor, type ErrorParams } from '../machine-kit.ts';

export interface EndpointFacts {
  /** The record's name (the effects' input). */
  name: string;
  /** The container's task is up (running or paused) with process `pid`. */
  running: boolean;
  pid: number;
  networkExists: boolean;
  /** A primary endpoint the container's start step plugged into this run (eth0), to adopt. */
  startPlugged: Plugged | null;
}

/** What an attach answers (or an adoption takes over). */
export interface Plugged {
  pid: number;
  ifName: string;
  hostVeth: string;
  addresses: EndpointAddresses;
  by: 'start' | 'endpoint';
}

export interface EndpointMemory {
  /** The run it is plugged into (0: none), with its interface. */
  plugged: Plugged | null;
  /** Why it is not attached (a condition reason), '' when it is. */
  reason: string;
  error: string;
  cause: unknown;
}

export interface EndpointContext extends EndpointFacts, EndpointMemory {}

export type EndpointEvent = { type: 'OBSERVED'; facts: EndpointFacts } | { type: 'APPLY' } | { type: 'REMOVE' };

export interface EffectInput {
  name: string;
  /** What is plugged now (teardown unplugs it when its run is still up). */
  plugged: Plugged | null;
  /** The container's current pid (attach plugs into it; teardown unplugs only from it). */
  pid: number;
}

const effectInput = ({ context }: { context: EndpointContext }): EffectInput => ({ name: context.name, plugged: context.plugged, pid: context.running ? context.pid : 0 });
const notProvided = notProvidedFor('endpoint');

export const INITIAL_FACTS: EndpointFacts = { name: '', running: false, pid: 0, networkExists: true, startPlugged: null };

export function restoredContext(facts: EndpointFacts, plugged: Plugged | null): EndpointContext {
  return { ...facts, plugged, reason: '', error: '', cause: null };
}

export const endpointLifecycle = setup({
  types: {
    context: {} as EndpointContext,
    events: {} as EndpointEvent,
    input: {} as Partial<EndpointFacts> | undefined,
  },
  actors: {
    /** Plug the endpoint into the run of `pid`; answers the interface and addresses. */
    attach: fromPromise<Plugged, EffectInput>(notProvided('attach')),
    /** Unplug (when plugged into a live run), free the address, delete the record. */
    teardown: fromPromise<void, EffectInput>(notProvided('teardown')),
  },
  actions: {
    /** A failed effect (params: its error event's error, `errorParams`). */
    failure: assign((_, { error }: ErrorParams) => ({ error: messageOf(error), cause: error, reason: 'AttachFailed' })),
  },
  guards: {
    noNetwork: ({ context }) => !context.networkExists,
    notRunning: ({ context }) => !context.running || context.pid <= 0,
    adopt: ({ context }) => !!context.startPlugged && context.startPlugged.pid === context.pid,
    current: ({ context }) => !!context.plugged && context.plugged.pid === context.pid,
  },
}).createMachine({
  id: 'endpoint',
  initial: 'pending',
  context: ({ input }) => restoredContext({ ...INITIAL_FACTS, ...input }, null),
  on: {
    OBSERVED: { actions: assign(({ event }) => ({ ...event.facts })) },
  },
  states: {
    pending: { on: { APPLY: 'checking', REMOVE: 'removing' } },
    checking: {
      always: [
        { guard: 'noNetwork', target: 'detached', actions: assign({ reason: 'NetworkNotFound', plugged: null }) },
        { guard: 'notRunning', target: 'detached', actions: assign({ reason: 'ContainerNotRunning', plugged: null }) },
        { guard: 'adopt', target: 'attached', actions: assign(({ context }) => ({ plugged: context.startPlugged, reason: '' })) },
        { guard: 'current', target: 'attached' },
        { target: 'attaching' },
      ],
    },
    attaching: {
      entry: assign({ error: '', cause: null }),
      invoke: {
        id: 'attach',
        src: 'attach',
        input: effectInput,
        onDone: { target: 'attached', actions: assign(({ event }) => ({ plugged: event.output, reason: '' })) },
        onError: { target: 'failed', actions: { type: 'failure', params: errorParams } },
      },
    },
    attached: { on: { APPLY: 'checking', REMOVE: 'removing' } },
    detached: { on: { APPLY: 'checking', REMOVE: 'removing' } },
    failed: { on: { APPLY: 'checking', REMOVE: 'removing' } },
    removing: {
      initial: 'tearingDown',
      states: {
        tearingDown: {
          invoke: { id: 'teardown', src: 'teardown', input: effectInput, onDone: '#endpoint.removed', onError: { target: 'stalled', actions: { type: 'failure', params: errorParams } } },
        },
        // The teardown failed; the record still says removed, so the next reconcile asks again.
        stalled: { on: { REMOVE: 'tearingDown' } },
      },
    },
    removed: { type: 'final' },
  },
});

export const SETTLED = ['pending', 'attached', 'detached', 'failed'] as const;
export type SettledState = (typeof SETTLED)[number];
