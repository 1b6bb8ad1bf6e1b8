// `docker cp` sees a container's file tree as its process does: the daemon's /etc/hostname (and
// hosts, resolv.conf), bind mounts, named and anonymous volumes, also before the first start;
// a read-only bind or rootfs refuses files in the reference's words; symlinks resolve inside the
// container, never on the host.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, pythonDocker, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

describe('docker cp through the mount table', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  let dir: string;
  const dk = dockerOk(() => d);
  before(async () => {
    ({ d, imgs } = await startWithImages());
    dir = mkdtempSync(join(tmpdir(), 'engine-cp-mounts-'));
  });
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await removeAllAndCleanup(d);
  });

  const out = (...p: string[]) => join(dir, ...p);

  test('cp out of /etc/hostname and /etc gives the daemon-written files (running and never started); the stat header describes them', async () => {
    await dk('run', '-d', '--name', 'web', '--hostname', 'webhost', imgs.tag, 'sleep', '300');
    await dk('cp', 'web:/etc/hostname', out('hostname-web'));
    assert.equal(readFileSync(out('hostname-web'), 'utf8'), 'webhost\n');
    mkdirSync(out('etc-web'));
    await dk('cp', 'web:/etc', out('etc-web'));
    assert.equal(readFileSync(out('etc-web', 'etc', 'hostname'), 'utf8'), 'webhost\n');
    // The same bytes the process reads.
    for (const f of ['hosts', 'resolv.conf']) {
      const seen = (await docker(d, ['exec', 'web', 'cat', `/etc/${f}`])).stdout;
      assert.ok(seen.length > 0);
      assert.equal(readFileSync(out('etc-web', 'etc', f), 'utf8'), seen, f);
    }
    await dk('create', '--name', 'made', '--hostname', 'madehost', imgs.tag, 'true');
    await dk('cp', 'made:/etc/hostname', out('hostname-made'));
    assert.equal(readFileSync(out('hostname-made'), 'utf8'), 'madehost\n');
    // HEAD/GET's X-Docker-Container-Path-Stat, as docker-py reads it.
    const py = await pythonDocker(d, `
      bits, stat = api.get_archive('web', '/etc/hostname')
      b''.join(bits)
      print(json.dumps(stat))
    `);
    const stat = JSON.parse(py.trim().split('\n').pop()!) as { name: string; size: number; mode: number };
    assert.equal(stat.name, 'hostname');
    assert.equal(stat.size, 'webhost\n'.length);
    assert.equal(stat.mode & 0o777, 0o644);
  });

  test('cp out of a bind mount file and a named volume file (a stopped container too)', async () => {
    const host = out('bind-src');
    mkdirSync(host);
    writeFileSync(join(host, 'file.txt'), 'from-the-host\n');
    await dk('run', '-d', '--name', 'binder', '-v', `${host}:/mnt/bind`, imgs.tag, 'sleep', '300');
    await dk('cp', 'binder:/mnt/bind/file.txt', out('bind-file.txt'));
    assert.equal(readFileSync(out('bind-file.txt'), 'utf8'), 'from-the-host\n');
    await dk('volume', 'create', 'cpvol');
    await dk('run', '--name', 'voluser', '-v', 'cpvol:/data', imgs.tag, 'sh', '-c', 'echo in-the-volume > /data/f.txt');
    await dk('cp', 'voluser:/data/f.txt', out('vol-file.txt'));
    assert.equal(readFileSync(out('vol-file.txt'), 'utf8'), 'in-the-volume\n');
    // Into them as well: the running process sees the file where it was put.
    writeFileSync(out('to-bind.txt'), 'put-in-bind\n');
    await dk('cp', out('to-bind.txt'), 'binder:/mnt/bind/');
    assert.equal(readFileSync(join(host, 'to-bind.txt'), 'utf8'), 'put-in-bind\n');
    assert.equal(await dk('exec', 'binder', 'cat', '/mnt/bind/to-bind.txt'), 'put-in-bind');
  });

  test('cp into the volumes of a created, never started container: the process finds the files', async () => {
    await dk('create', '--name', 'fresh', '-v', 'freshvol:/data', '-v', '/anon', imgs.tag, 'sh', '-c', 'cat /data/note.txt /anon/note.txt');
    writeFileSync(out('note.txt'), 'copied-before-start\n');
    await dk('cp', out('note.txt'), 'fresh:/data/note.txt');
    await dk('cp', out('note.txt'), 'fresh:/anon/');
    const r = await docker(d, ['start', '-a', 'fresh']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'copied-before-start\ncopied-before-start\n');
  });

  test('cp into a read-only bind or a --read-only container is refused in the reference words; a writable volume of one takes files', async () => {
    const host = out('ro-src');
    mkdirSync(host);
    writeFileSync(out('x.txt'), 'x\n');
    await dk('create', '--name', 'robind', '-v', `${host}:/ro:ro`, imgs.tag, 'true');
    const ro = await docker(d, ['cp', out('x.txt'), 'robind:/ro/']);
    assert.notEqual(ro.code, 0);
    assert.match(ro.stderr, /mounted volume is marked read-only/);
    assert.deepEqual(readdirSync(host), []);
    await dk('run', '-d', '--name', 'rofs', '--read-only', '-v', '/scratch', imgs.tag, 'sleep', '300');
    const rootfs = await docker(d, ['cp', out('x.txt'), 'rofs:/tmp/']);
    assert.notEqual(rootfs.code, 0);
    assert.match(rootfs.stderr, /container rootfs is marked read-only/);
    // 403, as the API documents it (Permission denied, the volume or container rootfs is marked as read-only).
    const status = await pythonDocker(d, `
      import io, tarfile
      buf = io.BytesIO()
      with tarfile.open(fileobj=buf, mode='w') as t:
          info = tarfile.TarInfo('y.txt'); info.size = 1; t.addfile(info, io.BytesIO(b'y'))
      for c, p in (('rofs', '/tmp'), ('robind', '/ro')):
          try:
              api.put_archive(c, p, buf.getvalue())
              print('accepted')
          except docker.errors.APIError as e:
              print(e.status_code, e.explanation)
    `);
    assert.deepEqual(status.trim().split('\n').slice(-2), ['403 container rootfs is marked read-only', '403 mounted volume is marked read-only']);
    await dk('cp', out('x.txt'), 'rofs:/scratch/');
    assert.equal(await dk('exec', 'rofs', 'cat', '/scratch/x.txt'), 'x');
  });

  test('a symlink to an absolute path resolves inside the container, never on the host', async () => {
    const host = out('link-src');
    mkdirSync(host);
    await dk('run', '-d', '--name', 'linker', '--hostname', 'linkhost', '-v', `${host}:/mnt/bind`, '-v', 'linkvol:/data', imgs.tag, 'sleep', '300');
    await dk('exec', 'linker', 'sh', '-c', 'ln -s /etc/hostname /data/name-link && ln -s /etc /mnt/bind/etc-link && mkdir /inside && ln -s /inside /data/dir-link');
    assert.equal(readlinkSync(join(host, 'etc-link')), '/etc', 'the link sits on the host, pointing at the host path name');
    // Out, following the link (-L): the container's /etc/hostname, not the host's.
    await dk('cp', '-L', 'linker:/data/name-link', out('followed'));
    assert.equal(readFileSync(out('followed'), 'utf8'), 'linkhost\n');
    await dk('cp', 'linker:/mnt/bind/etc-link/hostname', out('through-dir-link'));
    assert.equal(readFileSync(out('through-dir-link'), 'utf8'), 'linkhost\n');
    // Without -L the link itself comes out.
    await dk('cp', 'linker:/data/name-link', out('the-link'));
    assert.equal(readlinkSync(out('the-link')), '/etc/hostname');
    // In, through a link in the volume to a container directory: the file lands in the container.
    writeFileSync(out('via-link.txt'), 'through-the-link\n');
    await dk('cp', out('via-link.txt'), 'linker:/data/dir-link/');
    assert.equal(await dk('exec', 'linker', 'cat', '/inside/via-link.txt'), 'through-the-link');
  });
});
