// The node:http2 gRPC client (drivers/supervisor/grpc.ts) against a grpc-js server and against a raw
// HTTP/2 server for the cases a real server does not produce on demand: odd chunking, trailers-only
// errors, compressed messages, HTTP errors, a connection cut mid-call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import * as http2 from 'node:http2';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GrpcClient, status } from '../../../drivers/supervisor/grpc.ts';
import type { GrpcError } from '../../../drivers/supervisor/grpc.ts';
import { decode, encode, unary } from '../../../drivers/supervisor/proto.ts';
import { EngineError } from '../../../lib/errors.ts';
import { fakeGrpcServer } from './helpers.ts';

const VERSION = '/containerd.services.version.v1.Version/Version';
const VERSION_RES = 'containerd.services.version.v1.VersionResponse';
const HEADERS = { headers: { 'containerd-namespace': 'enginetest' } };

function frame(...msgs: Buffer[]): Buffer {
  return Buffer.concat(
    msgs.flatMap((m) => {
      const p = Buffer.alloc(5);
      p.writeUInt32BE(m.length, 1);
      return [p, m];
    }),
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function tmpSocket(): Promise<{ socket: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'engine-grpc-'));
  return { socket: join(dir, 'grpc.sock'), cleanup: () => rm(dir, { recursive: true, force: true }) };
}

type Handler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, body: Buffer) => void;

/** A raw HTTP/2 server on a unix socket; the handler gets each request once its body is read. */
async function rawServer(socket: string, handler: Handler): Promise<{ close: () => Promise<void>; sessions: Set<http2.ServerHttp2Session> }> {
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
    s.on('error', () => {});
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => handler(stream, headers, Buffer.concat(chunks)));
  });
  await new Promise<void>((r) => server.listen(socket, r));
  return {
    sessions,
    close: async () => {
      for (const s of sessions) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Answers with the given body chunks (each its own write) and a status in the trailers. */
function respond(stream: http2.ServerHttp2Stream, chunks: Buffer[], code = 0, message?: string, gapMs = 2): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(code), ...(message ? { 'grpc-message': message } : {}) }));
  void (async () => {
    for (const c of chunks) {
      stream.write(c);
      await sleep(gapMs);
    }
    stream.end();
  })();
}

async function withRaw(handler: Handler, fn: (client: GrpcClient, server: Awaited<ReturnType<typeof rawServer>>) => Promise<void>): Promise<void> {
  const { socket, cleanup } = await tmpSocket();
  const server = await rawServer(socket, handler);
  const client = new GrpcClient(socket);
  try {
    await fn(client, server);
  } finally {
    client.close();
    await server.close();
    await cleanup();
  }
}

async function rejectsWith(p: Promise<unknown>, code: number, details?: RegExp): Promise<GrpcError> {
  const err = (await p.then(
    () => assert.fail('expected a rejection'),
    (e: unknown) => e,
  )) as GrpcError;
  assert.equal(err.code, code, `code of ${err.message}`);
  if (details) assert.match(err.details, details);
  return err;
}

test('unary call and error status against a grpc-js server', async () => {
  const { socket, cleanup } = await tmpSocket();
  const seen: grpc.Metadata[] = [];
  const server = await fakeGrpcServer(socket, { Version: VERSION, Get: '/containerd.services.tasks.v1.Tasks/Get' }, {
    Version: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      seen.push(call.metadata);
      cb(null, encode(VERSION_RES, { version: 'fake', revision: 'r1' }));
    },
    Get: (_call: unknown, cb: grpc.sendUnaryData<Buffer>) => cb({ code: grpc.status.NOT_FOUND, details: 'container "x": not found, 100%' }),
  });
  const client = new GrpcClient(socket);
  try {
    const res = await unary(client, 'containerd.services.version.v1.Version', 'Version', 'google.protobuf.Empty', VERSION_RES, {}, { namespace: 'ns1', timeoutMs: 5_000 });
    assert.deepEqual(res, { version: 'fake', revision: 'r1' });
    assert.deepEqual(seen[0].get('containerd-namespace'), ['ns1']);
    // Several calls share the one connection.
    await Promise.all([1, 2, 3].map(() => client.unary(VERSION, Buffer.alloc(0), HEADERS)));
    const raw = await rejectsWith(client.unary('/containerd.services.tasks.v1.Tasks/Get', Buffer.alloc(0), HEADERS), status.NOT_FOUND, /^container "x": not found, 100%$/);
    assert.equal(raw.message, '5 NOT_FOUND: container "x": not found, 100%');
    // And through proto.ts: containerd's message is kept in the EngineError.
    await assert.rejects(
      unary(client, 'containerd.services.tasks.v1.Tasks', 'Get', 'containerd.services.tasks.v1.GetRequest', 'containerd.services.tasks.v1.GetResponse', { container_id: 'x' }, { namespace: 'ns1', timeoutMs: 5_000 }),
      (err: unknown) => err instanceof EngineError && err.code === 'NotFound' && err.message.includes('container "x": not found'),
    );
  } finally {
    client.close();
    server.forceShutdown();
    await cleanup();
  }
});

