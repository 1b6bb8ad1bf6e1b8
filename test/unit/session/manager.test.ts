// SessionManager: a session on a connection the client serves gRPC on (a grpc-js server injected
// into the other end, as dockerode does): the daemon's health checks and Auth/Credentials calls
// reach it through the relay; UNIMPLEMENTED health (a client serving only Auth) keeps the session;
// the client closing ends it and frees its id; a failing health check ends it with the header's
// threshold of one.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { SessionManager } from '../../../drivers/session/manager.ts';
import { AuthService } from '../../../drivers/session/gen/auth.ts';
import { HealthService } from '../../../drivers/session/gen/health.ts';

const dir = mkdtempSync(join(tmpdir(), 'engine-session-unit-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A connected pair: the daemon's end and the client's. */
async function pair(name: string): Promise<{ daemon: Socket; client: Socket }> {
  const path = join(dir, `${name}.pair`);
  const got = new Promise<Socket>((resolve) => {
    const srv = createServer((s) => {
      srv.close();
      resolve(s);
    }).listen(path);
  });
  const client = connect(path);
  return { daemon: await got, client };
}

/** The client's gRPC server on its end of the connection. */
function serve(client: Socket, impl: { health?: 'ok' | 'fail'; username?: string }) {
  const server = new grpc.Server();
  const calls: string[] = [];
  if (impl.health) {
    server.addService(HealthService, {
      check: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
        calls.push('health');
        if (impl.health === 'fail') cb({ code: grpc.status.UNAVAILABLE, details: 'not today' });
        else cb(null, { status: 'SERVING' });
      },
    });
  }
  server.addService(AuthService, {
    credentials: (call: grpc.ServerUnaryCall<{ Host: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      calls.push(`auth ${call.request.Host}`);
      cb(null, { Username: impl.username ?? '', Secret: 's3cret' });
    },
  });
  server.createConnectionInjector(grpc.ServerCredentials.createInsecure()).injectConnection(client);
  return { server, calls };
}

test('health checks and Credentials reach the client; its close ends the session and frees the id', async () => {
  const m = new SessionManager({ dir: join(dir, 'a'), log, healthIntervalMs: 100 });
  const { daemon, client } = await pair('a');
  const { server, calls } = serve(client, { health: 'ok', username: 'me' });
  const s = m.open({ id: 'id-a', name: 'n', sharedKey: 'k', methods: ['/moby.filesync.v1.Auth/Credentials'] }, daemon);
  assert.ok(m.has('id-a'));
  assert.throws(() => m.open({ id: 'id-a', name: '', sharedKey: '', methods: [] }, daemon), /session id-a already exists/, 'an id already open is refused by the manager itself');
  assert.equal(m.get('prefix:id-a'), s, 'a prefix before the id is ignored');
  assert.ok(s.supports('/MOBY.filesync.v1.Auth/Credentials') && !s.supports('/moby.filesync.v1.FileSync/DiffCopy'));
  assert.deepEqual(await s.credentials('127.0.0.1:5000'), { username: 'me', secret: 's3cret' });
  for (let i = 0; i < 50 && !calls.includes('health'); i++) await sleep(20);
  assert.ok(calls.includes('health'), calls.join(','));
  assert.ok(calls.includes('auth 127.0.0.1:5000'));
  server.forceShutdown();
  client.destroy();
  for (let i = 0; i < 50 && m.has('id-a'); i++) await sleep(20);
  assert.ok(!m.has('id-a') && s.closed && s.signal.aborted);
  assert.deepEqual(readdirSync(join(dir, 'a')), [], 'its relay socket removed');
  assert.equal(await s.credentials('x'), undefined, 'a closed session answers nothing');
});

test('a client without a health service (UNIMPLEMENTED) keeps its session; a failing one ends it (one failure with the header)', async () => {
  const m = new SessionManager({ dir: join(dir, 'b'), log, healthIntervalMs: 50 });
  const quiet = await pair('b1');
  const q = serve(quiet.client, {});
  const kept = m.open({ id: 'quiet', name: '', sharedKey: '', methods: [] }, quiet.daemon);
  await sleep(400);
  assert.ok(!kept.closed && m.has('quiet'));
  const sick = await pair('b2');
  const f = serve(sick.client, { health: 'fail' });
  const ended = m.open({ id: 'sick', name: '', sharedKey: '', methods: [], healthTimeoutMs: 1 }, sick.daemon);
  // The header's floor is one second, and its threshold one failure.
  for (let i = 0; i < 100 && !ended.closed; i++) await sleep(30);
  assert.ok(ended.closed && !m.has('sick'));
  assert.ok(f.calls.includes('health'));
  m.close();
  assert.ok(kept.closed && !m.has('quiet'));
  q.server.forceShutdown();
  f.server.forceShutdown();
});
