// Docker's multiplexed stream format ("stdcopy"), used by attach, exec and logs without a tty:
// each frame is an 8-byte header (stream 0 stdin, 1 stdout, 2 stderr, 3 a daemon error message;
// three zero bytes; the payload's length, big-endian) followed by the payload.

export const FRAME_HEADER_BYTES = 8;

/** Writes a frame header for `length` bytes of `stream` at `offset` of `buf`. */
export function writeFrameHeader(buf: Buffer, offset: number, stream: number, length: number): void {
  buf.writeUInt32BE(stream << 24, offset);
  buf.writeUInt32BE(length, offset + 4);
}

/** One frame around `payload` for `stream`. */
export function frame(stream: number, payload: Buffer): Buffer {
  const h = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  writeFrameHeader(h, 0, stream, payload.length);
  return Buffer.concat([h, payload]);
}
