// Volumes through real clients: `docker volume` create/inspect/ls/rm/prune, named volumes
// shared between containers, anonymous volumes (`-v /path`, image VOLUME with copy-up),
// --volumes-from, read-only mounts, `rm -v`, and the data surviving a daemon restart.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

  test('local driver options: a tmpfs volume lasts while in use, a bind volume shows the host directory', async () => {
    await dk('volume', 'create', '-o', 'type=tmpfs', '-o', 'device=tmpfs', '-o', 'o=size=1m', 'tv');
    const out = await dk('run', '--rm', '-v', 'tv:/t', img, 'sh', '-c', 'grep " /t " /proc/mounts; echo x > /t/f; cat /t/f');
    assert.match(out, /tmpfs \/t tmpfs/);
    assert.match(out, /size=1024k/);
    // Unmounted after the last run: the reference's tmpfs volumes keep nothing between runs.
    assert.equal(await dk('run', '--rm', '-v', 'tv:/t', img, 'ls', '/t'), '');
    await dk('volume', 'rm', 'tv');
    writeFileSync(join(hostDir, 'seen'), 'from-host');
    await dk('volume', 'create', '-o', 'type=none', '-o', 'o=bind', '-o', `device=${hostDir}`, 'bv');
    assert.equal(await dk('run', '--rm', '-v', 'bv:/b', img, 'cat', '/b/seen'), 'from-host');
    await dk('volume', 'rm', 'bv');
    assert.ok(existsSync(join(hostDir, 'seen')), 'removing a bind volume leaves the host directory alone');
    const bad = await docker(d, ['volume', 'create', '-o', 'type=tmpfs', 'nodevice']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /missing required option: "device"/);
  });

  test('system df shows volumes with their size and reference count; events tell create, mount, unmount, destroy', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    await dk('create', '--name', 'dfuser', '-v', 'dfvol:/d', img, 'sh', '-c', 'head -c 5000 /dev/zero > /d/blob');
    await dk('start', '-a', 'dfuser');
    const df = JSON.parse(await pythonDocker(d, `
      import json
      print(json.dumps([v for v in client.df()['Volumes'] if v['Name'] == 'dfvol']))
    `));
    assert.equal(df.length, 1);
    assert.equal(df[0].UsageData.RefCount, 1);
    assert.ok(df[0].UsageData.Size >= 5000, `size ${df[0].UsageData.Size}`);
    assert.match(await dk('system', 'df', '-v', '--format', '{{range .Volumes}}{{.Name}} {{end}}'), /dfvol/);
    await dk('rm', 'dfuser');
    await dk('volume', 'rm', 'dfvol');
    const until = Math.floor(Date.now() / 1000) + 1;
    const events = await dk('events', '--since', String(since), '--until', String(until), '--filter', 'type=volume', '--filter', 'volume=dfvol', '--format', '{{.Action}}');
    assert.deepEqual(events.split('\n'), ['create', 'mount', 'unmount', 'destroy']);
  });

  test('docker-py: the volume API as its integration tests use it, Mounts with labels and a subpath, VolumeDriver', async () => {
    const out = await pythonDocker(d, `
      import docker
      api = client.api
      info = api.create_volume('perfectcherryblossom')
      assert info['Name'] == 'perfectcherryblossom' and info['Driver'] == 'local'
      assert info in api.volumes()['Volumes']
      assert api.inspect_volume('perfectcherryblossom') == info
      api.remove_volume('perfectcherryblossom', force=True)
      for call in (lambda: api.inspect_volume('perfectcherryblossom'), lambda: api.remove_volume('perfectcherryblossom')):
          try:
              call(); raise SystemExit('expected NotFound')
          except docker.errors.NotFound:
              pass
      try:
          api.create_volume('x1', 'this-plugin-does-not-exist'); raise SystemExit('expected an error')
      except docker.errors.APIError as e:
          assert e.response.status_code in (400, 404), e.response.status_code
      v = api.create_volume()
      assert v['Name'] in api.prune_volumes()['VolumesDeleted']
      # Mounts of type volume with labels; a subpath inside a volume (API 1.45 in the reference).
      m = docker.types.Mount(type='volume', source='labelled', target='/mnt', labels={'com.dockerpy.test': 'true'})
      c = api.create_container('${img}', ['true'], host_config=api.create_host_config(mounts=[m]))
      mounts = [x for x in api.inspect_container(c)['Mounts'] if x['Destination'] == '/mnt']
      assert len(mounts) == 1 and mounts[0]['Name'] == 'labelled' and mounts[0]['RW'] is True, mounts
      assert api.inspect_volume('labelled')['Labels'] == {'com.dockerpy.test': 'true'}
      api.remove_container(c, v=True)
      api.create_volume('sub')
      s = api.create_container('${img}', ['sh', '-c', 'mkdir -p /vol/subdir && echo test content > /vol/subdir/testfile.txt'], host_config=api.create_host_config(binds=['sub:/vol']))
      api.start(s); api.wait(s)
      # docker-py 7.1's Mount has no subpath argument: the wire form.
      m = {'Type': 'volume', 'Source': 'sub', 'Target': '/mnt', 'ReadOnly': True, 'VolumeOptions': {'Subpath': 'subdir'}}
      t = api.create_container('${img}', ['cat', '/mnt/testfile.txt'], host_config=api.create_host_config(mounts=[m]))
      api.start(t); api.wait(t)
      print(api.logs(t).decode().strip())
      api.remove_container(s); api.remove_container(t)
      api.remove_volume('sub'); api.remove_volume('labelled')
      # A volume driver that is not there is no error while the container creates no volume.
      c = client.containers.create('${img}', 'true', volume_driver='foo')
      assert c.attrs['HostConfig']['VolumeDriver'] == 'foo'
      c.remove()
      print('ok')
    `.replaceAll('${img}', img));
    assert.equal(out.trim(), 'test content\nok');
  });

  test('docker-compose: a named volume shared by two services', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engine-compose-vol-'));
    const project = `vol${Math.random().toString(36).slice(2, 7)}`;
    try {
      writeFileSync(join(dir, 'docker-compose.yml'), [
        'version: "3.7"',
        'services:',
        '  writer:',
        `    image: ${img}`,
        // The writer outlives the reader: --exit-code-from aborts the project when any service exits.
        `    command: ["sh", "-c", "trap 'exit 0' TERM; echo written-by-writer > /data/msg; sleep 30 & wait"]`,
        '    volumes: ["shared:/data"]',
        '  reader:',
        `    image: ${img}`,
        '    command: ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do cat /in/msg 2>/dev/null && exit 0; sleep 0.3; done; exit 1"]',
        '    volumes: ["shared:/in:ro"]',
        '    depends_on: [writer]',
        'volumes:',
        '  shared: {}',
        '',
      ].join('\n'));
      const compose = (...args: string[]) => {
        try {
          const out = execFileSync('docker-compose', ['-p', project, ...args], { cwd: dir, encoding: 'utf8', env: { ...process.env, DOCKER_HOST: d.dockerHost }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
          return { code: 0, out };
        } catch (err) {
          const e = err as { status?: number; stdout?: string; stderr?: string };
          return { code: e.status ?? 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
        }
      };
      const up = compose('up', '--no-color', '--exit-code-from', 'reader');
      assert.equal(up.code, 0, up.out);
      assert.match(up.out, /written-by-writer/);
      assert.equal(await dk('volume', 'inspect', '-f', '{{index .Labels "com.docker.compose.project"}}', `${project}_shared`), project);
      const down = compose('down', '-v');
      assert.equal(down.code, 0, down.out);
      assert.notEqual((await docker(d, ['volume', 'inspect', `${project}_shared`])).code, 0, 'down -v removed the volume');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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
