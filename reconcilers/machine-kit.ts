// Pieces every lifecycle machine uses: the stand-in for an effect its reconciler has not provided,
// and the message a failure is recorded with in status.error.

/** `notProvidedFor('network')('ensureBridge')`: an effect that fails, naming what is missing. */
export const notProvidedFor = (kind: string) => (name: string) => () => Promise.reject(new Error(`${kind} effect ${name} not provided`));

export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
