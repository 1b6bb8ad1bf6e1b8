// A connected unix datagram socket as a log driver writes to it (syslog's unixgram, journald):
// one datagram per message, never blocking the event loop.
import type { UnixDgramError, UnixDgramSender } from '../sys/unix-dgram.ts';

/** Where a driver's messages go: a write per message; `broken` once it must be dialled again. */
export interface Conn {
  write(b: Buffer): Promise<void>;
  close(): void;
  broken: boolean;
}

// A full receive queue (EAGAIN: the kernel queues only net.unix.max_dgram_qlen datagrams, 10 by
// default) is waited out as the reference's blocking write would, but off the event loop: the
// send is retried on a growing timer. A receiver that takes no datagram for DGRAM_STALL_MS gets
// the message dropped (counted, and the write fails so the sink logs it), and until one send goes
// through again the next messages get a single try each, so a dead-stuck receiver cannot hold a
// container's output (or its stop) for that long per line.
export const DGRAM_STALL_MS = 5000;
const DGRAM_RETRY_MAX_MS = 20;

export function dgramConn(sock: UnixDgramSender, addr: string, stallMs = DGRAM_STALL_MS): Conn & { dropped: number } {
  let stalled = false;
  const c = {
    broken: false,
    dropped: 0,
    async write(b: Buffer): Promise<void> {
      const start = Date.now();
      let delay = 0;
      for (;;) {
        let sent: boolean;
        try {
          sent = sock.send(b);
        } catch (err) {
          // ECONNREFUSED once the receiver is gone: redial, as srslog does on a failed write.
          c.broken = true;
          throw new Error(`write unixgram ${addr}: ${(err as UnixDgramError).message.replace(/^write: /, '')}`);
        }
        if (sent) {
          stalled = false;
          return;
        }
        if (stalled || Date.now() - start >= stallMs) {
          stalled = true;
          c.dropped++;
          throw Object.assign(new Error(`write unixgram ${addr}: resource temporarily unavailable (receiver not reading; ${c.dropped} messages dropped)`), { dropped: true });
        }
        await new Promise((res) => (delay ? setTimeout(res, delay) : setImmediate(res)));
        delay = Math.min(DGRAM_RETRY_MAX_MS, delay ? delay * 2 : 1);
      }
    },
    close: () => sock.close(),
  };
  return c;
}
