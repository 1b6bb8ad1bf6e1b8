// The exec lifecycle as an XState v5 machine: created -> starting -> running -> exited, a start
// that fails going straight to exited with 126/127 and why. The start is the named effect
// `startProcess` (an invoked promise actor), which the exec reconciler provides (`.provide({
// actors })`) over the supervisor and stdio; the machine keeps the pid, the exit code and the
// start's error in its context, which the reconciler writes to the exec's status.
//
// Driven by the machine host (controllers/machine-host.ts): a reconcile sends START when the spec
// asks for a start (the effect runs within that pass, until the process runs), and EXITED when
// the process's exit has been observed. There are no delays, hence no timers.
import { assign, fromPromise, setup } from 'xstate';
import { errorCode } from '../../lib/errors.ts';

export interface ExecContext {
  /** The exec id (the effect's input). */
  id: string;
  /** The process id once started, else 0. */
  pid: number;
  /** Its exit code once exited (126/127 when it could not be started), else null. */
  exitCode: number | null;
  /** Why the start failed, and the error's class (lib/errors.ts), else ''. */
  error: string;
  errorCode: string;
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
  context: ({ input }) => ({ id: input.id, pid: 0, exitCode: null, error: '', errorCode: '' }),
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
            error: ({ event }) => (event.error instanceof Error ? event.error.message : String(event.error)),
            errorCode: ({ event }) => errorCode(event.error),
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
