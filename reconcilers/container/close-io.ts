// A run's or exec's stdio hub as the steps hand it out: closing its stdin also tells the supervisor.
import type { HubLike } from './deps.ts';

/** A hub whose closeStdin also tells the supervisor, so the process sees EOF. */
export function withCloseIO(hub: HubLike, closeIO: () => Promise<void>, ready: Promise<unknown> = Promise.resolve()): HubLike {
  let closed = false;
  return {
    subscribe: (fn, onEnd, opts) => hub.subscribe(fn, onEnd, opts),
    ended: hub.ended,
    writeStdin: (buf) => hub.writeStdin(buf),
    closeStdin: () => {
      if (closed) return;
      closed = true;
      // Until the shim holds the FIFO, ours is its only open end: closing it would drop bytes
      // already written (stdin piped to `run -i` ends before the task exists).
      ready.then(
        () => {
          hub.closeStdin();
          closeIO().catch(() => {});
        },
        () => hub.closeStdin(),
      );
    },
  };
}
