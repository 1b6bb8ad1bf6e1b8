// In-memory stand-ins for the attach tests: the daemon's end of an upgraded client connection and
// a container's stream hub.
import { Duplex } from 'node:stream';
import type { StreamHub } from '../../../api/ports.ts';

/**
 * The daemon's end of an upgraded client connection: `client(bytes)` / `client(null)` as the client
 * sends them; `sent` is what the daemon wrote; `ended()` whether the daemon ended its side.
 */
export function fakeSocket() {
  const sent: Buffer[] = [];
  let ended = false;
  const sock = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, cb) {
      sent.push(chunk);
      cb();
    },
    final(cb) {
      ended = true;
      cb();
    },
    allowHalfOpen: true,
  });
  return { sock, sent, client: (b: string | Buffer | null) => sock.push(b), ended: () => ended };
}

/** A process's streams: `stdin()` is what reached it, `closed()` how often its stdin was closed, `out` writes its output, `end` ends it. */
export function fakeHub() {
  const stdin: Buffer[] = [];
  let closed = 0;
  let emit: ((s: 'stdout' | 'stderr', c: Buffer) => unknown) | null = null;
  let end: (() => void) | undefined;
  const hub: StreamHub = {
    subscribe(fn, onEnd) {
      emit = fn;
      end = onEnd;
      return () => (emit = null);
    },
    ended: new Promise(() => {}),
    writeStdin: (b) => stdin.push(b),
    closeStdin: () => void closed++,
  };
  return { hub, stdin: () => Buffer.concat(stdin).toString(), closed: () => closed, out: (s: 'stdout' | 'stderr', c: string) => emit?.(s, Buffer.from(c)), end: () => end?.() };
}
