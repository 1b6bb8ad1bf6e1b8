// The websocket attach without a daemon: the RFC 6455 handshake and framing (masked client
// frames, unmasked server frames, the three length forms, fragments, ping and close), the
// websocket as a stream under an attach session, and the routes end to end on a real HTTP server
// with a container in the real store: echo through a websocket, refusal of a plain request, and the
// `detach` / `exec_detach` events of a detach-key exit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { errorStatus } from '../../../api/errors.ts';
import { attachRoutes, type AttachDeps } from '../../../api/attach/routes.ts';
import { upgradeListener } from '../../../api/upgrade.ts';
import { AttachSession } from '../../../api/attach/session.ts';
import { acceptKey, encodeFrame, FrameDecoder, handshakeResponse, OP, ProtocolError, WebSocketStream } from '../../../api/attach/websocket.ts';
import type { ExecInspect } from '../../../api/ports.ts';
import type { Store } from '../../../store/store.ts';
import { KIND } from '../../../store/types.ts';
import { clientFrame, serverFrames, wsClient, type WsClient } from '../../e2e/harness/ws-client.ts';
import { containerRecord } from '../container/fake-world.ts';
import { routeHarness } from './route-harness.ts';
import { fakeHub, fakeSocket } from './socket-fakes.ts';

