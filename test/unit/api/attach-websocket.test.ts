// The websocket attach without a daemon, through the `ws` package's client on real connections:
// the Duplex over a `ws` WebSocket (stdin from text and binary messages, output as binary or text
// messages, ping, the closing handshake both ways, the payload limit), an attach session on it,
// and the routes end to end on a real HTTP server with a container in the real store: echo
// through a websocket, text frames before API 1.28, the subprotocol echo, refusals (404, 400 for
// a plain request, a bad handshake or detach keys), and the `detach` / `exec_detach` events of a
// detach-key exit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { attachRoutes, type AttachDeps } from '../../../api/attach/routes.ts';
import { upgradeListener } from '../../../api/upgrade.ts';
import { AttachSession } from '../../../api/attach/session.ts';
import { attachWebSocketServer, WebSocketDuplex } from '../../../api/attach/websocket.ts';
import type { ExecInspect } from '../../../api/ports.ts';
import type { Store } from '../../../store/store.ts';

import { rawRequest, wsClient } from '../../e2e/harness/ws-client.ts';
import { containerRecord } from '../container/fake-world.ts';
import { routeHarness } from './route-harness.ts';
import { fakeHub } from './socket-fakes.ts';
import { Containers } from '../../../store/kinds/container.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, cond: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const text = (c: ReturnType<typeof wsClient>) => c.messages().map((m) => m.data.toString()).join('');

/**
 * A server whose upgrades become WebSocketDuplex streams (the attach server's options), and a
 * `ws` client connected to it: `server` is the daemon's end, `client` the client's.
 */
