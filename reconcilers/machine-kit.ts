// Pieces every lifecycle machine uses: the stand-in for an effect its reconciler has not provided,
// and the message a failure is recorded with in status.error.

/** `notProvidedFor('network')('ensureBridge')`: an effect that fails, naming what is missing. */
export const notProvidedFor = (kind: string) => (name: string) => () => Promise.reject(new Error(`${kind} effect ${name} not provided`));

export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** The params of a machine's `failure` action (and of any guard on an effect's error). */
export interface ErrorParams {
  error: unknown;
}

/**
 * The params an `onError` transition hands its `failure` action: the error of the effect's
 * error event, `actions: { type: 'failure', params: errorParams }`. Typed by the event, so it is
 * accepted only where the event carries an `error` (an invoked actor's error event).
 */
export const errorParams = ({ event }: { event: { error: unknown } }): ErrorParams => ({ error: event.error });
