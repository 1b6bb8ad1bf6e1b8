// Writing one entry into a tar-stream pack by hand: tar-stream's sinks are streamx streams, fed
// chunk by chunk with their backpressure honoured (a pipe would not wait for them).
import type { Readable } from 'node:stream';
import type tarStream from 'tar-stream';

/** Resolves once `s` drains or closes (a destroyed sink never drains, so `close` ends the wait too). */
export function drainedOrClosed(s: { on(ev: 'drain' | 'close', fn: () => void): unknown; off(ev: 'drain' | 'close', fn: () => void): unknown }): Promise<void> {
  return new Promise((resolve) => {
    const fn = () => {
      s.off('drain', fn);
      s.off('close', fn);
      resolve();
    };
    s.on('drain', fn);
    s.on('close', fn);
  });
}

/** One entry with `body`'s bytes (none for a header-only entry); `signal` aborts between chunks. */
export async function packEntry(pack: tarStream.Pack, header: Partial<tarStream.Header> & { name: string }, body?: Readable | null, signal?: AbortSignal): Promise<void> {
  let settle!: (err?: Error | null) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = (err) => (err ? reject(err) : resolve());
  });
  const sink = pack.entry(header, (err) => settle(err));
  try {
    if (body) {
      for await (const chunk of body) {
        signal?.throwIfAborted();
        if (!sink.write(chunk) && !sink.destroyed) await drainedOrClosed(sink);
      }
    }
    sink.end(null);
  } catch (err) {
    body?.destroy();
    sink.destroy(err as Error);
    throw err;
  }
  await done;
}