test('request framing, headers, and a response split into many small chunks', async () => {
  const msg = encode(VERSION_RES, { version: 'v'.repeat(300), revision: 'r' });
  let got: { headers: http2.IncomingHttpHeaders; body: Buffer } | undefined;
  await withRaw(
    (stream, headers, body) => {
      got = { headers, body };
      const all = frame(msg);
      const chunks: Buffer[] = [];
      for (let i = 0; i < all.length; i += 3) chunks.push(all.subarray(i, i + 3));
      respond(stream, chunks, 0, undefined, 0);
    },
    async (client) => {
      const req = Buffer.from('hello');
      const res = await client.unary('/svc.S/M', req, { ...HEADERS, deadline: Date.now() + 5_000 });
      assert.deepEqual(decode(VERSION_RES, res), { version: 'v'.repeat(300), revision: 'r' });
      assert.equal(got!.headers[':path'], '/svc.S/M');
      assert.equal(got!.headers[':method'], 'POST');
      assert.equal(got!.headers['content-type'], 'application/grpc');
      assert.equal(got!.headers.te, 'trailers');
      assert.equal(got!.headers['containerd-namespace'], 'enginetest');
      assert.match(String(got!.headers['grpc-timeout']), /^\d+m$/);
      assert.deepEqual(got!.body, frame(req));
    },
  );
});

test('trailers-only errors, HTTP errors, compressed and oversized messages, missing message', async () => {
  await withRaw(
    (stream, headers) => {
      const p = headers[':path'];
      if (p === '/s/TrailersOnly') stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '9', 'grpc-message': 'task%20is%20running' }, { endStream: true });
      else if (p === '/s/Http503') stream.respond({ ':status': 503 }, { endStream: true });
      else if (p === '/s/Compressed') respond(stream, [Buffer.from([1, 0, 0, 0, 1, 0])]);
      else if (p === '/s/Huge') respond(stream, [Buffer.from([0, 0xff, 0, 0, 0])]);
      else if (p === '/s/Empty') respond(stream, []);
      else if (p === '/s/Reset') stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    },
    async (client) => {
      await rejectsWith(client.unary('/s/TrailersOnly', Buffer.alloc(0), HEADERS), status.FAILED_PRECONDITION, /^task is running$/);
      await rejectsWith(client.unary('/s/Http503', Buffer.alloc(0), HEADERS), status.UNAVAILABLE);
      await rejectsWith(client.unary('/s/Compressed', Buffer.alloc(0), HEADERS), status.INTERNAL);
      await rejectsWith(client.unary('/s/Huge', Buffer.alloc(0), HEADERS), status.RESOURCE_EXHAUSTED);
      await rejectsWith(client.unary('/s/Empty', Buffer.alloc(0), HEADERS), status.INTERNAL);
      await rejectsWith(client.unary('/s/Reset', Buffer.alloc(0), HEADERS), status.INTERNAL);
      // The connection survives all of that.
      await rejectsWith(client.unary('/s/TrailersOnly', Buffer.alloc(0), HEADERS), status.FAILED_PRECONDITION);
    },
  );
});

