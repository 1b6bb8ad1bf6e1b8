// The websocket side of `GET /containers/{id}/attach/ws` (RFC 6455): the opening handshake, the
// frame format, and a Duplex over the upgraded socket so an attach session reads stdin and writes
// output on a websocket as it would on a hijacked connection. Client frames arrive masked, ours
// go out unmasked; every write is one whole frame; a close frame from the client is stdin EOF and
// our own close frame goes out when the session ends.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Duplex } from 'node:stream';
import { invalidArgument } from '../../lib/errors.ts';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export const OP = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

/** Close codes we send (RFC 6455 7.4.1). */
export const CLOSE = { normal: 1000, protocolError: 1002, tooBig: 1009 } as const;

/** Frames larger than this are refused (1009): stdin arrives in small pieces, not in one frame. */
const MAX_PAYLOAD = 16 << 20;

export function acceptKey(key: string): string {
  return createHash('sha1').update(key + GUID).digest('base64');
}

const hasToken = (v: string | string[] | undefined, token: string) =>
  String(v ?? '')
    .toLowerCase()
    .split(',')
    .some((t) => t.trim() === token);

export function notAWebsocket() {
  return invalidArgument('not a websocket upgrade request: send Connection: Upgrade and Upgrade: websocket');
}

/**
 * The 101 answer to a websocket opening handshake; InvalidArgument (400) when the request is not
 * one: no `Upgrade: websocket`, no `Connection: Upgrade`, a missing or malformed key, a version
 * other than 13.
 */
export function handshakeResponse(req: IncomingMessage): string {
  if (!hasToken(req.headers.upgrade, 'websocket') || !hasToken(req.headers.connection, 'upgrade')) throw notAWebsocket();
  const version = String(req.headers['sec-websocket-version'] ?? '');
  if (version !== '13') throw invalidArgument(`unsupported websocket version ${JSON.stringify(version)}: only 13 is supported`);
  const key = String(req.headers['sec-websocket-key'] ?? '').trim();
  if (Buffer.from(key, 'base64').length !== 16) throw invalidArgument('missing or malformed Sec-WebSocket-Key');
  // No subprotocol of our own: echo the client's first choice, as the reference's library does.
  const proto = String(req.headers['sec-websocket-protocol'] ?? '').split(',')[0].trim();
  return (
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
    `Sec-WebSocket-Accept: ${acceptKey(key)}\r\n` +
    (proto ? `Sec-WebSocket-Protocol: ${proto}\r\n` : '') +
    '\r\n'
  );
}

