// Docker's multiplexed stream format ("stdcopy"), used by attach, exec and logs without a tty:
// each frame is an 8-byte header (stream 0 stdin, 1 stdout, 2 stderr, 3 a daemon error message;
// three zero bytes; the payload's length, big-endian) followed by the payload.

/** One frame around `payload` for `stream`. */
export function frame(stream: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(8);
  h[0] = stream;
  h.writeUInt32BE(payload.length, 4);
  return Buffer.concat([h, payload]);
}
