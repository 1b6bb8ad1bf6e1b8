// Clients for upgraded connections, used by the e2e and the unit tests: the reader of the HTTP
// response to a request written by hand, and a websocket client (the `ws` package's) that keeps
// what it received for a test to look at.
import type { Socket } from 'node:net';
import { WebSocket, type ClientOptions } from 'ws';

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

/** One message from the server: its payload and whether it came in binary frames (else text). */
export interface WsMessage {
  binary: boolean;
  data: Buffer;
}

export interface WsClient {
  ws: WebSocket;
  /** The status line and headers of the answer to the handshake (a refusal's too). */
  head: Promise<string>;
  /** Whole messages received so far. */
  messages(): WsMessage[];
  /** The payloads of the pongs received so far. */
  pongs(): Buffer[];
  /** Settles when the connection is closed, with the code of the server's close frame (1006: none). */
  ended: Promise<{ code: number; reason: string }>;
}

/**
 * A websocket to `url` (`ws://host:port/path`, or `ws+unix:///socket/path:/request/path`). A refused
 * handshake is no error: its status shows in `head`, and the connection is dropped once its body is in.
 */
export function wsClient(url: string, opts: ClientOptions = {}, protocols?: string | string[]): WsClient {
  const ws = new WebSocket(url, protocols, { perMessageDeflate: false, ...opts });
  const messages: WsMessage[] = [];
  const pongs: Buffer[] = [];
  let resolveHead!: (h: string) => void;
  const head = new Promise<string>((r) => (resolveHead = r));
  const headOf = (res: { httpVersion: string; statusCode?: number; statusMessage?: string; rawHeaders: string[] }) => {
    const lines = [`HTTP/${res.httpVersion} ${res.statusCode} ${res.statusMessage}`];
    for (let i = 0; i < res.rawHeaders.length; i += 2) lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
    return lines.join('\r\n');
  };
  ws.on('upgrade', (res) => resolveHead(headOf(res)));
  ws.on('unexpected-response', (_req, res) => {
    resolveHead(headOf(res));
    res.resume();
    res.on('end', () => ws.terminate());
    res.on('error', () => ws.terminate());
  });
  ws.on('error', () => {});
  ws.on('message', (data: Buffer, isBinary) => messages.push({ binary: isBinary, data }));
  ws.on('pong', (data) => pongs.push(data));
  const ended = new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
  return { ws, head, messages: () => messages, pongs: () => pongs, ended };
}

/** A request written by hand on a new connection, for what a websocket client will not send. */
export function rawRequest(sock: Socket, request: string): RawResponse {
  const res = readResponse(sock);
  sock.on('error', () => {});
  sock.write(request);
  return res;
}
