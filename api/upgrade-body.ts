// The HTTP body of an upgraded request (attach, exec start, a BuildKit session). Node hands the 'upgrade' listener
// the socket with the parser detached and whatever arrived behind the headers in `head`, body
// bytes included. Only what follows the body is the client's stdin: dockerode sends its attach
// options as a JSON body, and a body sent without a length arrives chunked.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { invalidArgument } from '../lib/errors.ts';

/** A body larger than this is not an options document: refuse it rather than buffer it. */
const MAX_BODY = 1 << 20;

export interface UpgradeBody {
  body: Buffer;
  /** Bytes that came after the body: the start of the stream. */
  rest: Buffer;
}

/**
 * Read the request body (`Content-Length` bytes, or a chunked body up to its last chunk) from
 * `head` and then the socket. The socket is left paused, with nothing consumed past the body.
 */
export async function readUpgradeBody(req: IncomingMessage, sock: Duplex, head: Buffer): Promise<UpgradeBody> {
  const te = String(req.headers['transfer-encoding'] ?? '').toLowerCase();
  const more = () => nextChunk(sock);
  if (te.split(',').some((t) => t.trim() === 'chunked')) return readChunked(head, more);
  const len = Number(req.headers['content-length'] ?? 0);
  if (!Number.isSafeInteger(len) || len < 0) throw invalidArgument(`invalid Content-Length ${req.headers['content-length']}`);
  if (len > MAX_BODY) throw invalidArgument(`request body too large (${len} bytes)`);
  return readLength(len, head, more);
}

/** The next bytes from a paused socket, or null at its end. */
export function nextChunk(sock: Duplex): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const onData = (c: Buffer) => {
      cleanup();
      resolve(c);
    };
    const onEnd = () => {
      cleanup();
      resolve(null);
    };
    const cleanup = () => {
      sock.off('data', onData);
      sock.off('end', onEnd);
      sock.off('close', onEnd);
      sock.pause();
    };
    if (sock.readableEnded || sock.destroyed) return resolve(null);
    sock.on('data', onData);
    sock.on('end', onEnd);
    sock.on('close', onEnd);
    sock.resume();
  });
}

type More = () => Promise<Buffer | null>;

export async function readLength(len: number, head: Buffer, more: More): Promise<UpgradeBody> {
  let buf = head;
  while (buf.length < len) {
    const chunk = await more();
    if (!chunk) throw invalidArgument('unexpected end of request body');
    buf = Buffer.concat([buf, chunk]);
  }
  return { body: buf.subarray(0, len), rest: buf.subarray(len) };
}

/** Decode `size CRLF data CRLF ... 0 CRLF [trailers] CRLF`. */
export async function readChunked(head: Buffer, more: More): Promise<UpgradeBody> {
  let buf = head;
  let pos = 0;
  const parts: Buffer[] = [];
  let total = 0;
  const need = async (n: number) => {
    while (buf.length - pos < n) {
      const chunk = await more();
      if (!chunk) throw invalidArgument('unexpected end of chunked request body');
      buf = Buffer.concat([buf.subarray(pos), chunk]);
      pos = 0;
    }
  };
  const line = async (): Promise<string> => {
    for (;;) {
      const at = buf.indexOf('\r\n', pos);
      if (at >= 0) {
        const l = buf.subarray(pos, at).toString('latin1');
        pos = at + 2;
        return l;
      }
      if (buf.length - pos > 4096) throw invalidArgument('malformed chunked request body');
      await need(buf.length - pos + 1);
    }
  };
  for (;;) {
    const sizeLine = (await line()).split(';')[0].trim();
    if (!/^[0-9a-fA-F]+$/.test(sizeLine)) throw invalidArgument('malformed chunked request body');
    const size = parseInt(sizeLine, 16);
    if (size === 0) break;
    total += size;
    if (total > MAX_BODY) throw invalidArgument('request body too large');
    await need(size + 2);
    parts.push(Buffer.from(buf.subarray(pos, pos + size)));
    pos += size;
    if (buf[pos] !== 0x0d || buf[pos + 1] !== 0x0a) throw invalidArgument('malformed chunked request body');
    pos += 2;
  }
  // Trailers, if any, up to the empty line.
  while ((await line()) !== '');
  return { body: Buffer.concat(parts), rest: buf.subarray(pos) };
}