async function wsPair(opts: { binary?: boolean } = {}) {
  const wss = attachWebSocketServer();
  const srv: Server = createServer();
  let resolveServer!: (d: WebSocketDuplex) => void;
  const server = new Promise<WebSocketDuplex>((r) => (resolveServer = r));
  srv.on('upgrade', (req, socket, head) => {
    socket.pause();
    wss.handleUpgrade(req, socket, head, (ws) => resolveServer(new WebSocketDuplex(ws, opts)));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const client = wsClient(`ws://127.0.0.1:${(srv.address() as AddressInfo).port}/`);
  const d = await server;
  d.on('error', () => {});
  if (client.ws.readyState !== client.ws.OPEN) await new Promise((r) => client.ws.once('open', r));
  return {
    server: d,
    client,
    close: () => {
      client.ws.terminate();
      d.destroy();
      srv.close();
    },
  };
}

function collect(d: Duplex) {
  const input: Buffer[] = [];
  let ended = false;
  d.on('data', (b: Buffer) => input.push(b));
  d.on('end', () => (ended = true));
  return { input: () => Buffer.concat(input).toString(), ended: () => ended };
}

test('WebSocketDuplex: text and binary messages are the input, writes are binary messages, ping gets pong, end sends close 1000', async () => {
  const p = await wsPair();
  try {
    const got = collect(p.server);
    p.client.ws.send('one ');
    p.client.ws.send(Buffer.from('two'));
    await until('input', () => got.input() === 'one two');
    p.server.write(Buffer.from('out'));
    p.server.write(Buffer.alloc(0));
    await until('output', () => text(p.client) === 'out');
    assert.deepEqual(p.client.messages().map((m) => m.binary), [true]);
    p.client.ws.ping('are you there');
    await until('pong', () => p.client.pongs().some((b) => b.toString() === 'are you there'));
    p.server.end();
    assert.equal((await p.client.ended).code, 1000);
    await until('input end', () => got.ended());
    await until('stream closed', () => p.server.destroyed);
  } finally {
    p.close();
  }
});

test('WebSocketDuplex: a close from the client is the end of the input and is answered; later writes are dropped', async () => {
  const p = await wsPair();
  try {
    const got = collect(p.server);
    let closed = false;
    let late: unknown = 'not written';
    p.server.on('close', () => (closed = true));
    p.server.on('end', () => p.server.write(Buffer.from('too late'), (err) => (late = err)));
    p.client.ws.send('last');
    p.client.ws.close(1000);
    assert.equal((await p.client.ended).code, 1000, 'the client gets our close');
    await until('input end', () => got.ended());
    assert.equal(got.input(), 'last');
    await until('stream closed', () => closed);
    assert.equal(late ?? null, null, 'a write after the close is dropped, not an error');
    assert.deepEqual(p.client.messages(), []);
  } finally {
    p.close();
  }
});

test('WebSocketDuplex: text messages when asked (API before 1.28); a message beyond 16 MiB is refused with 1009', async () => {
  const t = await wsPair({ binary: false });
  try {
    t.server.write(Buffer.from('legacy'));
    await until('output', () => text(t.client) === 'legacy');
    assert.deepEqual(t.client.messages().map((m) => m.binary), [false]);
  } finally {
    t.server.end();
    t.close();
  }
  const p = await wsPair();
  try {
    const got = collect(p.server);
    p.client.ws.send(Buffer.alloc((16 << 20) + 1));
    assert.equal((await p.client.ended).code, 1009);
    await until('input end', () => got.ended() || p.server.destroyed);
    assert.equal(got.input(), '');
  } finally {
    p.close();
  }
});

test('an attach session on a websocket: raw output without a tty (one message per chunk, both streams), then close 1000', async () => {
  const p = await wsPair();
  try {
    const session = new AttachSession(p.server, { tty: false, multiplex: false, stdin: true, stdout: true, stderr: true, closeStdinOnEof: true, detachKeys: Buffer.from([0x10, 0x11]) });
    const h = fakeHub();
    session.bind(h.hub);
    p.client.ws.send(Buffer.from('in\n'));
    h.out('stdout', 'out\n');
    h.out('stderr', 'err\n');
    await until('stdin', () => h.stdin() === 'in\n');
    h.end();
    await session.done;
    assert.equal((await p.client.ended).code, 1000);
    assert.deepEqual(
      p.client.messages().map((m) => [m.binary, m.data.toString()]),
      [
        [true, 'out\n'],
        [true, 'err\n'],
      ],
    );
  } finally {
    p.close();
  }
});

// ---- the routes on a real server ---------------------------------------------------------------

/** The running container `/box` the route tests attach to. */
function addContainer(store: Store, tty: boolean): void {
  const id = 'c'.repeat(64);
  const r = containerRecord(id, {
    spec: { name: '/box', desired: 'running' },
    config: { Image: 'img', Tty: tty, OpenStdin: true, StdinOnce: false, Labels: { l: 'v' } },
    status: { phase: 'running' },
  });
  store.create(Containers, id, r.spec, r.status);
}

async function server(tty: boolean, extra: Partial<AttachDeps> = {}) {
  const hubs: ReturnType<typeof fakeHub>[] = [];
  const events: { action: string; name: string; extra?: Record<string, string> }[] = [];
  const deps = (store: Store): AttachDeps => ({
    store,
    streams: {
      watchRuns: (_id, fn) => {
        const h = fakeHub();
        // An echoing process: what comes in goes out.
        const write = h.hub.writeStdin;
        h.hub.writeStdin = (b) => {
          write(b);
          h.out('stdout', b.toString());
        };
        hubs.push(h);
        fn(h.hub);
        return () => {};
      },
      resize: async () => {},
    },
    execs: {} as AttachDeps['execs'],
    logs: { read: async function* () {} },
    events: { container: (action, c, x) => events.push({ action, name: c.spec.name, extra: x }) },
    ...extra,
  });
  const h = await routeHarness((store) => [attachRoutes(deps(store))]);
  addContainer(h.store, tty);
  const handler = h.app.routing.bind(h.app);
  const srv = createServer(handler);
  srv.on('upgrade', upgradeListener(handler));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  return {
    port,
    hubs,
    events,
    close: async () => {
      srv.close();
      await h.close();
    },
  };
}

/** A `ws` client to the test server. */
function wsConnect(port: number, path: string, opts: Parameters<typeof wsClient>[1] = {}, protocols?: string[]) {
  return wsClient(`ws://127.0.0.1:${port}${path}`, opts, protocols);
}

/** A websocket handshake written by hand, for what the `ws` client will not send. */
function rawHandshake(port: number, path: string, headers: Record<string, string>) {
  const h = { Host: 'engine', Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13', ...headers };
  const sock = connect(port, '127.0.0.1');
  const lines = Object.entries(h)
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return { sock, res: rawRequest(sock, `GET ${path} HTTP/1.1\r\n${lines}\r\n`) };
}

test('GET /containers/{id}/attach/ws: handshake, stdin in text and binary frames, raw output in binary frames, ping, close', async () => {
  const s = await server(false);
  try {
    const c = wsConnect(s.port, '/v1.47/containers/box/attach/ws?stream=1&stdin=1&stdout=1&stderr=1');
    const head = await c.head;
    assert.match(head, /^HTTP\/1\.1 101 /);
    assert.match(head, /\r\nSec-WebSocket-Accept: /);
    assert.doesNotMatch(head, /Sec-WebSocket-Extensions/i, 'no compression');
    c.ws.send('hello ');
    c.ws.send(Buffer.from('world\n'));
    await until('echo', () => text(c) === 'hello world\n');
    assert.ok(c.messages().every((m) => m.binary));
    c.ws.ping('x');
    await until('pong', () => c.pongs().some((b) => b.toString() === 'x'));
    // Without StdinOnce a close from the client ends the session: our close answers it.
    c.ws.close(1000);
    assert.equal((await c.ended).code, 1000);
    assert.deepEqual(s.events, []);
  } finally {
    await s.close();
  }
});

test('attach/ws before API 1.28: output in text frames, all streams attached; the first subprotocol is echoed', async () => {
  const s = await server(false);
  try {
    const c = wsConnect(s.port, '/v1.27/containers/box/attach/ws?stream=1', {}, ['chat', 'superchat']);
    assert.match(await c.head, /^HTTP\/1\.1 101 /);
    assert.equal(c.ws.protocol, 'chat');
    c.ws.send(Buffer.from('old\n'));
    await until('echo', () => text(c) === 'old\n');
    assert.deepEqual(c.messages().map((m) => m.binary), [false]);
    c.ws.close(1000);
    assert.equal((await c.ended).code, 1000);
  } finally {
    await s.close();
  }
});

test('attach/ws refusals: 404 for an unknown container, 400 for a bad handshake or detachKeys', async () => {
  const s = await server(false);
  try {
    for (const [path, opts, status] of [
      ['/containers/nope/attach/ws?stream=1', {}, 404],
      ['/containers/box/attach/ws?stream=1', { protocolVersion: 8 }, 400],
      ['/containers/box/attach/ws?stream=1&detachKeys=ctrl-1', {}, 400],
    ] as const) {
      const c = wsConnect(s.port, path, opts);
      assert.match(await c.head, new RegExp(`^HTTP/1\\.1 ${status} `), `${path} ${JSON.stringify(opts)}`);
      await c.ended;
    }
    const bad: Record<string, string>[] = [{ Upgrade: 'tcp' }, { 'Sec-WebSocket-Version': '8' }, { 'Sec-WebSocket-Key': '' }, { 'Sec-WebSocket-Key': 'short' }];
    for (const headers of bad) {
      const { sock, res } = rawHandshake(s.port, '/containers/box/attach/ws?stream=1', headers);
      assert.match(await res.head, /^HTTP\/1\.1 400 /, JSON.stringify(headers));
      sock.destroy();
    }
  } finally {
    await s.close();
  }
  // Without an upgrade the request reaches the routes: 400 once the container is known.
  const { app, store, close } = await routeHarness((store) => [attachRoutes({ store } as unknown as AttachDeps)]);
  try {
    addContainer(store, false);
    const plain = await app.inject({ method: 'GET', url: '/v1.47/containers/box/attach/ws?stream=1' });
    assert.equal(plain.statusCode, 400);
    assert.match(plain.json().message, /not a websocket upgrade/);
    assert.equal((await app.inject({ method: 'GET', url: '/containers/nope/attach/ws' })).statusCode, 404);
  } finally {
    await close();
  }
});

test('detach keys on a tty websocket attach end it and publish a `detach` event', async () => {
  const s = await server(true);
  try {
    const c = wsConnect(s.port, '/containers/box/attach/ws?stream=1&stdin=1&stdout=1&detachKeys=ctrl-a,b');
    await c.head;
    c.ws.send(Buffer.from('ls\x01'));
    c.ws.send(Buffer.from('b'));
    assert.equal((await c.ended).code, 1000);
    assert.equal(s.hubs[0].stdin(), 'ls');
    assert.deepEqual(s.events, [{ action: 'detach', name: '/box', extra: undefined }]);
  } finally {
    await s.close();
  }
});

test('detach keys on a hijacked exec publish `exec_detach` with the exec id', async () => {
  const execId = 'e'.repeat(64);
  let started = false;
  const inspect = (): ExecInspect =>
    ({
      ID: execId,
      Running: started,
      ExitCode: null,
      ProcessConfig: { tty: true, entrypoint: 'sh', arguments: [], privileged: false, user: '' },
      OpenStdin: true,
      OpenStdout: true,
      OpenStderr: true,
      CanRemove: false,
      ContainerID: 'c'.repeat(64),
      DetachKeys: '',
      Pid: 1,
    }) as ExecInspect;
  const h = fakeHub();
  const s = await server(true, {
    execs: {
      create: () => execId,
      inspect,
      start: async (_id, _o, onHub) => {
        started = true;
        onHub?.(h.hub);
        return { exited: new Promise(() => {}) };
      },
      resize: async () => {},
    },
  });
  try {
    const sock = connect(s.port, '127.0.0.1');
    sock.on('error', () => {});
    const body = JSON.stringify({ Detach: false, Tty: true });
    sock.write(`POST /exec/${execId}/start HTTP/1.1\r\nHost: e\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await new Promise((r) => sock.once('data', r));
    sock.write('echo\x10\x11');
    await new Promise((r) => sock.on('close', r));
    assert.equal(h.stdin(), 'echo');
    assert.deepEqual(s.events, [{ action: 'exec_detach', name: '/box', extra: { execID: execId } }]);
  } finally {
    await s.close();
  }
});
