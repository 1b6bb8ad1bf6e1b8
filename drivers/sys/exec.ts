// Options every execa call of the engine starts from, so a child behaves as one from
// child_process.spawn did: execa's `cleanup` (kill the child when the daemon exits, through
// process-wide signal handlers) and `forceKillAfterDelay` (SIGKILL 5 s after a timeout's or a
// cancel's SIGTERM) are off; each caller sets its own killSignal, timeout and cancelSignal.
export const EXECA_DEFAULTS = { cleanup: false, forceKillAfterDelay: false } as const;

/** Deadline for a short command (mount, cp of a file list, ...) whose caller gives none. */
export const SHORT_COMMAND_TIMEOUT_MS = 60_000;