/** One frame as the server sends it: FIN set unless `fin` is false, never masked. */
export function encodeFrame(opcode: number, payload: Buffer, fin = true): Buffer {
  const len = payload.length;
  const first = (fin ? 0x80 : 0) | opcode;
  let head: Buffer;
  if (len < 126) {
    head = Buffer.from([first, len]);
  } else if (len < 0x10000) {
    head = Buffer.alloc(4);
    head[0] = first;
    head[1] = 126;
    head.writeUInt16BE(len, 2);
  } else {
    head = Buffer.alloc(10);
    head[0] = first;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  return Buffer.concat([head, payload]);
}

export function closePayload(code: number, reason = ''): Buffer {
  const b = Buffer.alloc(2 + Buffer.byteLength(reason));
  b.writeUInt16BE(code, 0);
  b.write(reason, 2);
  return b;
}

export interface Frame {
  fin: boolean;
  opcode: number;
  payload: Buffer;
}

export class ProtocolError extends Error {
  readonly closeCode: number;
  constructor(message: string, closeCode: number = CLOSE.protocolError) {
    super(message);
    this.closeCode = closeCode;
  }
}

/**
 * Parses the client's byte stream into frames, unmasking them. Enforces what a server must:
 * masked frames, no reserved bits, known opcodes, control frames whole and short, continuation
 * frames only inside a fragmented message. Throws ProtocolError (with the close code to send).
 */
export class FrameDecoder {
  private buf: Buffer = Buffer.alloc(0);
  /** Bytes received but not yet joined to `buf`: joined only once a frame can be complete. */
  private pending: Buffer[] = [];
  private pendingLen = 0;
  /** How many bytes the frame at the head of `buf` needs in all (its header, then its whole). */
  private want = 2;
  private inMessage = false;
  private readonly maxPayload: number;

  constructor(opts: { maxPayload?: number } = {}) {
    this.maxPayload = opts.maxPayload ?? MAX_PAYLOAD;
  }

  feed(chunk: Buffer): Frame[] {
    this.pending.push(chunk);
    this.pendingLen += chunk.length;
    if (this.buf.length + this.pendingLen < this.want) return [];
    this.buf = Buffer.concat([this.buf, ...this.pending.splice(0)]);
    this.pendingLen = 0;
    const out: Frame[] = [];
    for (;;) {
      const f = this.next();
      if (!f) return out;
      out.push(f);
    }
  }

  private next(): Frame | null {
    const b = this.buf;
    this.want = 2;
    if (b.length < 2) return null;
    const fin = (b[0] & 0x80) !== 0;
    if (b[0] & 0x70) throw new ProtocolError('reserved bits set without a negotiated extension');
    const opcode = b[0] & 0x0f;
    const masked = (b[1] & 0x80) !== 0;
    let len = b[1] & 0x7f;
    let at = 2;
    if (len === 126) {
      this.want = 4;
      if (b.length < 4) return null;
      len = b.readUInt16BE(2);
      at = 4;
    } else if (len === 127) {
      this.want = 10;
      if (b.length < 10) return null;
      const big = b.readBigUInt64BE(2);
      if (big > BigInt(this.maxPayload)) throw new ProtocolError('frame too large', CLOSE.tooBig);
      len = Number(big);
      at = 10;
    }
    if (!masked) throw new ProtocolError('client frames must be masked');
    if (opcode >= 0x8) {
      if (opcode !== OP.close && opcode !== OP.ping && opcode !== OP.pong) throw new ProtocolError(`unknown opcode ${opcode}`);
      if (!fin || len > 125) throw new ProtocolError('control frames must be whole and at most 125 bytes');
    } else if (opcode === OP.continuation) {
      if (!this.inMessage) throw new ProtocolError('continuation frame outside a fragmented message');
    } else if (opcode === OP.text || opcode === OP.binary) {
      if (this.inMessage) throw new ProtocolError('new message inside a fragmented message');
    } else {
      throw new ProtocolError(`unknown opcode ${opcode}`);
    }
    if (len > this.maxPayload) throw new ProtocolError('frame too large', CLOSE.tooBig);
    this.want = at + 4 + len;
    if (b.length < this.want) return null;
    const mask = b.subarray(at, at + 4);
    const payload = Buffer.from(b.subarray(at + 4, at + 4 + len));
    for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
    this.buf = b.subarray(at + 4 + len);
    this.want = 2;
    if (opcode < 0x8) this.inMessage = !fin;
    return { fin, opcode, payload };
  }
}

/**
 * A websocket over an upgraded socket, as a byte Duplex: reading gives the payloads of the
 * client's text and binary frames (fragments as they come), ending at its close frame or at the
 * end of the socket; each write goes out as one frame of `opcode`; `end()` sends our close frame
 * and ends the socket. Pings are answered; a protocol error closes with its code.
 */
export class WebSocketStream extends Duplex {
  private readonly sock: Duplex;
  private readonly opcode: number;
  private readonly decoder: FrameDecoder;
  private closeSent = false;
  private inputEnded = false;

  constructor(sock: Duplex, opts: { opcode?: number; maxPayload?: number } = {}) {
    super({ allowHalfOpen: true });
    this.sock = sock;
    this.opcode = opts.opcode ?? OP.binary;
    this.decoder = new FrameDecoder({ maxPayload: opts.maxPayload });
    sock.on('data', (chunk: Buffer) => this.onData(chunk));
    sock.on('end', () => this.endInput());
    sock.on('error', (err) => this.destroy(err));
    sock.on('close', () => this.destroy());
    sock.pause();
  }

  override _read(): void {
    if (!this.inputEnded) this.sock.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    // After our close frame nothing more may be sent.
    if (this.closeSent || chunk.length === 0) return cb();
    this.sock.write(encodeFrame(this.opcode, chunk), (err) => cb(err ?? null));
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.sendClose(CLOSE.normal);
    cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    if (this.closeSent) {
      // Let our close frame reach the client; the socket goes if the client never answers.
      const sock = this.sock;
      setTimeout(() => sock.destroy(), 2000).unref();
    } else {
      this.sock.destroy();
    }
    cb(err);
  }

  private sendClose(code: number, reason = ''): void {
    if (this.closeSent) return;
    this.closeSent = true;
    if (!this.sock.writable) return;
    this.sock.write(encodeFrame(OP.close, closePayload(code, reason)));
    this.sock.end();
  }

  private endInput(): void {
    if (this.inputEnded) return;
    this.inputEnded = true;
    this.push(null);
  }

  private onData(chunk: Buffer): void {
    if (this.inputEnded) return;
    let frames: Frame[];
    try {
      frames = this.decoder.feed(chunk);
    } catch (err) {
      const e = err instanceof ProtocolError ? err : new ProtocolError(String(err));
      this.sendClose(e.closeCode, e.message.slice(0, 120));
      this.endInput();
      this.destroy();
      return;
    }
    for (const f of frames) {
      if (f.opcode === OP.ping) {
        if (!this.closeSent && this.sock.writable) this.sock.write(encodeFrame(OP.pong, f.payload));
      } else if (f.opcode === OP.close) {
        // The client's close is the end of its stdin; our close frame follows when the session
        // ends (at once, unless the process still has output to deliver).
        this.endInput();
        return;
      } else if (f.opcode !== OP.pong && f.payload.length) {
        if (!this.push(f.payload)) this.sock.pause();
      }
    }
  }
}
