// Authorization plugins through a real daemon: a plugin (an HTTP server on a unix socket in a
// private plugin directory, found through ENGINE_PLUGINS_SOCKET_DIR) sees every request (AuthZReq)
// and every reply (AuthZRes); its denial is the client's error, as is its failure. A plugin that
// cannot be found keeps the daemon from starting, and a reload naming one is refused.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { apiRequest, docker, dockerOk, testImages } from './harness/clients.ts';
import { REPO, startDaemon, type DaemonHandle } from './harness/daemon.ts';

const ENGINED = join(REPO, 'bin', 'engined');
const NAME = 'e2eauthz';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const api = (d: DaemonHandle, method: string, path: string, body?: string) => apiRequest(d, method, path, body, 'application/yaml');

interface Seen {
  path: string;
  body: { RequestMethod?: string; RequestUri?: string; RequestBody?: string; ResponseStatusCode?: number; ResponseBody?: string };
}

describe('authorization plugins', () => {
  const dir = mkdtempSync('/tmp/engine-authz-');
  const env = { ENGINE_PLUGINS_SOCKET_DIR: dir, ENGINE_PLUGINS_SPEC_DIRS: join(dir, 'specs') };
  let seen: Seen[] = [];
  let answer: (s: Seen) => { status?: number; body: unknown } = () => ({ body: { Allow: true } });
  let server: Server;
  let d: DaemonHandle;

  before(async () => {
    mkdirSync(join(dir, 'specs'));
    server = createServer((req, res) => {
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (text += c));
      req.on('end', () => {
        const s: Seen = { path: req.url ?? '', body: text ? JSON.parse(text) : {} };
        seen.push(s);
        const a = s.path === '/Plugin.Activate' ? { body: { Implements: ['authz'] } } : answer(s);
        res.writeHead(a.status ?? 200, { 'Content-Type': 'application/vnd.docker.plugins.v1.2+json' });
        res.end(JSON.stringify(a.body));
      });
    });
    await new Promise<void>((r) => server.listen(join(dir, `${NAME}.sock`), () => r()));
    // From the file, so that a reload may change the list (a flag would make the file key a conflict).
    d = await startDaemon({ daemonJson: { 'authorization-plugins': [NAME] }, env });
  });
  after(async () => {
    await d?.cleanup();
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    seen = [];
    answer = () => ({ body: { Allow: true } });
  });

  test('docker info: allowed, and the plugin saw the request and the reply', async () => {
    const r = await docker(d, ['info', '--format', '{{.ID}}']);
    assert.equal(r.code, 0, r.stderr);
    const req = seen.find((s) => s.path === '/AuthZPlugin.AuthZReq' && /^\/v[0-9.]+\/info$/.test(s.body.RequestUri ?? ''));
    const res = seen.find((s) => s.path === '/AuthZPlugin.AuthZRes' && /^\/v[0-9.]+\/info$/.test(s.body.RequestUri ?? ''));
    assert.ok(req, JSON.stringify(seen.map((s) => [s.path, s.body.RequestUri])));
    assert.equal(req.body.RequestMethod, 'GET');
    assert.ok(res);
    assert.equal(res.body.RequestMethod, 'GET');
    assert.equal(res.body.ResponseStatusCode, 200);
    const info = JSON.parse(Buffer.from(res.body.ResponseBody ?? '', 'base64').toString()) as { ID?: string };
    assert.equal(info.ID, r.stdout.trim());
  });

  test('a denied route: docker create fails with the plugin and its message; the request body was shown', async () => {
    answer = (s) => ({ body: /\/containers\/create/.test(s.body.RequestUri ?? '') ? { Allow: false, Msg: 'no new containers' } : { Allow: true } });
    const r = await docker(d, ['create', '--name', 'authz-denied', 'busybox:latest', 'true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, new RegExp(`authorization denied by plugin ${NAME}: no new containers`));
    const create = seen.find((s) => /\/containers\/create/.test(s.body.RequestUri ?? ''));
    assert.ok(create);
    assert.equal(create.body.RequestMethod, 'POST');
    assert.match(create.body.RequestUri ?? '', /name=authz-denied/);
    assert.equal((JSON.parse(Buffer.from(create.body.RequestBody ?? '', 'base64').toString()) as { Image?: string }).Image, 'busybox:latest');
    assert.ok(!seen.some((s) => s.path === '/AuthZPlugin.AuthZRes' && /\/containers\/create/.test(s.body.RequestUri ?? '')), 'no AuthZRes for a denied request');
  });

  test('a stack: the plugin sees its PUT and DELETE, never the daemon’s own writes for it; its replicas run though container creates are denied', async () => {
    const imgs = await testImages();
    await dockerOk(() => d)('load', '-i', imgs.dockerArchive);
    answer = (s) => ({ body: /\/containers\/create/.test(s.body.RequestUri ?? '') ? { Allow: false, Msg: 'no new containers' } : { Allow: true } });
    seen = [];
    const yaml = `services:\n  web:\n    image: ${imgs.tag}\n    command: ["sleep", "300"]\n    deploy:\n      replicas: 2\n`;
    const put = await api(d, 'PUT', '/v1.41/stacks/guarded', yaml);
    assert.equal(put.status, 201, put.text);
    let ps = '';
    for (let i = 0; i < 100 && (ps.match(/guarded-web-\d/g) ?? []).length < 2; i++) {
      await sleep(100);
      ps = (await docker(d, ['ps', '--format', '{{.Names}}'])).stdout;
    }
    assert.deepEqual((ps.match(/guarded-web-\d/g) ?? []).sort(), ['guarded-web-1', 'guarded-web-2']);
    const uris = seen.filter((x) => x.path === '/AuthZPlugin.AuthZReq').map((x) => `${x.body.RequestMethod} ${x.body.RequestUri}`);
    assert.ok(uris.some((u) => /^PUT \/v1\.41\/stacks\/guarded$/.test(u)), JSON.stringify(uris));
    assert.deepEqual(uris.filter((u) => /\/containers\/create|\/containers\/[^/]+\/start|\/networks\/create/.test(u)), [], 'the daemon’s own writes are not requests');
    assert.equal((await api(d, 'DELETE', '/v1.41/stacks/guarded')).status, 204);
    for (let i = 0; i < 100 && (await api(d, 'GET', '/stacks/guarded')).status !== 404; i++) await sleep(100);
    assert.ok(seen.some((x) => x.path === '/AuthZPlugin.AuthZReq' && x.body.RequestMethod === 'DELETE' && x.body.RequestUri === '/v1.41/stacks/guarded'));
    assert.ok(!seen.some((x) => /\/containers\/[0-9a-f]{12,}/.test(x.body.RequestUri ?? '') && x.body.RequestMethod === 'DELETE'), 'its replicas are removed without a request');
  });

  test('a plugin answering an error: 500 with its Err', async () => {
    answer = (s) => (/\/volumes/.test(s.body.RequestUri ?? '') ? { status: 500, body: { Err: 'policy store down' } } : { body: { Allow: true } });
    const r = await docker(d, ['volume', 'ls']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, new RegExp(`plugin ${NAME} failed with error: AuthZPlugin.AuthZReq: policy store down`));
  });

  test('a reload naming a plugin that cannot be found is refused; the chain stays as it was', async () => {
    writeFileSync(d.configFile, JSON.stringify({ 'authorization-plugins': [NAME, 'ghost'] }));
    const refused = /failed to validate authorization plugin: could not find plugin ghost in v1 plugin registry: plugin not found/;
    for (let i = 0; i < 100 && !refused.test(d.logs()); i++) await sleep(100);
    assert.match(d.logs(), refused);
    seen = [];
    assert.equal((await docker(d, ['version'])).code, 0);
    assert.ok(seen.some((s) => s.path === '/AuthZPlugin.AuthZReq'), 'the plugin is still asked');
    // Taking the plugin out applies: requests are no longer shown to it.
    writeFileSync(d.configFile, JSON.stringify({ 'authorization-plugins': [] }));
    let calls = 1;
    for (let i = 0; i < 100 && calls > 0; i++) {
      await sleep(100);
      seen = [];
      await docker(d, ['version']);
      calls = seen.length;
    }
    assert.equal(calls, 0, 'no plugin is asked once the reload removed it');
  });

  test('a plugin that cannot be found at start: the daemon does not start and says why', async () => {
    const root = mkdtempSync('/tmp/engine-authz-start-');
    try {
      const args = ['-H', `unix://${join(root, 'e.sock')}`, '--data-root', join(root, 'data'), '--exec-root', join(root, 'exec'), '-p', join(root, 'e.pid'), '--bridge', 'none', '--config-file', join(root, 'none.json')];
      writeFileSync(join(root, 'none.json'), '{}');
      const r = await promisify(execFile)(ENGINED, [...args, '--authorization-plugin', 'missing-plugin'], { timeout: 60_000, env: { ...process.env, ...env } }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code?: number; stderr?: string }) => ({ code: e.code ?? -1, stderr: e.stderr ?? '' }),
      );
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /failed to validate authorization plugin: could not find plugin missing-plugin in v1 plugin registry: plugin not found/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
