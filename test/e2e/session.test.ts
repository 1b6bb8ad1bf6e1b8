// BuildKit's session (issue (21 of 21), 1): POST /session upgrades to h2c with the reference's 101
// and keeps the connection as the daemon's HTTP/2 client of the gRPC services the client serves on
// it (here a grpc-js server injected into the connection, as dockerode's session does: the daemon's
// health checks reach its Health service), registered by id until the client closes it; the
// reference's refusals (400) for an id already open, no upgrade and another protocol. And the SDK
// case the issue names: dockerode's BuildKit build (version "2") opens its session and the build runs
// to its image id (2: its FROM pulled from a login-protected registry with the credentials the
// session's Auth service answers; the same build without a session is refused by the registry).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { HealthService } from '../../drivers/session/gen/health.ts';
import { docker, dockerode, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { bcryptHtpasswd, registryAvailable, startRegistry } from './registry/registry.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { until } from './harness/wait.ts';

type Opened = { status: number; headers: IncomingMessage['headers']; socket?: Socket; body: string };

describe('BuildKit sessions: POST /session', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dirs: string[] = [];

  /** POST /session with these headers: the 101 and its connection, or the status and body of a refusal. */
  function open(headers: Record<string, string | string[]>): Promise<Opened> {
    return new Promise((resolve, reject) => {
      const req = request({ socketPath: d.socket, method: 'POST', path: '/v1.48/session', headers });
      req.on('upgrade', (res, socket, head) => {
        if (head.length) socket.unshift(head);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, socket, body: '' });
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }
  const sessionHeaders = (id: string, more: Record<string, string | string[]> = {}) => ({
    Connection: 'Upgrade',
    Upgrade: 'h2c',
    'X-Docker-Expose-Session-Uuid': id,
    'X-Docker-Expose-Session-Name': 'e2e',
    'X-Docker-Expose-Session-Sharedkey': 'key',
    'X-Docker-Expose-Session-Grpc-Method': ['/grpc.health.v1.Health/Check', '/moby.filesync.v1.Auth/Credentials'],
    ...more,
  });

  before(async () => {
    imgs = await testImages();
    d = await startDaemon();
    await dockerOk(() => d)('load', '-i', imgs.dockerArchive);
  });
  after(async () => {
    await d?.cleanup();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('the 101 to h2c; the daemon is the gRPC client on the connection (its health checks reach the client\'s server); the id is taken until the client closes it', { timeout: 60_000 }, async () => {
    const id = randomUUID();
    const s = await open(sessionHeaders(id, { 'X-Buildkit-Session-Health-Custom-Timeout': '1000' }));
    assert.equal(s.status, 101, s.body);
    assert.equal(s.headers.upgrade, 'h2c');
    assert.equal(s.headers.connection, 'Upgrade');
    // The client serves gRPC on its end, as dockerode's session does (a grpc-js server given the connection).
    const server = new grpc.Server();
    const checks: string[] = [];
    server.addService(HealthService, {
      check: (call: grpc.ServerUnaryCall<{ service: string }, unknown>, cb: grpc.sendUnaryData<{ status: string }>) => {
        checks.push(call.request.service);
        cb(null, { status: 'SERVING' });
      },
    });
    server.createConnectionInjector(grpc.ServerCredentials.createInsecure()).injectConnection(s.socket!);
    try {
      await until('the daemon health-checks the session', async () => checks.length >= 2, 15_000, 100);
      // A second session under the same id is refused in BuildKit's words.
      const again = await open(sessionHeaders(id));
      assert.equal(again.status, 400);
      assert.deepEqual(JSON.parse(again.body), { message: `session ${id} already exists` });
    } finally {
      server.forceShutdown();
      s.socket!.destroy();
    }
    // Closed by the client: the id is free again.
    const reopened = await until('the id free once the client closed', async () => {
      const r = await open(sessionHeaders(id));
      return r.status === 101 ? r : undefined;
    }, 10_000, 200);
    reopened.socket!.destroy();
    assert.equal((await dockerOk(() => d)('version', '--format', '{{.Server.Version}}')).length > 0, true);
  });

  test('refusals in the reference\'s words: no upgrade, another protocol', async () => {
    const none = await open({ 'X-Docker-Expose-Session-Uuid': randomUUID() });
    assert.equal(none.status, 400);
    assert.deepEqual(JSON.parse(none.body), { message: 'no upgrade proto in request' });
    const ws = await open({ ...sessionHeaders(randomUUID()), Upgrade: 'websocket' });
    assert.equal(ws.status, 400);
    assert.deepEqual(JSON.parse(ws.body), { message: 'protocol websocket not supported' });
  });

  test('dockerode\'s BuildKit build (version "2") opens its session and runs to the image id', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engine-session-ctx-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'Dockerfile'), `FROM ${imgs.tag}\nRUN echo from-a-session > /s.txt\n`);
    const tar = join(dir, 'ctx.tar');
    execFileSync('tar', ['-cf', tar, '-C', dir, 'Dockerfile']);
    const api = dockerode(d);
    const stream = await api.buildImage(tar, { t: 'session:1', version: '2' } as Record<string, unknown>);
    const lines = await new Promise<Array<Record<string, unknown>>>((resolve, reject) => {
      api.modem.followProgress(stream, (err: Error | null, res: Array<Record<string, unknown>>) => (err ? reject(err) : resolve(res)));
    });
    assert.ok(!lines.some((l) => l.error), JSON.stringify(lines.filter((l) => l.error)));
    const id = (lines.find((l) => l.id === 'moby.image.id')?.aux as { ID?: string } | undefined)?.ID;
    assert.match(id ?? '', /^sha256:[0-9a-f]{64}$/, JSON.stringify(lines.at(-1)));
    assert.equal(await dockerOk(() => d)('run', '--rm', 'session:1', 'cat', '/s.txt'), 'from-a-session');
  });

  const htpasswd = bcryptHtpasswd('alice', 's3cret');
  test('a build of a session pulls its FROM with the credentials the session\'s Auth service answers', { timeout: 120_000, skip: (!htpasswd || !registryAvailable()) && 'needs docker-registry and a bcrypt htpasswd' }, async () => {
    const reg = await startRegistry({ htpasswd: htpasswd! });
    try {
      const api = dockerode(d);
      const name = `${reg.hostPort}/private/busybox:v1`;
      await dockerOk(() => d)('tag', imgs.tag, name);
      const authconfig = { username: 'alice', password: 's3cret', serveraddress: reg.hostPort };
      const pushed = await api.getImage(name).push({ authconfig } as Record<string, unknown>);
      await new Promise<void>((resolve, reject) => api.modem.followProgress(pushed, (err: Error | null) => (err ? reject(err) : resolve())));
      await dockerOk(() => d)('rmi', name);
      const dir = mkdtempSync(join(tmpdir(), 'engine-session-auth-'));
      dirs.push(dir);
      writeFileSync(join(dir, 'Dockerfile'), `FROM ${name}\nRUN echo pulled-through-the-session > /p.txt\n`);
      const tar = join(dir, 'ctx.tar');
      execFileSync('tar', ['-cf', tar, '-C', dir, 'Dockerfile']);
      // No session, no X-Registry-Config: the registry refuses the pull.
      const anon = await api.buildImage(tar, { t: 'anon:1' });
      const anonLines = await new Promise<Array<Record<string, unknown>>>((resolve) => api.modem.followProgress(anon, (_e: Error | null, res: Array<Record<string, unknown>>) => resolve(res ?? [])));
      assert.match(JSON.stringify(anonLines.filter((l) => l.error)), /no basic auth credentials/);
      // dockerode's BuildKit build: its session answers Credentials with the authconfig.
      const stream = await api.buildImage(tar, { t: 'authed:1', version: '2', authconfig } as Record<string, unknown>);
      const lines = await new Promise<Array<Record<string, unknown>>>((resolve, reject) => api.modem.followProgress(stream, (err: Error | null, res: Array<Record<string, unknown>>) => (err ? reject(err) : resolve(res))));
      assert.ok(!lines.some((l) => l.error), JSON.stringify(lines.filter((l) => l.error)) + d.logs().split('\n').filter((l) => /session|build|abort/i.test(l)).slice(-30).join('\n'));
      assert.equal(await dockerOk(() => d)('run', '--rm', 'authed:1', 'cat', '/p.txt'), 'pulled-through-the-session');
    } finally {
      await reg.stop();
    }
  });

  test('the session ending cancels the build that uses it: its RUN container is killed and removed, nothing is tagged', { timeout: 90_000 }, async () => {
    const id = randomUUID();
    const s = await open(sessionHeaders(id));
    assert.equal(s.status, 101);
    const server = new grpc.Server();
    server.createConnectionInjector(grpc.ServerCredentials.createInsecure()).injectConnection(s.socket!);
    const dir = mkdtempSync(join(tmpdir(), 'engine-session-cancel-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'Dockerfile'), `FROM ${imgs.tag}\nRUN sleep 300\n`);
    const tar = execFileSync('tar', ['-cf', '-', '-C', dir, 'Dockerfile']);
    const ended = new Promise<string>((resolve, reject) => {
      const req = request({ socketPath: d.socket, method: 'POST', path: `/v1.48/build?version=2&t=never%3A1&session=${id}`, headers: { 'Content-Type': 'application/x-tar' } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve(body));
      });
      req.on('error', reject);
      req.end(tar);
    });
    const dk = dockerOk(() => d);
    const running = await until('the RUN container runs', async () => (await dk('ps', '-q', '--filter', 'status=running')).trim() || undefined, 30_000);
    server.forceShutdown();
    s.socket!.destroy();
    const body = await ended;
    assert.match(body.trim().split('\n').at(-1)!, /"error"/, body.slice(-500));
    await until('the RUN container gone', async () => !(await dk('ps', '-aq')).includes(running), 30_000);
    assert.equal((await docker(d, ['image', 'inspect', 'never:1'])).code, 1, 'nothing tagged');
  });
});
