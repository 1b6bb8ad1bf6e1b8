// Restarting the daemon converges; an acknowledged write survives kill -9.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker, testImages } from './harness/clients.ts';

describe('durability', () => {
  let d: DaemonHandle | undefined;
  after(async () => {
    await d?.cleanup();
  });

  test('graceful restart: containers and images remain, running ones are stopped and shown exited', async () => {
    d = await startDaemon();
    const imgs = await testImages();
    assert.equal((await docker(d, ['load', '-i', imgs.dockerArchive])).code, 0);
    const dk = async (...a: string[]) => {
      const r = await docker(d!, a);
      assert.equal(r.code, 0, `${a.join(' ')}: ${r.stderr}`);
      return r.stdout.trim();
    };
    await dk('create', '--network', 'none', '--name', 'done', imgs.tag, 'echo', 'finished');
    await dk('start', 'done');
    await dk('wait', 'done');
    await dk('create', '--network', 'none', '--name', 'long', imgs.tag, 'sleep', '300');
    await dk('start', 'long');
    await dk('create', '--network', 'none', '--name', 'fresh', imgs.tag, 'true');
    const code = await d.stop({ signal: 'SIGTERM', timeoutMs: 60_000 });
    assert.equal(code, 0, d.logs());
    await d.restart();
    const ps = await dk('ps', '-a', '--format', '{{.Names}}|{{.State}}|{{.Status}}');
    const rows = Object.fromEntries(ps.split('\n').map((l) => l.split('|')).map(([n, s, st]) => [n, { s, st }]));
    assert.equal(rows.done.s, 'exited');
    assert.equal(rows.long.s, 'exited');
    assert.equal(rows.fresh.s, 'created');
    assert.equal(await dk('logs', 'done'), 'finished');
    assert.match(await dk('images', '--format', '{{.Repository}}'), /engine-test\/busybox/);
    // the stopped container can start again after the restart
    await dk('start', 'done');
    assert.equal(await dk('wait', 'done'), '0');
    await dk('rm', '-f', 'done', 'long', 'fresh');
  });

  test('kill -9: acknowledged creates survive, a container left running is settled on restart', async () => {
    d ??= await startDaemon();
    const imgs = await testImages();
    assert.equal((await docker(d, ['load', '-i', imgs.dockerArchive])).code, 0);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await docker(d, ['create', '--network', 'none', '--name', `k${i}`, imgs.tag, 'sleep', '300']);
      assert.equal(r.code, 0, r.stderr);
      ids.push(r.stdout.trim());
    }
    assert.equal((await docker(d, ['start', 'k0'])).code, 0);
    await d.stop({ signal: 'SIGKILL' });
    await d.restart();
    const ps = await docker(d, ['ps', '-a', '--no-trunc', '--format', '{{.ID}} {{.State}}']);
    for (const id of ids) assert.match(ps.stdout, new RegExp(id));
    // Without live-restore the left-running container is stopped as dockerd does at boot: stop
    // signal, then SIGKILL after the stop timeout (sleep as PID 1 ignores SIGTERM: ~10 s).
    let state = '';
    for (let i = 0; i < 60 && state !== 'exited'; i++) {
      state = (await docker(d, ['inspect', '--format', '{{.State.Status}}', 'k0'])).stdout.trim();
      if (state !== 'exited') await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(state, 'exited');
    const rm = await docker(d, ['rm', '-f', ...ids]);
    assert.equal(rm.code, 0, rm.stderr);
  });

  test('a stored record that fails its schema is set aside: the daemon starts with the rest, docker info warns', async () => {
    d ??= await startDaemon();
    const imgs = await testImages();
    assert.equal((await docker(d, ['load', '-i', imgs.dockerArchive])).code, 0);
    const good = (await docker(d, ['create', '--network', 'none', '--name', 'good', imgs.tag, 'true'])).stdout.trim();
    const bad = (await docker(d, ['create', '--network', 'none', '--name', 'bad', imgs.tag, 'true'])).stdout.trim();
    assert.ok(good && bad);
    assert.equal(await d.stop({ signal: 'SIGTERM', timeoutMs: 60_000 }), 0);
    // What a bug in an older version, or a hand edit, could leave behind.
    const db = new DatabaseSync(join(d.dataRoot, 'engine.db'));
    db.prepare('UPDATE resources SET status = ? WHERE kind = ? AND name = ?').run('{"phase":7}', 'container', bad);
    db.close();
    await d.restart();
    const ps = await docker(d, ['ps', '-a', '--no-trunc', '--format', '{{.ID}}']);
    assert.equal(ps.code, 0, ps.stderr);
    assert.match(ps.stdout, new RegExp(good));
    assert.doesNotMatch(ps.stdout, new RegExp(bad));
    const info = await docker(d, ['info', '--format', '{{json .Warnings}}']);
    assert.match(info.stdout, new RegExp(`stored container ${bad} could not be read and was set aside: status\\.`));
    // Its name is free again; the daemon works as before.
    const again = await docker(d, ['run', '--rm', '--network', 'none', '--name', 'bad', imgs.tag, 'echo', 'ok']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout.trim(), 'ok');
    assert.equal((await docker(d, ['rm', '-f', 'good'])).code, 0);
  });
});
