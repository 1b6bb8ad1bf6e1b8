// The spec's typical flow (create → start → wait → logs) with curl, plus the error shapes clients
// depend on, against a real daemon, containerd and runc.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker, testImages } from './harness/clients.ts';

const run = promisify(execFile);

async function curl(d: DaemonHandle, method: string, path: string, body?: unknown): Promise<{ status: number; body: string }> {
  const args = ['-sS', '--unix-socket', d.socket, '-X', method, '-o', '-', '-w', '\n%{http_code}', `http://localhost${path}`];
  if (body !== undefined) args.push('-H', 'Content-Type: application/json', '-d', JSON.stringify(body));
  const { stdout } = await run('curl', args, { maxBuffer: 64 << 20 });
  const i = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(i + 1)), body: stdout.slice(0, i) };
}

describe('core flow with curl', () => {
  let d: DaemonHandle;
  let image: string;
  before(async () => {
    d = await startDaemon();
    const imgs = await testImages();
    const r = await docker(d, ['load', '-i', imgs.dockerArchive]);
    assert.equal(r.code, 0, r.stderr);
    image = imgs.tag;
  });
  after(async () => {
    await d?.cleanup();
  });

  test('create, start, wait, logs', async () => {
    const c = await curl(d, 'POST', '/v1.47/containers/create', { Image: image, Cmd: ['echo', 'hello world'], HostConfig: { NetworkMode: 'none' } });
    assert.equal(c.status, 201, c.body);
    const { Id, Warnings } = JSON.parse(c.body);
    assert.match(Id, /^[0-9a-f]{64}$/);
    assert.equal(Warnings, null);
    const s = await curl(d, 'POST', `/v1.47/containers/${Id}/start`);
    assert.equal(s.status, 204, s.body);
    const w = await curl(d, 'POST', `/v1.47/containers/${Id}/wait`);
    assert.equal(w.status, 200);
    assert.deepEqual(JSON.parse(w.body), { StatusCode: 0 });
    const l = await curl(d, 'GET', `/v1.47/containers/${Id}/logs?stdout=1`);
    assert.equal(l.status, 200);
    // multiplexed: 8-byte header, stream 1
    const buf = Buffer.from(l.body, 'latin1');
    assert.equal(buf[0], 1);
    assert.equal(buf.subarray(8).toString(), 'hello world\n');
    const del = await curl(d, 'DELETE', `/containers/${Id}`);
    assert.equal(del.status, 204);
  });

  test('errors: unknown image 404, bad JSON 400, unknown container 404, versions', async () => {
    const a = await curl(d, 'POST', '/v1.47/containers/create', { Image: 'nosuch:1', Cmd: ['true'] });
    assert.equal(a.status, 404);
    assert.deepEqual(JSON.parse(a.body), { message: 'No such image: nosuch:1' });
    const b = await run('curl', ['-sS', '--unix-socket', d.socket, '-X', 'POST', '-H', 'Content-Type: application/json', '-d', '{bad', '-w', '\n%{http_code}', 'http://x/containers/create']);
    assert.match(b.stdout, /400$/);
    const c = await curl(d, 'GET', '/containers/nosuch/json');
    assert.equal(c.status, 404);
    assert.deepEqual(JSON.parse(c.body), { message: 'No such container: nosuch' });
    const v = await curl(d, 'GET', '/v1.99/version');
    assert.equal(v.status, 400);
    const old = await curl(d, 'GET', '/v1.12/version');
    assert.equal(old.status, 400);
    const p = await curl(d, 'GET', '/v1.24/_ping');
    assert.equal(p.status, 200);
    assert.equal(p.body, 'OK');
    const nf = await curl(d, 'GET', '/v1.47/nope');
    assert.equal(nf.status, 404);
    assert.deepEqual(JSON.parse(nf.body), { message: 'page not found' });
  });

  test('start twice is 304, stop of stopped is 304, kill of stopped is 409, rm running is 409', async () => {
    const c = JSON.parse((await curl(d, 'POST', '/containers/create?name=sleeper', { Image: image, Cmd: ['sleep', '30'], HostConfig: { NetworkMode: 'none' } })).body);
    assert.equal((await curl(d, 'POST', `/containers/${c.Id}/start`)).status, 204);
    assert.equal((await curl(d, 'POST', '/containers/sleeper/start')).status, 304);
    const dup = await curl(d, 'POST', '/containers/create?name=sleeper', { Image: image, Cmd: ['true'] });
    assert.equal(dup.status, 409);
    const rm = await curl(d, 'DELETE', '/containers/sleeper');
    assert.equal(rm.status, 409);
    assert.match(JSON.parse(rm.body).message, /^You cannot remove a running container [0-9a-f]{64}\. Stop the container before attempting removal or force remove$/);
    const st = await curl(d, 'POST', '/containers/sleeper/stop?t=1');
    assert.equal(st.status, 204);
    const insp = JSON.parse((await curl(d, 'GET', '/containers/sleeper/json')).body);
    assert.equal(insp.State.Status, 'exited');
    assert.equal(insp.State.ExitCode, 137); // sleep as PID 1 ignores SIGTERM, as with the reference daemon
    assert.equal((await curl(d, 'POST', '/containers/sleeper/stop')).status, 304);
    assert.equal((await curl(d, 'POST', '/containers/sleeper/kill')).status, 409);
    assert.equal((await curl(d, 'DELETE', '/containers/sleeper')).status, 204);
    assert.equal((await curl(d, 'GET', '/containers/sleeper/json')).status, 404);
  });

  test('a command that does not exist: 400 with the runtime text, exit code 127', async () => {
    const c = JSON.parse((await curl(d, 'POST', '/containers/create', { Image: image, Cmd: ['/no/such/binary'], HostConfig: { NetworkMode: 'none' } })).body);
    const s = await curl(d, 'POST', `/containers/${c.Id}/start`);
    assert.equal(s.status, 400, s.body);
    assert.match(JSON.parse(s.body).message, /no such file or directory/);
    const insp = JSON.parse((await curl(d, 'GET', `/containers/${c.Id}/json`)).body);
    assert.equal(insp.State.ExitCode, 127);
    assert.equal((await curl(d, 'DELETE', `/containers/${c.Id}`)).status, 204);
  });

  test('garbage bodies never crash the daemon', async () => {
    const bodies: unknown[] = [null, [], 'x', 42, { Image: 5 }, { Image: image, Cmd: 'echo' }, { Image: image, Cmd: [1, 2] }, { Image: image, HostConfig: { RestartPolicy: { Name: 'sometimes' } } }, { Image: image, Env: ['=x'] }];
    for (const b of bodies) {
      const r = await curl(d, 'POST', '/containers/create', b);
      assert.ok(r.status === 400 || r.status === 404 || r.status === 201, `${JSON.stringify(b)} → ${r.status} ${r.body}`);
      if (r.status === 201) await curl(d, 'DELETE', `/containers/${JSON.parse(r.body).Id}?force=1`);
    }
    const bad = await curl(d, 'POST', '/containers/create?name=a', { Image: image, Cmd: ['true'] });
    assert.equal(bad.status, 400);
    assert.equal((await curl(d, 'GET', '/_ping')).status, 200);
  });
});
