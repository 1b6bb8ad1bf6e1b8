// --userns-remap (issue (13 of 21), 1-2): containers run in a user namespace whose root is the
// first id of the remap user's range on the host; layers are unpacked owned by the host ids of
// their container ids (the reference's per-remap tree, <data-root>/<uid>.<gid>) and diffed back
// to container ids; --userns=host opts out; what needs the host's namespaces is refused.
// `default` creates the user engine-remap and its ranges: the test removes what it added.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, dockerOk, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

const USER = 'engine-remap';

function userExists(): boolean {
  try {
    execFileSync('getent', ['passwd', USER]);
    return true;
  } catch {
    return false;
  }
}

/** The first host id of `name`'s range in an /etc/sub[ug]id file. */
function rangeStart(file: string, name: string): number {
  const line = readFileSync(file, 'utf8').split('\n').find((l) => l.startsWith(`${name}:`));
  assert.ok(line, `${name} has a range in ${file}`);
  return Number(line.split(':')[1]);
}

/** The host uid (real) of a process, from /proc. */
function hostUidOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('Uid:'))!;
  return Number(line.split(/\s+/)[1]);
}

describe('--userns-remap default', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  let base = 0;
  let dir: string;
  // What the test found, to leave the host as it was.
  const hadUser = userExists();
  const etc = Object.fromEntries(['/etc/subuid', '/etc/subgid'].map((f) => [f, (() => {
    try {
      return readFileSync(f, 'utf8');
    } catch {
      return undefined;
    }
  })()]));
  const dk = dockerOk(() => d);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engine-userns-'));
    ({ d, imgs } = await startWithImages({ args: ['--userns-remap', 'default'] }));
    base = rangeStart('/etc/subuid', USER);
    assert.equal(rangeStart('/etc/subgid', USER), base, 'the same range for groups on a fresh user');
  });
  after(async () => {
    await removeAllAndCleanup(d);
    rmSync(dir, { recursive: true, force: true });
    if (!hadUser && userExists()) {
      execFileSync('userdel', [USER]);
      try {
        execFileSync('groupdel', [USER], { stdio: 'ignore' });
      } catch {
        // removed with the user
      }
    }
    for (const [f, text] of Object.entries(etc)) {
      if (text === undefined) rmSync(f, { force: true });
      else writeFileSync(f, text);
    }
  });

  test('the user, its ranges and the per-remap tree; docker info says userns', async () => {
    assert.ok(userExists());
    const info = (await apiRequest(d, 'GET', '/info')).body as { DockerRootDir: string; SecurityOptions: string[] };
    assert.equal(info.DockerRootDir, join(d.dataRoot, `${base}.${base}`));
    assert.ok(info.SecurityOptions.includes('name=userns'), JSON.stringify(info.SecurityOptions));
    const st = statSync(info.DockerRootDir);
    assert.equal(st.uid, 0);
    assert.equal(st.gid, base);
    assert.equal(st.mode & 0o777, 0o710);
  });

  test('a container runs as the range\'s first id: uid_map inside, the owner on the host; exec too; image files are root\'s inside', async () => {
    await dk('run', '-d', '--name', 'u1', imgs.tag, 'sleep', '300');
    assert.equal((await dk('exec', 'u1', 'cat', '/proc/self/uid_map')).trim().split(/\s+/).join(' '), `0 ${base} 65536`);
    assert.equal((await dk('exec', 'u1', 'cat', '/proc/self/gid_map')).trim().split(/\s+/).join(' '), `0 ${base} 65536`);
    assert.equal((await dk('exec', 'u1', 'id', '-u')).trim(), '0');
    const pid = Number((await dk('inspect', '-f', '{{.State.Pid}}', 'u1')).trim());
    assert.equal(hostUidOf(pid), base, 'the container\'s root is the range\'s first id on the host');
    // Files of the image and the daemon's /etc files are root's inside.
    assert.equal((await dk('exec', 'u1', 'stat', '-c', '%u:%g', '/bin/busybox', '/etc/hosts', '/')).trim().split('\n').join(' '), '0:0 0:0 0:0');
    // The container's root may write where root may.
    await dk('exec', 'u1', 'sh', '-c', 'echo written > /root-file && echo 127.0.0.9 extra >> /etc/hosts');
    assert.equal((await dk('exec', 'u1', 'cat', '/root-file')).trim(), 'written');
  });

  test('volumes: a named volume is written by the container\'s root and owned by its host id', async () => {
    await dk('run', '--rm', '-v', 'uv:/data', imgs.tag, 'sh', '-c', 'echo v > /data/f && stat -c %u /data/f');
    const mount = (await dk('volume', 'inspect', '-f', '{{.Mountpoint}}', 'uv')).trim();
    assert.equal(statSync(join(mount, 'f')).uid, base);
    assert.equal(statSync(mount).uid, base);
  });

  test('--userns=host opts out; privileged, host network and host pid need it (the reference\'s words)', async () => {
    const map = (await dk('run', '--rm', '--userns=host', imgs.tag, 'cat', '/proc/self/uid_map')).trim().split(/\s+/).join(' ');
    assert.equal(map, '0 0 4294967295');
    const refused = async (args: string[], words: string) => {
      const r = await docker(d, ['create', ...args, imgs.tag, 'true']);
      assert.notEqual(r.code, 0);
      assert.ok(r.stderr.includes(words), r.stderr);
    };
    await refused(['--privileged'], 'privileged mode is incompatible with user namespaces.  You must run the container in the host namespace when running privileged mode');
    await refused(['--network', 'host'], "cannot share the host's network namespace when user namespaces are enabled");
    await refused(['--pid', 'host'], 'cannot share the host PID namespace when user namespaces are enabled');
    await dk('create', '--name', 'priv', '--privileged', '--userns=host', imgs.tag, 'true');
  });

  test('commit and save carry the container\'s ids, not the host\'s', async () => {
    await dk('run', '--name', 'c1', imgs.tag, 'sh', '-c', 'echo c > /made && chown 1000:1000 /made');
    await dk('commit', 'c1', 'remapped:committed');
    assert.equal((await dk('run', '--rm', 'remapped:committed', 'stat', '-c', '%u:%g', '/made')).trim(), '1000:1000');
    const tar = join(dir, 'committed.tar');
    await dk('save', '-o', tar, 'remapped:committed');
    // The committed layer, as a tar in the archive: its /made is 1000:1000, never base+1000.
    const manifest = JSON.parse(execFileSync('tar', ['-xOf', tar, 'manifest.json'], { encoding: 'utf8' })) as Array<{ Layers: string[] }>;
    const top = manifest[0]!.Layers.at(-1)!;
    const listing = execFileSync('sh', ['-c', `tar -xOf ${tar} ${top} | tar -tvn --numeric-owner -f -`], { encoding: 'utf8' });
    assert.match(listing, /1000\/1000 .* made$/m, listing);
  });

  test('a user-defined network: the netns the daemon made is joined from the user namespace', async () => {
    await dk('network', 'create', '--subnet', '10.213.7.0/24', 'unet');
    await dk('run', '-d', '--name', 'srv', '--network', 'unet', imgs.tag, 'sh', '-c', 'echo pong | nc -l -p 7000');
    const out = await dk('run', '--rm', '--network', 'unet', imgs.tag, 'sh', '-c', 'ls /sys/class/net && for i in 1 2 3 4 5 6 7 8 9 10; do nc srv 7000 </dev/null && break; sleep 0.3; done');
    assert.match(out, /eth0/);
    assert.match(out, /pong/);
  });

  test('docker cp in and out keeps the container\'s ids', async () => {
    await dk('run', '-d', '--name', 'cp1', imgs.tag, 'sh', '-c', 'echo o > /out && chown 1000:1000 /out && sleep 300');
    for (let i = 0; i < 50 && (await docker(d, ['exec', 'cp1', 'test', '-e', '/out'])).code !== 0; i++) await new Promise((r) => setTimeout(r, 100));
    const listing = execFileSync('sh', ['-c', `docker -H ${d.dockerHost} cp cp1:/out - | tar -tvn --numeric-owner -f -`], { encoding: 'utf8' });
    assert.match(listing, /1000\/1000 .* out$/m, listing);
    writeFileSync(join(dir, 'in'), 'i\n');
    await dk('cp', join(dir, 'in'), 'cp1:/in');
    // Copied in as root's (without -a), as the container sees it.
    assert.equal((await dk('exec', 'cp1', 'stat', '-c', '%u:%g', '/in')).trim(), '0:0');
    await dk('cp', '-a', join(dir, 'in'), 'cp1:/in-a');
    assert.equal((await dk('exec', 'cp1', 'stat', '-c', '%u:%g', '/in-a')).trim(), `${process.getuid!()}:${process.getgid!()}`);
  });

  test('docker build: RUN runs in the user namespace, COPY gives root\'s files', async () => {
    const ctx = join(dir, 'ctx');
    execFileSync('mkdir', ['-p', ctx]);
    writeFileSync(join(ctx, 'f'), 'copied\n');
    writeFileSync(join(ctx, 'Dockerfile'), `FROM ${imgs.tag}\nCOPY f /f\nRUN cat /proc/self/uid_map > /map && stat -c %u:%g /f > /owner && chown 7:7 /f\n`);
    await dk('build', '-q', '-t', 'remapped:built', ctx);
    assert.equal((await dk('run', '--rm', 'remapped:built', 'cat', '/owner')).trim(), '0:0');
    assert.equal((await dk('run', '--rm', 'remapped:built', 'cat', '/map')).trim().split(/\s+/).join(' '), `0 ${base} 65536`);
    assert.equal((await dk('run', '--rm', 'remapped:built', 'stat', '-c', '%u:%g', '/f')).trim(), '7:7');
  });
});
