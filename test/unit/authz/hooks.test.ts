// The chain on the app: what AuthZReq and AuthZRes carry (the URI as sent, headers without
// credentials, JSON bodies in base64), a denial or failure on either side, streamed bodies and
// hijacked connections checked on the request only.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, beforeEach, describe, test } from 'node:test';
import pino from 'pino';
import { createApp, type App } from '../../../api/app.ts';
import { AuthzChain } from '../../../api/authz/chain.ts';
import { canonicalHeaderKey } from '../../../api/authz/hooks.ts';
import { removeDir, startFakePlugin, type FakePlugin } from './fake-plugin.ts';

interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function call(socketPath: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('authz hooks on the app', () => {
  let plugin: FakePlugin;
  let app: App;
  let sock: string;
  let chain: AuthzChain;
  let handled: string[] = [];
  before(async () => {
    plugin = await startFakePlugin('gate');
    chain = new AuthzChain(['gate'], { dirs: { socketDir: plugin.dir, specDirs: [] } });
    sock = join(plugin.dir, 'api.sock');
    app = createApp({
      log: pino({ level: 'silent' }),
      version: { api: '1.47', min: '1.24' },
      authz: chain,
      plugins: [
        async (a) => {
          a.get('/things', async () => {
            handled.push('things');
            return { ok: true };
          });
          a.post('/things', async (req) => {
            handled.push('post');
            return { got: req.body };
          });
          a.post('/raw', async (req) => {
            const chunks: Buffer[] = [];
            for await (const c of req.raw) chunks.push(c as Buffer);
            return { bytes: Buffer.concat(chunks).length };
          });
          a.post('/auth', async () => ({ Status: 'Login Succeeded' }));
          a.get('/sent-not-returned', async (_req, reply) => {
            reply.type('text/plain').send('OK');
          });
          a.get('/stream', async (_req, reply) => reply.type('application/json').send(Readable.from(['{"a":1}\n'])));
          a.get('/hijack', async (_req, reply) => {
            reply.hijack();
            reply.raw.writeHead(200, { 'Content-Type': 'application/vnd.docker.raw-stream' });
            reply.raw.end('raw');
          });
        },
      ],
    });
    await app.listen({ path: sock });
  });
  after(async () => {
    await app.close();
    await plugin.close();
    removeDir(plugin.dir);
  });
  beforeEach(() => {
    plugin.calls.length = 0;
    plugin.answer = () => ({ body: { Allow: true } });
    handled = [];
  });
  const authz = () => plugin.calls.filter((c) => c.path !== '/Plugin.Activate');

  test('canonical header keys as Go writes them', () => {
    assert.equal(canonicalHeaderKey('x-registry-auth'), 'X-Registry-Auth');
    assert.equal(canonicalHeaderKey('CONTENT-type'), 'Content-Type');
  });

  test('allowed: AuthZReq then AuthZRes, the URI as sent, credentials and Host left out, the JSON reply in base64', async () => {
    const r = await call(sock, 'GET', '/v1.45/things?all=1', { Authorization: 'Basic x', 'X-Registry-Auth': 'secret', 'x-registry-config': 'c', 'User-Agent': 'test/1' });
    assert.equal(r.status, 200);
    const [req, res] = authz();
    assert.equal(req.path, '/AuthZPlugin.AuthZReq');
    assert.equal(req.body.RequestMethod, 'GET');
    assert.equal(req.body.RequestUri, '/v1.45/things?all=1');
    assert.equal(req.body.RequestBody, undefined);
    const headers = req.body.RequestHeaders as Record<string, string>;
    assert.equal(headers['User-Agent'], 'test/1');
    for (const k of ['Authorization', 'X-Registry-Auth', 'X-Registry-Config', 'Host']) assert.equal(headers[k], undefined, k);
    assert.equal(res.path, '/AuthZPlugin.AuthZRes');
    assert.equal(res.body.ResponseStatusCode, 200);
    assert.equal(res.body.ResponseBody, b64('{"ok":true}'));
    const rh = res.body.ResponseHeaders as Record<string, string>;
    assert.match(rh['Content-Type'], /^application\/json/);
    assert.equal(rh['Api-Version'], '1.47');
  });

  test('a JSON request body goes in base64 as sent; a streamed body and an /auth body do not', async () => {
    const text = '{"Name":"x",  "Tty":true}';
    const r = await call(sock, 'POST', '/things', { 'Content-Type': 'application/json' }, text);
    assert.equal(r.status, 200);
    assert.equal(authz()[0].body.RequestBody, b64(text));
    plugin.calls.length = 0;
    const raw = await call(sock, 'POST', '/raw', { 'Content-Type': 'application/x-tar' }, 'tarbytes');
    assert.equal(raw.body, '{"bytes":8}');
    assert.equal(authz()[0].body.RequestBody, undefined);
    assert.equal(authz()[1].body.ResponseBody, b64('{"bytes":8}'));
    plugin.calls.length = 0;
    await call(sock, 'POST', '/v1.47/auth', { 'Content-Type': 'application/json' }, '{"username":"u","password":"p"}');
    assert.equal(authz()[0].body.RequestBody, undefined);
    assert.equal(authz()[1].body.ResponseBody, undefined);
  });

  test('denied on the request: 403 with the plugin and its message; the handler never runs', async () => {
    plugin.answer = () => ({ body: { Allow: false, Msg: 'not you' } });
    const r = await call(sock, 'GET', '/things');
    assert.equal(r.status, 403);
    assert.deepEqual(JSON.parse(r.body), { message: 'authorization denied by plugin gate: not you' });
    assert.deepEqual(handled, []);
    assert.equal(authz().length, 1);
  });

  test('denied on the response: the reply is replaced by the 403', async () => {
    plugin.answer = (c) => ({ body: c.path === '/AuthZPlugin.AuthZRes' ? { Allow: false, Msg: 'filtered' } : { Allow: true } });
    const r = await call(sock, 'GET', '/things');
    assert.equal(r.status, 403);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(r.body), { message: 'authorization denied by plugin gate: filtered' });
    assert.deepEqual(handled, ['things']);
  });

  test('a failing plugin: 500 naming it', async () => {
    plugin.answer = () => ({ status: 500, body: { Err: 'it broke' } });
    const r = await call(sock, 'GET', '/things');
    assert.equal(r.status, 500);
    assert.deepEqual(JSON.parse(r.body), { message: 'plugin gate failed with error: AuthZPlugin.AuthZReq: it broke' });
  });

  test('streamed and hijacked replies: the request only', async () => {
    const s = await call(sock, 'GET', '/stream');
    assert.equal(s.body, '{"a":1}\n');
    assert.deepEqual(authz().map((c) => c.path), ['/AuthZPlugin.AuthZReq']);
    plugin.calls.length = 0;
    const h = await call(sock, 'GET', '/hijack');
    assert.equal(h.body, 'raw');
    assert.deepEqual(authz().map((c) => c.path), ['/AuthZPlugin.AuthZReq']);
  });

  test('a handler that sends without returning the reply: one answer, one AuthZRes', async () => {
    const r = await call(sock, 'GET', '/sent-not-returned');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'OK');
    assert.deepEqual(authz().map((c) => c.path), ['/AuthZPlugin.AuthZReq', '/AuthZPlugin.AuthZRes']);
  });

  test('no plugin configured: no call at all', async () => {
    chain.set([]);
    try {
      const r = await call(sock, 'GET', '/things');
      assert.equal(r.status, 200);
      assert.equal(plugin.calls.length, 0);
    } finally {
      chain.set(['gate']);
    }
  });
});