test('deadline while the server never answers, abort signal, and close() end pending calls', async () => {
  const streams: http2.ServerHttp2Stream[] = [];
  await withRaw(
    (stream) => streams.push(stream),
    async (client) => {
      const t0 = Date.now();
      await rejectsWith(client.unary('/s/Hang', Buffer.alloc(0), { ...HEADERS, deadline: Date.now() + 200 }), status.DEADLINE_EXCEEDED);
      assert.ok(Date.now() - t0 >= 190);
      const ac = new AbortController();
      const p = client.unary('/s/Hang', Buffer.alloc(0), { ...HEADERS, signal: ac.signal });
      setTimeout(() => ac.abort(), 50);
      await rejectsWith(p, status.CANCELLED);
      // Through proto.ts an abort is the engine's Canceled.
      const ac2 = new AbortController();
      const p2 = unary(client, 'containerd.services.tasks.v1.Tasks', 'Wait', 'containerd.services.tasks.v1.WaitRequest', 'containerd.services.tasks.v1.WaitResponse', {}, { namespace: 'n', signal: ac2.signal });
      setTimeout(() => ac2.abort(), 50);
      await assert.rejects(p2, (err: unknown) => err instanceof EngineError && err.code === 'Canceled');
      const pending = client.unary('/s/Hang', Buffer.alloc(0), HEADERS);
      await sleep(50);
      client.close();
      await rejectsWith(pending, status.CANCELLED);
      await rejectsWith(client.unary('/s/Hang', Buffer.alloc(0), HEADERS), status.UNAVAILABLE);
    },
  );
});

test('a missing socket: unary waits until its deadline, a stream errors', async () => {
  const { socket, cleanup } = await tmpSocket();
  const client = new GrpcClient(socket);
  try {
    const t0 = Date.now();
    await rejectsWith(client.unary('/s/M', Buffer.alloc(0), { ...HEADERS, deadline: Date.now() + 400 }), status.DEADLINE_EXCEEDED);
    assert.ok(Date.now() - t0 >= 390);
    const s = client.serverStream('/s/Sub', Buffer.alloc(0), HEADERS);
    const err = await new Promise<GrpcError>((resolve) => s.on('error', resolve));
    assert.equal(err.code, status.UNAVAILABLE);
  } finally {
    client.close();
    await cleanup();
  }
});

test('a call in flight when the connection breaks fails UNAVAILABLE; the next call reconnects', async () => {
  let hang = true;
  await withRaw(
    (stream) => {
      if (!hang) respond(stream, [frame(Buffer.from([8, 1]))]);
    },
    async (client, server) => {
      const p = client.unary('/s/M', Buffer.alloc(0), HEADERS);
      await sleep(50);
      for (const s of server.sessions) s.destroy();
      await rejectsWith(p, status.UNAVAILABLE);
      hang = false;
      assert.deepEqual(await client.unary('/s/M', Buffer.alloc(0), HEADERS), Buffer.from([8, 1]));
    },
  );
});

test('server stream: messages however chunked, then end or error', async () => {
  const a = Buffer.from('first'),
    b = Buffer.from('second'),
    c = Buffer.from('third');
  await withRaw(
    (stream, headers) => {
      const both = frame(a, b);
      // Two messages in one chunk, then one split across two chunks.
      const chunks = [both, frame(c).subarray(0, 4), frame(c).subarray(4)];
      if (headers[':path'] === '/s/Ok') respond(stream, chunks);
      else respond(stream, chunks, 14, 'shutting down');
    },
    async (client) => {
      const collect = (path: string) =>
        new Promise<{ msgs: string[]; err?: GrpcError }>((resolve) => {
          const msgs: string[] = [];
          const s = client.serverStream(path, Buffer.alloc(0), HEADERS);
          s.on('data', (m) => msgs.push(m.toString()));
          s.on('end', () => resolve({ msgs }));
          s.on('error', (err) => resolve({ msgs, err }));
        });
      assert.deepEqual(await collect('/s/Ok'), { msgs: ['first', 'second', 'third'] });
      const r = await collect('/s/Err');
      assert.deepEqual(r.msgs, ['first', 'second', 'third']);
      assert.equal(r.err?.code, status.UNAVAILABLE);
      assert.equal(r.err?.details, 'shutting down');
      // cancel() ends it once, with CANCELLED, and nothing after.
      let errors = 0;
      const s = client.serverStream('/s/Ok', Buffer.alloc(0), HEADERS);
      s.on('error', () => errors++);
      s.on('end', () => errors++);
      s.cancel();
      await sleep(100);
      assert.equal(errors, 1);
    },
  );
});
