// The daemon starts on private roots, answers /_ping and the docker CLI, and a SIGTERM shuts it
// down cleanly: exit code 0, socket and pidfile removed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker } from './harness/clients.ts';

function get(socket: string, path: string): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path, method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('smoke', () => {
  let d: DaemonHandle;
  before(async () => {
    d = await startDaemon();
  });
  after(async () => {
    await d?.cleanup();
  });

  test('GET /_ping answers OK with the API version header', async () => {
    const r = await get(d.socket, '/_ping');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'OK');
    assert.ok(r.headers['api-version'], 'Api-Version header');
  });

  test('the pidfile holds the daemon pid', () => {
    assert.equal(Number(readFileSync(d.pidfile, 'utf8').trim()), d.pid);
  });

  test('docker version talks to the daemon', async () => {
    const r = await docker(d, ['version']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Server:/);
  });

  test('SIGTERM: exit code 0, socket and pidfile removed', async () => {
    const code = await d.stop({ signal: 'SIGTERM', timeoutMs: 60_000 });
    assert.equal(code, 0, d.logs().split('\n').slice(-40).join('\n'));
    assert.equal(existsSync(d.socket), false, 'socket removed');
    assert.equal(existsSync(d.pidfile), false, 'pidfile removed');
  });
});
