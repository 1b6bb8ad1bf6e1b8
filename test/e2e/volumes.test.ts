// Volumes through real clients: `docker volume` create/inspect/ls/rm/prune, named volumes
// shared between containers, anonymous volumes (`-v /path`, image VOLUME with copy-up),
// --volumes-from, read-only mounts, `rm -v`, and the data surviving a daemon restart.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, dockerode, pythonDocker, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';

describe('volumes', () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  let imgs: TestImages;
  let img: string;
  const hostDir = mkdtempSync(join(tmpdir(), 'engine-vol-bind-'));

  before(async () => {
    d = await startDaemon();
    imgs = await testImages();
    await dk('load', '-i', imgs.dockerArchive);
    img = imgs.tag;
  });
  after(async () => {
    try {
      const ctrs = (await docker(d, ['ps', '-aq'])).stdout.trim().split('\n').filter(Boolean);
      if (ctrs.length) await docker(d, ['rm', '-f', '-v', ...ctrs]);
    } finally {
      await d?.cleanup();
      rmSync(hostDir, { recursive: true, force: true });
    }
  });

  test('volume create, inspect, ls with filters, a second create answers the same volume, rm', async () => {
    assert.equal(await dk('volume', 'create', '--label', 'team=a', 'v1'), 'v1');
    assert.equal(await dk('volume', 'create', 'v1'), 'v1');
    const v = JSON.parse(await dk('volume', 'inspect', 'v1'))[0];
    assert.equal(v.Name, 'v1');
    assert.equal(v.Driver, 'local');
    assert.equal(v.Scope, 'local');
    assert.deepEqual(v.Labels, { team: 'a' });
    assert.match(v.Mountpoint, /\/volumes\/v1\/_data$/);
    assert.ok(existsSync(v.Mountpoint), 'the data directory exists');
    assert.match(v.CreatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok((await dk('volume', 'ls', '-q')).split('\n').includes('v1'));
    assert.equal(await dk('volume', 'ls', '-q', '--filter', 'label=team=a'), 'v1');
    assert.equal(await dk('volume', 'ls', '-q', '--filter', 'label=team=b'), '');
    assert.equal(await dk('volume', 'ls', '-q', '--filter', 'name=^v1$'), 'v1');
    assert.equal(await dk('volume', 'ls', '-q', '--filter', 'dangling=true', '--filter', 'name=^v1$'), 'v1');
    const anon = await dk('volume', 'create');
    assert.match(anon, /^[0-9a-f]{64}$/);
    assert.equal(await dk('volume', 'rm', 'v1', anon), `v1\n${anon}`);
    assert.ok(!existsSync(v.Mountpoint), 'the data is gone');
    const gone = await docker(d, ['volume', 'inspect', 'v1']);
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /no such volume/);
    assert.equal((await docker(d, ['volume', 'rm', '-f', 'v1'])).code, 0, 'rm -f of a missing volume is not an error');
  });

  test('bad input: a bad name, an unknown driver, an unknown option answer errors and create nothing', async () => {
    const bad = await docker(d, ['volume', 'create', 'a/b']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /includes invalid characters for a local volume name/);
    const drv = await docker(d, ['volume', 'create', '-d', 'nosuch', 'v2']);
    assert.notEqual(drv.code, 0);
    assert.match(drv.stderr, /plugin "nosuch" not found/);
    const opt = await docker(d, ['volume', 'create', '-o', 'foo=bar', 'v3']);
    assert.notEqual(opt.code, 0);
    assert.match(opt.stderr, /foo/);
    assert.equal(await dk('volume', 'ls', '-q', '--filter', 'name=^v[23]$'), '');
  });

  test('a named volume is created on first use; data written by one container is read by the next', async () => {
    await dk('run', '--rm', '-v', 'shared:/data', img, 'sh', '-c', 'echo hello > /data/greeting');
    assert.equal(await dk('run', '--rm', '-v', 'shared:/srv:ro', img, 'cat', '/srv/greeting'), 'hello');
    const ro = await docker(d, ['run', '--rm', '-v', 'shared:/srv:ro', img, 'sh', '-c', 'echo x > /srv/other']);
    assert.notEqual(ro.code, 0, 'a read-only volume refuses writes');
    assert.match(ro.stderr + ro.stdout, /Read-only file system/);
    // --mount type=volume is the same volume.
    assert.equal(await dk('run', '--rm', '--mount', 'type=volume,source=shared,target=/m', img, 'cat', '/m/greeting'), 'hello');
  });

  test('a volume in use is refused removal (409) and prune leaves it; inspect and ps show the mounts', async () => {
    const id = await dk('create', '--name', 'holder', '-v', 'held:/data', '-v', `${hostDir}:/host:ro`, img, 'true');
    const rm = await docker(d, ['volume', 'rm', 'held']);
    assert.notEqual(rm.code, 0);
    assert.match(rm.stderr, new RegExp(`volume is in use - \\[${id}\\]`));
    assert.equal(await dk('volume', 'ls', '-q', '--filter', 'dangling=false', '--filter', 'name=^held$'), 'held');
    const mounts = JSON.parse(await dk('inspect', '-f', '{{json .Mounts}}', 'holder')) as Array<Record<string, unknown>>;
    const vol = mounts.find((m) => m.Type === 'volume')!;
    assert.equal(vol.Name, 'held');
    assert.equal(vol.Destination, '/data');
    assert.equal(vol.Driver, 'local');
    assert.equal(vol.RW, true);
    const bind = mounts.find((m) => m.Type === 'bind')!;
    assert.equal(bind.Source, hostDir);
    assert.equal(bind.RW, false);
    assert.equal(await dk('ps', '-a', '--filter', 'volume=held', '--format', '{{.Names}}'), 'holder');
    assert.match(await dk('ps', '-a', '--filter', 'name=holder', '--format', '{{.Mounts}}'), /held/);
    await dk('volume', 'prune', '-a', '-f');
    assert.equal(await dk('volume', 'ls', '-q', '--filter', 'name=^held$'), 'held');
    await dk('rm', 'holder');
    assert.equal(await dk('volume', 'rm', 'held'), 'held');
  });

  test('anonymous volumes: -v /path, image VOLUME with the image content copied up, nocopy, rm -v', async () => {
    // An image with content at its VOLUME path.
    await dk('run', '--name', 'seed', img, 'sh', '-c', 'mkdir -p /data && echo from-image > /data/file && chmod 0750 /data');
    await dk('commit', '-c', 'VOLUME /data', 'seed', 'engine-test/withvol:1');
    await dk('rm', 'seed');
    const c = await dk('create', '--name', 'anon', '-v', '/scratch', 'engine-test/withvol:1', 'sh', '-c', 'cat /data/file; stat -c %a /data; ls /scratch | wc -l');
    const mounts = JSON.parse(await dk('inspect', '-f', '{{json .Mounts}}', c)) as Array<{ Name: string; Destination: string; Type: string }>;
    assert.deepEqual(mounts.map((m) => m.Destination).sort(), ['/data', '/scratch']);
    for (const m of mounts) assert.match(m.Name, /^[0-9a-f]{64}$/);
    await dk('start', c);
    await dk('wait', c);
    assert.equal(await dk('logs', c), 'from-image\n750\n0');
    const names = mounts.map((m) => m.Name);
    const labels = await dk('volume', 'inspect', '-f', '{{json .Labels}}', names[0]!);
    assert.match(labels, /com\.docker\.volume\.anonymous/);
    // nocopy: the volume stays empty.
    assert.equal(await dk('run', '--rm', '-v', 'fresh:/data:nocopy', 'engine-test/withvol:1', 'ls', '/data'), '');
    await dk('volume', 'rm', 'fresh');
    // rm -v takes the container's anonymous volumes with it.
    await dk('rm', '-v', c);
    await waitGone(names);
  });

  test('--volumes-from shares the volumes (and binds) of another container, :ro makes them read-only', async () => {
    await dk('create', '--name', 'src', '-v', 'fromvol:/data', '-v', `${hostDir}:/host`, img, 'true');
    await dk('run', '--rm', '-v', 'fromvol:/w', img, 'sh', '-c', 'echo shared > /w/f');
    assert.equal(await dk('run', '--rm', '--volumes-from', 'src', img, 'sh', '-c', 'cat /data/f; echo b > /host/b; cat /host/b'), 'shared\nb');
    const ro = await docker(d, ['run', '--rm', '--volumes-from', 'src:ro', img, 'sh', '-c', 'echo x > /data/x']);
    assert.notEqual(ro.code, 0);
    await dk('rm', 'src');
    await dk('volume', 'rm', 'fromvol');
  });

  test('--tmpfs and a read-only bind refuse what they should', async () => {
    assert.match(await dk('run', '--rm', '--tmpfs', '/t:size=1m', img, 'sh', '-c', 'grep " /t " /proc/mounts'), /tmpfs \/t tmpfs/);
    const ro = await docker(d, ['run', '--rm', '-v', `${hostDir}:/h:ro`, img, 'touch', '/h/x']);
    assert.notEqual(ro.code, 0);
    assert.match(ro.stderr + ro.stdout, /Read-only file system/);
  });

  test('prune: anonymous unused volumes only, all=true for named ones too (docker-py, API 1.42+)', async () => {
    await dk('volume', 'create', 'named-unused');
    const anonC = await dk('create', '-v', '/x', img, 'true');
    const anonName = (await dk('inspect', '-f', '{{range .Mounts}}{{.Name}}{{end}}', anonC));
    await dk('rm', anonC); // without -v: the anonymous volume stays, dangling
    const out = await pythonDocker(d, `
      r = client.volumes.prune()
      print(sorted(r['VolumesDeleted'] or []))
      r = client.volumes.prune(filters={'all': 'true'})
      print('named-unused' in (r['VolumesDeleted'] or []))
    `);
    const [first, second] = out.trim().split('\n');
    assert.ok(first!.includes(anonName), `the anonymous volume was pruned: ${first}`);
    assert.ok(!first!.includes('named-unused'), 'a named volume is kept without all');
    assert.equal(second, 'True');
  });

  test('dockerode: create, inspect, list, remove', async () => {
    const api = dockerode(d);
    await api.createVolume({ Name: 'dockerode-v', Labels: { k: 'v' } });
    const info = await api.getVolume('dockerode-v').inspect();
    assert.deepEqual(info.Labels, { k: 'v' });
    const list = await api.listVolumes({ filters: JSON.stringify({ label: ['k=v'] }) });
    assert.deepEqual(list.Volumes.map((x) => x.Name), ['dockerode-v']);
    await api.getVolume('dockerode-v').remove();
    await assert.rejects(api.getVolume('dockerode-v').inspect(), (err: { statusCode?: number }) => err.statusCode === 404);
  });

  test('data in a volume survives a daemon restart', async () => {
    await dk('run', '--rm', '-v', 'durable:/d', img, 'sh', '-c', 'echo kept > /d/f');
    await d.restart();
    assert.equal(await dk('volume', 'ls', '-q', '--filter', 'name=^durable$'), 'durable');
    assert.equal(await dk('run', '--rm', '-v', 'durable:/d', img, 'cat', '/d/f'), 'kept');
    await dk('volume', 'rm', 'durable');
  });

  async function waitGone(names: string[]): Promise<void> {
    for (let i = 0; i < 50; i++) {
      const left = (await dk('volume', 'ls', '-q')).split('\n').filter((n) => names.includes(n));
      if (left.length === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail(`volumes still listed: ${names.join(', ')}`);
  }
});