const tick = () => new Promise((r) => setImmediate(r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function wsRequest(headers: Record<string, string>): IncomingMessage {
  return { headers } as unknown as IncomingMessage;
}

const goodHeaders = { upgrade: 'websocket', connection: 'keep-alive, Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' };

test('handshake: the RFC 6455 accept key, and refusal (400) of what is not a websocket upgrade', () => {
  assert.equal(acceptKey('dGhlIHNhbXBsZSBub25jZQ=='), 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
  const ok = handshakeResponse(wsRequest(goodHeaders));
  assert.match(ok, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
  assert.match(ok, /\r\nUpgrade: websocket\r\n/);
  assert.match(ok, /\r\nConnection: Upgrade\r\n/);
  assert.match(ok, /\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=\r\n\r\n$/);
  assert.match(handshakeResponse(wsRequest({ ...goodHeaders, 'sec-websocket-protocol': 'chat, superchat' })), /\r\nSec-WebSocket-Protocol: chat\r\n/);
  for (const bad of [
    { ...goodHeaders, upgrade: 'tcp' },
    { ...goodHeaders, connection: 'keep-alive' },
    { ...goodHeaders, 'sec-websocket-version': '8' },
    { ...goodHeaders, 'sec-websocket-key': 'short' },
    { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-version': '13' },
  ]) {
    assert.throws(() => handshakeResponse(wsRequest(bad)), (e: unknown) => errorStatus(e) === 400, JSON.stringify(bad));
  }
});

test('server frames are unmasked, with 7-bit, 16-bit and 64-bit lengths', () => {
  for (const [len, headLen, marker] of [
    [5, 2, 5],
    [125, 2, 125],
    [126, 4, 126],
    [65535, 4, 126],
    [65536, 10, 127],
    [70000, 10, 127],
  ] as const) {
    const f = encodeFrame(OP.binary, Buffer.alloc(len, 0x61));
    assert.equal(f.length, headLen + len);
    assert.equal(f[0], 0x82);
    assert.equal(f[1], marker, 'no mask bit, length marker');
    const [parsed] = serverFrames(f);
    assert.equal(parsed.payload.length, len);
  }
  assert.equal(encodeFrame(OP.text, Buffer.from('x'), false)[0], 0x01);
});

test('client frames: unmasked, across reads byte by byte, long lengths', () => {
  const d = new FrameDecoder();
  const long = Buffer.alloc(70_000, 0x7a);
  const bytes = Buffer.concat([clientFrame(OP.text, 'hi'), clientFrame(OP.binary, Buffer.alloc(300, 1)), clientFrame(OP.binary, long)]);
  const frames = [];
  for (const b of bytes) frames.push(...d.feed(Buffer.from([b])));
  assert.deepEqual(
    frames.map((f) => [f.opcode, f.payload.length]),
    [
      [OP.text, 2],
      [OP.binary, 300],
      [OP.binary, 70_000],
    ],
  );
  assert.equal(frames[0].payload.toString(), 'hi');
  assert.ok(frames[2].payload.equals(long));
});

test('client frames: fragments with a ping between them; protocol errors', () => {
  const d = new FrameDecoder();
  const frames = d.feed(
    Buffer.concat([clientFrame(OP.text, 'ab', { fin: false }), clientFrame(OP.ping, 'p'), clientFrame(OP.continuation, 'cd', { fin: false }), clientFrame(OP.continuation, 'e')]),
  );
  assert.deepEqual(
    frames.map((f) => [f.opcode, f.fin, f.payload.toString()]),
    [
      [OP.text, false, 'ab'],
      [OP.ping, true, 'p'],
      [OP.continuation, false, 'cd'],
      [OP.continuation, true, 'e'],
    ],
  );
  const code = (bytes: Buffer, maxPayload?: number) => {
    try {
      new FrameDecoder({ maxPayload }).feed(bytes);
      return 0;
    } catch (e) {
      assert.ok(e instanceof ProtocolError);
      return e.closeCode;
    }
  };
  assert.equal(code(clientFrame(OP.binary, 'x', { masked: false })), 1002, 'unmasked');
  assert.equal(code(clientFrame(OP.continuation, 'x')), 1002, 'continuation without a start');
  assert.equal(code(Buffer.concat([clientFrame(OP.text, 'a', { fin: false }), clientFrame(OP.binary, 'b')])), 1002, 'new message inside a fragmented one');
  assert.equal(code(clientFrame(OP.ping, 'x', { fin: false })), 1002, 'fragmented control frame');
  assert.equal(code(clientFrame(OP.ping, Buffer.alloc(126))), 1002, 'long control frame');
  assert.equal(code(clientFrame(0x3, 'x')), 1002, 'reserved opcode');
  const rsv = clientFrame(OP.binary, 'x');
  rsv[0] |= 0x40;
  assert.equal(code(rsv), 1002, 'reserved bit');
  assert.equal(code(clientFrame(OP.binary, Buffer.alloc(2000)), 1000), 1009, 'too big');
  const huge = Buffer.from([0x82, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0]);
  assert.equal(code(huge), 1009, 'a 64-bit length beyond the limit is refused before any payload arrives');
});

/** The daemon's end of an upgraded socket: `client(bytes)` is what the client sends, `frames()` what the daemon wrote. */
function wsSocket() {
  const f = fakeSocket();
  return { ...f, frames: () => serverFrames(Buffer.concat(f.sent)) };
}

test('WebSocketStream: data frames are the input, writes are binary frames, ping gets pong, close ends input', async () => {
  const s = wsSocket();
  const ws = new WebSocketStream(s.sock);
  const input: Buffer[] = [];
  let inputEnded = false;
  ws.on('data', (b: Buffer) => input.push(b));
  ws.on('end', () => (inputEnded = true));
  s.client(Buffer.concat([clientFrame(OP.text, 'one '), clientFrame(OP.binary, 'two ', { fin: false }), clientFrame(OP.ping, 'are you there')]));
  s.client(clientFrame(OP.continuation, 'three'));
  await tick();
  ws.write(Buffer.from('out'));
  await tick();
  assert.equal(Buffer.concat(input).toString(), 'one two three');
  assert.deepEqual(
    s.frames().map((f) => [f.opcode, f.payload.toString()]),
    [
      [OP.pong, 'are you there'],
      [OP.binary, 'out'],
    ],
  );
  s.client(clientFrame(OP.close, Buffer.from([0x03, 0xe8])));
  await tick();
  assert.equal(inputEnded, true, 'a close frame is the end of the input');
  assert.equal(s.ended(), false, 'our close waits for the session');
  ws.end();
  await tick();
  const last = s.frames().at(-1)!;
  assert.equal(last.opcode, OP.close);
  assert.equal(last.payload.readUInt16BE(0), 1000);
  assert.equal(s.ended(), true);
});

test('WebSocketStream: a protocol error closes with 1002; text frames before API 1.28', async () => {
  const s = wsSocket();
  const ws = new WebSocketStream(s.sock);
  ws.on('data', () => {});
  ws.on('error', () => {});
  s.client(clientFrame(OP.binary, 'x', { masked: false }));
  await tick();
  const [close] = s.frames();
  assert.equal(close.opcode, OP.close);
  assert.equal(close.payload.readUInt16BE(0), 1002);
  assert.equal(s.ended(), true);

  const t = wsSocket();
  const old = new WebSocketStream(t.sock, { opcode: OP.text });
  old.write(Buffer.from('legacy'));
  await tick();
  assert.deepEqual(t.frames().map((f) => [f.opcode, f.payload.toString()]), [[OP.text, 'legacy']]);
});

test('an attach session on a websocket: raw output without a tty (one frame per chunk, both streams)', async () => {
  const s = wsSocket();
  const ws = new WebSocketStream(s.sock);
  const session = new AttachSession(ws, { tty: false, multiplex: false, stdin: true, stdout: true, stderr: true, closeStdinOnEof: true, detachKeys: Buffer.from([0x10, 0x11]) });
  const h = fakeHub();
  session.bind(h.hub);
  s.client(clientFrame(OP.binary, 'in\n'));
  h.out('stdout', 'out\n');
  h.out('stderr', 'err\n');
  await tick();
  assert.equal(h.stdin(), 'in\n');
  h.end();
  await session.done;
  await tick();
  assert.deepEqual(
    s.frames().map((f) => [f.opcode, f.opcode === OP.close ? f.payload.readUInt16BE(0) : f.payload.toString()]),
    [
      [OP.binary, 'out\n'],
      [OP.binary, 'err\n'],
      [OP.close, 1000],
    ],
  );
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
  store.create(KIND.container, id, r.spec, r.status);
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

/** A websocket client on a new connection to the test server, with the RFC 6455 example key. */
function wsConnect(port: number, path: string, headers: Record<string, string> = {}): WsClient {
  return wsClient(connect(port, '127.0.0.1'), path, { 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', ...headers });
}

async function until(what: string, cond: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

test('GET /containers/{id}/attach/ws: handshake, stdin in text and binary frames, raw output, close', async () => {
  const s = await server(false);
  try {
    const c = wsConnect(s.port, '/v1.47/containers/box/attach/ws?stream=1&stdin=1&stdout=1&stderr=1');
    const head = await c.head;
    assert.match(head, /^HTTP\/1\.1 101 /);
    assert.match(head, /Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=/);
    c.sock.write(clientFrame(OP.text, 'hello '));
    c.sock.write(clientFrame(OP.binary, 'world\n'));
    await until('echo', () => c.frames().map((f) => f.payload.toString()).join('') === 'hello world\n');
    assert.ok(c.frames().every((f) => f.opcode === OP.binary));
    c.sock.write(clientFrame(OP.ping, 'x'));
    await until('pong', () => c.frames().some((f) => f.opcode === OP.pong));
    // Without StdinOnce a close from the client ends the session: our close answers it.
    c.sock.write(clientFrame(OP.close, Buffer.from([0x03, 0xe8])));
    await until('close', () => c.frames().some((f) => f.opcode === OP.close));
    await c.ended;
    assert.deepEqual(s.events, []);
  } finally {
    await s.close();
  }
});

test('attach/ws refusals: 404 for an unknown container, 400 for a bad handshake or detachKeys', async () => {
  const s = await server(false);
  try {
    for (const [path, headers, status] of [
      ['/containers/nope/attach/ws?stream=1', {}, 404],
      ['/containers/box/attach/ws?stream=1', { 'Sec-WebSocket-Version': '8' }, 400],
      ['/containers/box/attach/ws?stream=1', { Upgrade: 'tcp' }, 400],
      ['/containers/box/attach/ws?stream=1&detachKeys=ctrl-1', {}, 400],
    ] as const) {
      const c = wsConnect(s.port, path, headers);
      assert.match(await c.head, new RegExp(`^HTTP/1\\.1 ${status} `), `${path} ${JSON.stringify(headers)}`);
      c.sock.destroy();
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
    c.sock.write(clientFrame(OP.binary, 'ls\x01'));
    c.sock.write(clientFrame(OP.binary, 'b'));
    await c.ended;
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
