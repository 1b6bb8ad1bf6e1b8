// The websocket side of `GET /containers/{id}/attach/ws`, on the `ws` library: the server that
// takes the upgraded connection over (handshake, framing, pings, the closing handshake), the
// checks the reference makes that `ws` does not, and a Duplex over a `ws` WebSocket so an attach
// session reads stdin and writes output on a websocket as it would on a hijacked connection.
import type { IncomingMessage } from 'node:http';
import { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type ServerOptions } from 'ws';
import { invalidArgument } from '../../lib/errors.ts';

/** Messages larger than this are refused (close 1009): stdin arrives in small pieces, not in one message. */
const MAX_PAYLOAD = 16 << 20;

/** How long our close frame waits for the client's answer before the connection is cut. */
const CLOSE_TIMEOUT_MS = 2000;

export function notAWebsocket() {
  return invalidArgument('not a websocket upgrade request: send Connection: Upgrade and Upgrade: websocket');
}

const hasToken = (v: string | string[] | undefined, token: string) =>
  String(v ?? '')
    .toLowerCase()
    .split(',')
    .some((t) => t.trim() === token);

/**
 * What refuses a websocket request before the handshake, as InvalidArgument (400): a request
 * that is no websocket upgrade (no `head`: see upgradeHead), or a version other than 13 (`ws` would also take the draft's 8;
 * the reference does not). A missing or malformed key is left to `ws`, which answers 400 itself.
 */
export function checkWebsocketRequest(req: IncomingMessage, head: Buffer | undefined): asserts head is Buffer {
  if (!head || !hasToken(req.headers.upgrade, 'websocket')) throw notAWebsocket();
  const version = String(req.headers['sec-websocket-version'] ?? '');
  if (version !== '13') throw invalidArgument(`unsupported websocket version ${JSON.stringify(version)}: only 13 is supported`);
}

/**
 * The server for attach websockets, one per app, on connections the routes hand it
 * (handleUpgrade). No compression (the reference offers none), stdin taken as bytes whatever the
 * frame type (no UTF-8 check on text frames), the client's first subprotocol echoed (ws's default,
 * as the reference's library does), no client tracking: each session owns its websocket.
 */
export function attachWebSocketServer(): WebSocketServer {
  const options: ServerOptions & { closeTimeout: number } = {
    noServer: true,
    perMessageDeflate: false,
    clientTracking: false,
    skipUTF8Validation: true,
    maxPayload: MAX_PAYLOAD,
    // Not in @types/ws, read by ws 8 for the websockets it makes.
    closeTimeout: CLOSE_TIMEOUT_MS,
  };
  return new WebSocketServer(options);
}

/**
 * A `ws` WebSocket as a byte Duplex (createWebSocketStream sends Buffers only as binary frames):
 * reading gives the payloads of the client's text and binary messages, ending when the websocket
 * closes (a close from the client is answered by `ws` at once); each write goes out as one text or
 * binary message, and is dropped once the websocket is closing; `end()` sends our close (1000).
 */
export class WebSocketDuplex extends Duplex {
  private readonly ws: WebSocket;
  private readonly binary: boolean;

  constructor(ws: WebSocket, opts: { binary?: boolean } = {}) {
    super({ allowHalfOpen: true });
    this.ws = ws;
    this.binary = opts.binary ?? true;
    ws.on('message', (data: Buffer) => {
      if (data.length && !this.push(data)) ws.pause();
    });
    ws.on('error', (err) => this.destroy(err));
    ws.once('close', () => {
      this.push(null);
      // The connection is gone: once the end of the input is taken, the stream goes too.
      if (this.readableEnded) this.destroy();
      else this.once('end', () => this.destroy());
    });
    // Upgraded sockets arrive paused; input flows when the stream is read.
    ws.pause();
  }

  override _read(): void {
    this.ws.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.ws.readyState !== WebSocket.OPEN || chunk.length === 0) return cb();
    this.ws.send(chunk, { binary: this.binary }, (err) => cb(err ?? null));
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000);
    cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    // A closing websocket lets its close frame reach the client (ws cuts it after CLOSE_TIMEOUT_MS).
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
    cb(err);
  }
}
