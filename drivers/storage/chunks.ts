// The chunks of a byte stream as they were pushed. A Readable's own async iterator calls read(),
// which joins whatever is buffered into one new Buffer: on layer data, where the consumer often
// lags a little, that copies most bytes once more, and those allocations are what drive the
// daemon's major collections. Here the stream flows and is paused while a few chunks wait.
import type { Readable } from 'node:stream';

export async function* chunksOf(r: Readable, maxQueued = 8): AsyncGenerator<Buffer> {
  const queue: Buffer[] = [];
  let ended = false;
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  const poke = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const onData = (c: Buffer) => {
    queue.push(c);
    if (queue.length >= maxQueued) r.pause();
    poke();
  };
  const onEnd = () => {
    ended = true;
    poke();
  };
  const onError = (err: Error) => {
    failure ??= err;
    poke();
  };
  const onClose = () => {
    if (!ended) failure ??= Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
    poke();
  };
  if (r.errored) failure = r.errored;
  else if (r.readableEnded) ended = true;
  else if (r.destroyed) onClose();
  r.on('data', onData);
  r.on('end', onEnd);
  r.on('error', onError);
  r.on('close', onClose);
  try {
    for (;;) {
      if (failure) throw failure;
      const c = queue.shift();
      if (c !== undefined) {
        if (r.isPaused() && queue.length < maxQueued >> 1) r.resume();
        yield c;
        continue;
      }
      if (ended) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    r.off('data', onData);
    r.off('end', onEnd);
    r.off('error', onError);
    r.off('close', onClose);
    // Leaving early (or on error) releases the stream, as the built-in iterator does.
    if (!ended) r.destroy();
  }
}
