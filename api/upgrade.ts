// Requests that ask to upgrade the connection (`Upgrade: tcp` for attach and exec start, a
// websocket for attach/ws) are routed by the app like any other, so the version prefix, its checks
// and the error answers are the same; their route takes the connection over with reply.hijack().
// Node hands such a request over with the parser gone and the bytes after its headers in `head`:
// the request's body (dockerode's attach options, exec start's JSON) is there and on the socket,
// for the route to read (upgrade-body.ts), never by the app's body parser.
import type { IncomingMessage } from 'node:http';
import { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

const HEAD = Symbol('upgradeHead');
type Upgraded = IncomingMessage & { [HEAD]?: Buffer };

/** The bytes that came behind an upgrade request's headers; undefined for a request that is no upgrade. */
export function upgradeHead(req: IncomingMessage): Buffer | undefined {
  return (req as Upgraded)[HEAD];
}

/**
 * A server's 'upgrade' listener: the request goes to `routing` with a response written to the
 * socket. An answer the app sends (an error, a 404) closes the connection; a hijacking route owns it.
 */
export function upgradeListener(routing: (req: IncomingMessage, res: ServerResponse) => void) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // Hold client bytes (stdin, a half-close) until the route reads them: a flowing socket drops them.
    socket.pause();
    socket.on('error', () => {});
    (req as Upgraded)[HEAD] = head;
    // The body's bytes are the socket's: the JSON parser must not wait for them on the request.
    delete req.headers['content-type'];
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Socket);
    res.once('finish', () => {
      res.detachSocket(socket as Socket);
      socket.end();
    });
    routing(req, res);
  };
}
