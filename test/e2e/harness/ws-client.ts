// Hand-written clients for upgraded connections, used by the e2e and the unit tests: the reader of
// the HTTP response to an upgrade request, and a minimal websocket client (masked frames out,
// unmasked frames in) on an already-connected socket.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';

/** What came back on a socket that sent an HTTP request by hand. */
export interface RawResponse {
  /** The response's status line and headers. */
  head: Promise<string>;
  /** Everything after the header block, so far. */
  body(): Buffer;
}

export function readResponse(sock: Socket): RawResponse {
  let acc = Buffer.alloc(0);
  let headerEnd = -1;
  let resolveHead!: (h: string) => void;
  const head = new Promise<string>((r) => (resolveHead = r));
  sock.on('data', (c: Buffer) => {
    acc = Buffer.concat([acc, c]);
    if (headerEnd < 0) {
      const at = acc.indexOf('\r\n\r\n');
      if (at >= 0) {
        headerEnd = at + 4;
        resolveHead(acc.subarray(0, at).toString());
      }
    }
  });
  return { head, body: () => (headerEnd < 0 ? Buffer.alloc(0) : acc.subarray(headerEnd)) };
}

export interface WsFrame {
  opcode: number;
  fin: boolean;
  payload: Buffer;
}

/**
 * Server frames, parsed as a client does (they must not be masked). A frame cut short at the end
 * is an assertion failure, or with `partial` (bytes still arriving) left for a later call.
 */
export function serverFrames(buf: Buffer, partial = false): WsFrame[] {
  const out: WsFrame[] = [];
  let i = 0;
  while (i < buf.length) {
    const complete = (end: number) => {
      if (!partial) assert.ok(end <= buf.length, 'truncated server frame');
      return end <= buf.length;
    };
    if (!complete(i + 2)) break;
    const fin = (buf[i] & 0x80) !== 0;
    const opcode = buf[i] & 0x0f;
    assert.equal(buf[i + 1] & 0x80, 0, 'server frames are not masked');
    let len = buf[i + 1] & 0x7f;
    let at = i + 2;
    if (len === 126) {
      if (!complete(at + 2)) break;
      len = buf.readUInt16BE(at);
      at += 2;
    } else if (len === 127) {
      if (!complete(at + 8)) break;
      len = Number(buf.readBigUInt64BE(at));
      at += 8;
    }
    if (!complete(at + len)) break;
    out.push({ opcode, fin, payload: buf.subarray(at, at + len) });
    i = at + len;
  }
  return out;
}

/** A frame as a client sends it: masked with `mask` (a fixed one unless given) unless `masked` is false. */
export function clientFrame(opcode: number, payload: Buffer | string, opts: { fin?: boolean; mask?: Buffer; masked?: boolean } = {}): Buffer {
  const p = Buffer.from(payload);
  const mask = opts.mask ?? Buffer.from([0x37, 0xfa, 0x21, 0x3d]);
  const masked = opts.masked ?? true;
  const first = ((opts.fin ?? true) ? 0x80 : 0) | opcode;
  let head: Buffer;
  if (p.length < 126) head = Buffer.from([first, p.length]);
  else if (p.length < 0x10000) {
    head = Buffer.from([first, 126, 0, 0]);
    head.writeUInt16BE(p.length, 2);
  } else {
    head = Buffer.alloc(10);
    head[0] = first;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(p.length), 2);
  }
  if (!masked) return Buffer.concat([head, p]);
  head[1] |= 0x80;
  const body = Buffer.from(p);
  for (let i = 0; i < body.length; i++) body[i] ^= mask[i & 3];
  return Buffer.concat([head, mask, body]);
}

export interface WsClient {
  sock: Socket;
  /** The response's status line and headers. */
  head: Promise<string>;
  /** Whole frames received so far. */
  frames(): WsFrame[];
  /** One whole (unfragmented) frame, masked with a random mask. */
  send(opcode: number, payload: string | Buffer): void;
  /** Settles when the connection is closed. */
  ended: Promise<void>;
}

/**
 * A websocket upgrade request for `path` on `sock` (connected, or connecting: writes are queued);
 * `headers` are added to the handshake's or replace them (a random Sec-WebSocket-Key unless given).
 */
export function wsClient(sock: Socket, path: string, headers: Record<string, string> = {}): WsClient {
  const res = readResponse(sock);
  const ended = new Promise<void>((r) => sock.on('close', () => r()));
  sock.on('error', () => {});
  const h = { Host: 'engine', Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': randomBytes(16).toString('base64'), 'Sec-WebSocket-Version': '13', ...headers };
  sock.write(`GET ${path} HTTP/1.1\r\n${Object.entries(h).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
  return {
    sock,
    head: res.head,
    frames: () => serverFrames(res.body(), true),
    send: (opcode, payload) => sock.write(clientFrame(opcode, payload, { mask: randomBytes(4) })),
    ended,
  };
}
