// The container lifecycle as an XState machine. The reconciler persists only settled phases
// (created, running, paused, exited) in status; it asks this machine whether a step is legal
// from the phase it observed before performing it, so an illegal request (pause an exited
// container, start one being removed) is refused in one place.
import { setup } from 'xstate';
import type { ContainerPhase } from '../../store/types.ts';

export type ContainerEvent =
  | { type: 'START' }
  | { type: 'STARTED' }
  | { type: 'START_FAILED' }
  | { type: 'EXITED' }
  | { type: 'PAUSE' }
  | { type: 'RESUME' }
  | { type: 'RESTART_WAIT' }
  | { type: 'REMOVE' };

export const containerMachine = setup({
  types: { events: {} as ContainerEvent },
}).createMachine({
  id: 'container',
  initial: 'created',
  states: {
    created: { on: { START: 'starting', REMOVE: 'removing' } },
    starting: { on: { STARTED: 'running', START_FAILED: 'created', EXITED: 'exited' } },
    running: { on: { EXITED: 'exited', PAUSE: 'paused', REMOVE: 'removing' } },
    paused: { on: { RESUME: 'running', EXITED: 'exited', REMOVE: 'removing' } },
    restarting: { on: { START: 'starting', REMOVE: 'removing' } },
    exited: { on: { START: 'starting', RESTART_WAIT: 'restarting', REMOVE: 'removing' } },
    removing: {},
    dead: { on: { REMOVE: 'removing' } },
  },
});

/** Settled phase after `event` from `phase`, or null when the machine refuses the step. */
export function nextPhase(phase: ContainerPhase | 'starting', event: ContainerEvent['type']): string | null {
  const state = containerMachine.states[phase];
  if (!state) return null;
  const target = (state.config.on as Record<string, string> | undefined)?.[event];
  return target ?? null;
}
