// The exec lifecycle as an XState v5 machine: created -> starting -> running -> exited, a start
// that fails going straight to exited with 126/127. The start is the named effect `startProcess`
// (an invoked promise actor), which ExecManager provides (`.provide({ actors })`) over the
// supervisor and stdio; the machine keeps the pid and the exit code in its context, and
// ExecManager derives Running/ExitCode/Pid for inspect from the snapshot.
//
// Driven with `step` (controllers/machine-driver.ts), not `drive`: `start()` must claim the exec
// synchronously (START -> starting is recorded before its first await, so a second, concurrent
// start is refused with 409 by the machine's state), its caller needs the effect's own outcome
// (the error it throws, the exit promise), and the exit comes much later from a wait on the
// process rather than within one drive. So ExecManager steps START, runs the one effect it asks
// for, steps the effect's done/error event, and steps EXITED when the process ends. There are no
// delays, hence no timers.
import { assign, fromPromise, setup } from 'xstate';

export interface ExecContext {
  /** The exec id (the effect's input). */
  id: string;
  /** The process id once started, else 0. */
  pid: number;
  /** Its exit code once exited (126/127 when it could not be started), else null. */
  exitCode: number | null;
}

export type ExecEvent = { type: 'START' } | { type: 'EXITED'; exitCode: number };

/** What the start effect is given. */
export interface ExecEffectInput {
  id: string;
}

/** What the start effect reports: the process it started. */
export interface ExecStartOutput {
  pid: number;
}

export type ExecState = 'created' | 'starting' | 'running' | 'exited';

/** 127 when the command was not found, 126 when it could not be executed. */
export function startFailureCode(message: string): number {
  if (/executable file not found|no such file or directory/i.test(message)) return 127;
  if (/permission denied|not a directory|is a directory/i.test(message)) return 126;
  return 126;
}

export const execLifecycle = setup({
  types: {
    context: {} as ExecContext,
    events: {} as ExecEvent,
    input: {} as { id: string },
  },
  actors: {
    startProcess: fromPromise<ExecStartOutput, ExecEffectInput>(() => Promise.reject(new Error('exec effect startProcess not provided'))),
  },
}).createMachine({
  id: 'exec',
  initial: 'created',
  context: ({ input }) => ({ id: input.id, pid: 0, exitCode: null }),
  states: {
    created: {
      on: { START: 'starting' },
    },
    starting: {
      invoke: {
        id: 'startProcess',
        src: 'startProcess',
        input: ({ context }) => ({ id: context.id }),
        onDone: { target: 'running', actions: assign({ pid: ({ event }) => event.output.pid }) },
        onError: {
          target: 'exited',
          actions: assign({
            exitCode: ({ event }) => startFailureCode(event.error instanceof Error ? event.error.message : String(event.error)),
          }),
        },
      },
    },
    running: {
      on: { EXITED: { target: 'exited', actions: assign({ exitCode: ({ event }) => event.exitCode }) } },
    },
    // Not a final state: an exec is kept (and inspected) a while after it ends.
    exited: {},
  },
});
