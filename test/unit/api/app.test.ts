// The application shell: version prefix and range, common headers, body parsing, error table.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { createApp, compareVersions } from '../../../api/app.ts';
import { listenAll, parseHost } from '../../../api/listen.ts';
import { request } from 'node:http';
import { mkdtempSync, statSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { conflict, notModified, unavailable } from '../../../lib/errors.ts';

function testApp(): FastifyInstance {
  return createApp({
    log: pino({ level: 'silent' }),
    version: { api: '1.47', min: '1.24' },
    engineVersion: '0.1.0',
    plugins: [
      async (app) => {
        app.get('/echo-version', async (req) => ({ v: req.apiVersion }));
        app.post('/echo-body', async (req) => ({ body: req.body === undefined ? 'undefined' : req.body }));
        app.post('/raw', async (req) => {
          const chunks: Buffer[] = [];
          for await (const c of req.raw) chunks.push(c as Buffer);
          return { bytes: Buffer.concat(chunks).toString() };
        });
        app.get('/conflict', async () => {
          throw conflict('you shall not pass');
        });
        app.get('/not-modified', async () => {
          throw notModified('already');
        });
        app.get('/unavailable', async () => {
          throw unavailable('later');
        });
        app.get('/boom', async () => {
          throw new Error('kaboom');
        });
        app.get('/hijack-then-throw', async (_req, reply) => {
          reply.hijack();
          reply.raw.writeHead(200, { 'Content-Type': 'text/plain' });
          reply.raw.end('partial');
          throw new Error('after hijack');
        });
        app.get('/images/*', async (req) => ({ name: (req.params as Record<string, string>)['*'] }));
      },
    ],
  });
}

describe('api app', () => {
  test('version comparison is numeric', () => {
    assert.equal(compareVersions('1.9', '1.10'), -1);
    assert.equal(compareVersions('1.47', '1.47.0'), 0);
    assert.equal(compareVersions('1.47.1', '1.47'), 1);
  });

  test('routes answer bare and prefixed, recording the version', async () => {
    const app = testApp();
    assert.deepEqual((await app.inject('/echo-version')).json(), { v: '1.47' });
    assert.deepEqual((await app.inject('/v1.41/echo-version')).json(), { v: '1.41' });
    assert.deepEqual((await app.inject('/v1.24/echo-version?x=1')).json(), { v: '1.24' });
    const r = await app.inject('/v1.47/images/localhost:5000/a/b:1.0/json');
    assert.deepEqual(r.json(), { name: 'localhost:5000/a/b:1.0/json' });
  });

  test('versions out of range are 400 with the reference messages', async () => {
    const app = testApp();
    const hi = await app.inject('/v1.99/echo-version');
    assert.equal(hi.statusCode, 400);
    assert.equal(hi.headers['content-type'], 'application/json');
    assert.deepEqual(hi.json(), { message: 'client version 1.99 is too new. Maximum supported API version is 1.47' });
    assert.equal(hi.headers['api-version'], '1.47');
    const old = await app.inject('/v1.12/echo-version');
    assert.equal(old.statusCode, 400);
    assert.match(String(old.headers['content-type']), /^text\/plain/);
    assert.match(old.body, /client version 1.12 is too old. Minimum supported API version is 1.24, please upgrade your client to a newer version/);
    // unknown paths are not version-checked
    const nf = await app.inject('/v1.99/nope');
    assert.equal(nf.statusCode, 404);
  });

  test('common headers on every response', async () => {
    const app = testApp();
    for (const url of ['/echo-version', '/v1.40/echo-version', '/nope', '/conflict']) {
      const r = await app.inject(url);
      assert.equal(r.headers['api-version'], '1.47', url);
      assert.equal(r.headers.server, 'Engine/0.1.0 (linux)', url);
      assert.equal(r.headers.ostype, 'linux', url);
    }
    assert.equal((await app.inject('/echo-version')).headers['docker-experimental'], 'false');
    assert.equal((await app.inject('/echo-version')).headers['content-type'], 'application/json');
  });

  test('JSON bodies: empty is undefined, with or without charset; malformed is 400', async () => {
    const app = testApp();
    for (const ct of ['application/json', 'application/json; charset=utf-8']) {
      const r = await app.inject({ method: 'POST', url: '/echo-body', headers: { 'content-type': ct }, payload: '' });
      assert.equal(r.statusCode, 200, r.body);
      assert.deepEqual(r.json(), { body: 'undefined' });
    }
    const none = await app.inject({ method: 'POST', url: '/echo-body' });
    assert.deepEqual(none.json(), { body: 'undefined' });
    const ok = await app.inject({ method: 'POST', url: '/echo-body', headers: { 'content-type': 'application/json' }, payload: '{"a":1}' });
    assert.deepEqual(ok.json(), { body: { a: 1 } });
    const bad = await app.inject({ method: 'POST', url: '/echo-body', headers: { 'content-type': 'application/json' }, payload: '{bad' });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.headers['content-type'], 'application/json');
    assert.match(bad.json().message, /^invalid JSON: /);
    const two = await app.inject({ method: 'POST', url: '/echo-body', headers: { 'content-type': 'application/json' }, payload: '{} {}' });
    assert.equal(two.statusCode, 400);
  });

  test('other content types are left for the handler to stream', async () => {
    const app = testApp();
    for (const headers of [{ 'content-type': 'application/x-tar' }, { 'content-type': 'application/octet-stream' }, { 'content-type': 'text/plain' }, {}]) {
      const r = await app.inject({ method: 'POST', url: '/raw', headers, payload: Buffer.from('tar-bytes') });
      assert.equal(r.statusCode, 200, r.body);
      assert.deepEqual(r.json(), { bytes: 'tar-bytes' });
    }
  });

  test('unknown route and wrong method are 404 page not found; OPTIONS is 200', async () => {
    const app = testApp();
    for (const r of [await app.inject('/nope'), await app.inject({ method: 'DELETE', url: '/echo-version' })]) {
      assert.equal(r.statusCode, 404);
      assert.equal(r.headers['content-type'], 'application/json');
      assert.deepEqual(r.json(), { message: 'page not found' });
    }
    assert.equal((await app.inject({ method: 'OPTIONS', url: '/anything' })).statusCode, 200);
  });

  test('error table', async () => {
    const app = testApp();
    const c = await app.inject('/conflict');
    assert.equal(c.statusCode, 409);
    assert.deepEqual(c.json(), { message: 'you shall not pass' });
    const nm = await app.inject('/not-modified');
    assert.equal(nm.statusCode, 304);
    assert.equal(nm.body, '');
    assert.equal((await app.inject('/unavailable')).statusCode, 503);
    const boom = await app.inject('/boom');
    assert.equal(boom.statusCode, 500);
    assert.deepEqual(boom.json(), { message: 'kaboom' });
  });

  test('an error after hijack does not crash and the daemon keeps answering', async () => {
    const app = testApp();
    const r = await app.inject('/hijack-then-throw');
    assert.equal(r.body, 'partial');
    assert.equal((await app.inject('/echo-version')).statusCode, 200);
  });

  test('host address forms', () => {
    assert.deepEqual(parseHost('unix:///run/x.sock'), { kind: 'unix', path: '/run/x.sock' });
    assert.deepEqual(parseHost(''), { kind: 'unix', path: '/var/run/engine.sock' });
    assert.deepEqual(parseHost('tcp://'), { kind: 'tcp', host: '127.0.0.1', port: 2375, path: '' });
    assert.deepEqual(parseHost('tcp://', { tls: true }), { kind: 'tcp', host: '127.0.0.1', port: 2376, path: '' });
    assert.deepEqual(parseHost('tcp://0.0.0.0:2375/base'), { kind: 'tcp', host: '0.0.0.0', port: 2375, path: '/base' });
    assert.deepEqual(parseHost('tcp://[::1]:99'), { kind: 'tcp', host: '::1', port: 99, path: '' });
    assert.deepEqual(parseHost(':4243'), { kind: 'tcp', host: '127.0.0.1', port: 4243, path: '' });
    assert.deepEqual(parseHost('example.com:'), { kind: 'tcp', host: 'example.com', port: 2375, path: '' });
    assert.deepEqual(parseHost('fd://'), { kind: 'fd' });
    assert.deepEqual(parseHost('fd://3'), { kind: 'fd', fd: 3 });
    assert.throws(() => parseHost('ftp://x'));
  });

  test('listenAll serves one app on a unix socket and a tcp port', async () => {
    const app = testApp();
    const dir = mkdtempSync(join(tmpdir(), 'engine-listen-'));
    const sock = join(dir, 'engine.sock');
    const l = await listenAll(app, [`unix://${sock}`, 'tcp://127.0.0.1:0'], { log: pino({ level: 'silent' }), socketGroup: 'no-such-group-xyz' });
    try {
      assert.equal(statSync(sock).mode & 0o777, 0o660);
      assert.equal(l.addresses[0], `unix://${sock}`);
      const port = Number(/:(\d+)$/.exec(l.addresses[1])![1]);
      const get = (opts: { socketPath?: string; port?: number }) =>
        new Promise<{ status: number; body: string; version: string }>((resolve, reject) => {
          const req = request({ ...opts, host: '127.0.0.1', path: '/v1.45/echo-version' }, (res) => {
            let body = '';
            res.on('data', (c) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body, version: String(res.headers['api-version']) }));
          });
          req.on('error', reject);
          req.end();
        });
      for (const r of [await get({ socketPath: sock }), await get({ port })]) {
        assert.equal(r.status, 200);
        assert.deepEqual(JSON.parse(r.body), { v: '1.45' });
        assert.equal(r.version, '1.47');
      }
    } finally {
      await l.close();
      await app.close();
      assert.equal(existsSync(sock), false);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('oversized request headers answer 431 at once (70 kB and 200 kB); a garbage request 400; the server keeps serving', async () => {
    const app = testApp();
    const dir = mkdtempSync(join(tmpdir(), 'engine-listen-'));
    const sock = join(dir, 'engine.sock');
    const l = await listenAll(app, [`unix://${sock}`], { log: pino({ level: 'silent' }) });
    const raw = (payload: string) =>
      new Promise<string>((resolve, reject) => {
        const c = connect(sock);
        let buf = '';
        const t = setTimeout(() => reject(new Error(`no answer; got ${JSON.stringify(buf.slice(0, 80))}`)), 3000);
        c.on('data', (d) => (buf += d));
        c.on('close', () => {
          clearTimeout(t);
          resolve(buf);
        });
        c.on('error', () => {});
        c.write(payload);
      });
    try {
      for (const size of [70_000, 200_000]) {
        const answer = await raw(`GET /_ping HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(size)}\r\n\r\n`);
        assert.match(answer, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/, `${size}`);
        assert.match(answer, /"message":"request header fields too large"/);
      }
      assert.match(await raw('NOT HTTP AT ALL\r\n\r\n'), /^HTTP\/1\.1 400 Bad Request/);
      const ok = await raw(`GET /v1.45/echo-version HTTP/1.1\r\nHost: x\r\nX-Auth: ${'b'.repeat(40_000)}\r\nConnection: close\r\n\r\n`);
      assert.match(ok, /^HTTP\/1\.1 200/, 'a 40 kB header is fine');
    } finally {
      await l.close();
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test('the request log line comes from the app logger, with credentials redacted', async () => {
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (l: string) => lines.push(l) });
  const app = createApp({ log, version: { api: '1.47', min: '1.24' }, plugins: [async (a) => void a.get('/x', async () => ({}))] });
  try {
    const r = await app.inject({ url: '/v1.47/x', headers: { authorization: 'Basic c2VjcmV0', 'x-registry-auth': 'eyJwYXNzd29yZCI6InNlY3JldCJ9', 'x-other': 'kept' } });
    assert.equal(r.statusCode, 200);
    const rec = lines.map((l) => JSON.parse(l)).find((o) => o.msg === 'request');
    assert.ok(rec, lines.join('\n'));
    assert.equal(rec.request.url, '/v1.47/x');
    assert.equal(rec.status, 200);
    assert.equal(rec.request.headers['x-other'], 'kept');
    assert.equal(rec.request.headers.authorization, '[redacted]');
    assert.equal(rec.request.headers['x-registry-auth'], '[redacted]');
    assert.ok(!lines.join('').includes('c2VjcmV0') && !lines.join('').includes('eyJwYXNz'));
  } finally {
    await app.close();
  }
});
