// The stock docker CLI against engined: load, images, tag, create/start/wait/logs, ps, rm, import, rmi.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker, testImages } from './harness/clients.ts';

describe('docker CLI', () => {
  let d: DaemonHandle;
  let imgs: Awaited<ReturnType<typeof testImages>>;
  const dk = async (...args: string[]) => {
    const r = await docker(d, args);
    assert.equal(r.code, 0, `docker ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
  before(async () => {
    d = await startDaemon();
    imgs = await testImages();
  });
  after(async () => {
    await d?.cleanup();
  });

  test('version and info', async () => {
    const v = await dk('version', '--format', '{{.Server.APIVersion}}');
    assert.equal(v, '1.48');
    const info = JSON.parse(await dk('info', '--format', '{{json .}}'));
    // The driver of the run (hack/test.sh runs this file with the supervisor's snapshotter too).
    assert.equal(info.Driver, process.env.ENGINE_E2E_STORAGE === 'snapshotter' ? 'overlayfs' : 'overlay2');
    assert.equal(typeof info.NCPU, 'number');
  });

  test('load (docker-archive and OCI layout), images, tag, rmi', async () => {
    const out = await dk('load', '-i', imgs.dockerArchive);
    assert.match(out, /Loaded image: engine-test\/busybox:latest/);
    const ids = await dk('images', '--no-trunc', '--format', '{{.Repository}}:{{.Tag}} {{.ID}}');
    assert.match(ids, new RegExp(`engine-test/busybox:latest ${imgs.id}`));
    await dk('tag', 'engine-test/busybox', 'localhost:5000/team/bb:1.0');
    const inspect = JSON.parse(await dk('image', 'inspect', 'localhost:5000/team/bb:1.0'));
    assert.equal(inspect[0].Id, imgs.id);
    assert.deepEqual(inspect[0].RepoTags.sort(), ['engine-test/busybox:latest', 'localhost:5000/team/bb:1.0']);
    const rmi = await dk('rmi', 'localhost:5000/team/bb:1.0');
    assert.match(rmi, /Untagged: localhost:5000\/team\/bb:1.0/);
    const oci = await dk('load', '-i', imgs.ociArchive);
    assert.match(oci, /Loaded image/);
  });

  test('create, start, wait, logs, ps -a, rm with --network none', async () => {
    await dk('load', '-i', imgs.dockerArchive);
    const id = await dk('create', '--network', 'none', '--name', 'cli-one', imgs.tag, 'sh', '-c', 'echo out; echo err >&2; exit 3');
    assert.match(id, /^[0-9a-f]{64}$/);
    await dk('start', 'cli-one');
    assert.equal(await dk('wait', 'cli-one'), '3');
    const logs = await docker(d, ['logs', 'cli-one']);
    assert.equal(logs.stdout, 'out\n');
    assert.equal(logs.stderr, 'err\n');
    const ps = await dk('ps', '-a', '--format', '{{.Names}} {{.Status}}');
    assert.match(ps, /cli-one Exited \(3\)/);
    const psRunning = await dk('ps', '--format', '{{.Names}}');
    assert.doesNotMatch(psRunning, /cli-one/);
    // Two lines on two streams: their order in the log is the order the daemon read its pipes.
    const ts = await dk('logs', '-t', '--tail', '2', 'cli-one');
    assert.match(ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z out$/);
    await dk('rm', 'cli-one');
    const after = await dk('ps', '-a', '--format', '{{.Names}}');
    assert.doesNotMatch(after, /cli-one/);
  });

  test('rmi refuses an image a container uses; rm -f and then rmi works', async () => {
    await dk('load', '-i', imgs.dockerArchive);
    await dk('tag', imgs.tag, 'engine-test/second:1');
    await dk('create', '--network', 'none', '--name', 'user1', 'engine-test/second:1', 'true');
    const r = await docker(d, ['rmi', imgs.id]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /conflict: unable to delete/);
    await dk('rm', '-f', 'user1');
    await dk('rmi', 'engine-test/second:1');
  });

  test('import a rootfs with changes and run it', async () => {
    const out = await docker(d, ['import', '--change', 'CMD ["echo","imported"]', '--change', 'ENV FOO=bar', imgs.rootfsTar, 'engine-test/imported:v1']);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout.trim(), /^sha256:[0-9a-f]{64}$/);
    const cfg = JSON.parse(await dk('image', 'inspect', '--format', '{{json .Config}}', 'engine-test/imported:v1'));
    assert.deepEqual(cfg.Cmd, ['echo', 'imported']);
    assert.ok(cfg.Env.includes('FOO=bar'));
    const id = await dk('create', '--network', 'none', 'engine-test/imported:v1');
    await dk('start', id);
    assert.equal(await dk('wait', id), '0');
    assert.equal(await dk('logs', id), 'imported');
    await dk('rm', id);
    await dk('rmi', 'engine-test/imported:v1');
  });

  test('save then load round-trips the image id', async () => {
    await dk('load', '-i', imgs.dockerArchive);
    const file = `${d.dataRoot}/../saved.tar`;
    await dk('save', '-o', file, imgs.tag);
    await dk('rmi', imgs.tag);
    const out = await dk('load', '-i', file);
    assert.match(out, /Loaded image: engine-test\/busybox:latest/);
    assert.equal(await dk('image', 'inspect', '--format', '{{.Id}}', imgs.tag), imgs.id);
  });

  test('container prune removes stopped containers and reports the space their layers held', async () => {
    await dk('load', '-i', imgs.dockerArchive);
    await dk('run', '--name', 'fat', '--network', 'none', imgs.tag, 'sh', '-c', 'dd if=/dev/zero of=/blob bs=1024 count=2048 2>/dev/null');
    const out = await dk('container', 'prune', '-f');
    assert.match(out, /Total reclaimed space: 2\.\d+MB/);
    assert.equal(await dk('ps', '-aq', '--filter', 'name=fat'), '');
  });

  test('prune --filter until: a compound Go duration, a date; a bad value is refused in the reference\'s words', async () => {
    await dk('run', '--name', 'recent', '--network', 'none', imgs.tag, 'true');
    // Made just now: older than nothing "1h30m" back, so kept; an RFC 3339 date in the future takes it.
    await dk('container', 'prune', '-f', '--filter', 'until=1h30m');
    assert.notEqual(await dk('ps', '-aq', '--filter', 'name=recent'), '');
    const bad = await docker(d, ['container', 'prune', '-f', '--filter', 'until=yesterday']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /failed to parse value as time or duration: "yesterday"/);
    assert.notEqual(await dk('ps', '-aq', '--filter', 'name=recent'), '', 'a refused prune removes nothing');
    await dk('container', 'prune', '-f', '--filter', `until=${new Date(Date.now() + 3_600_000).toISOString().slice(0, 19)}Z`);
    assert.equal(await dk('ps', '-aq', '--filter', 'name=recent'), '');
    await dk('network', 'prune', '-f', '--filter', 'until=2h15m30s');
  });
});
