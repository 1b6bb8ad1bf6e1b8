// The rest of the image API with real clients: history, commit, save of several images, prune,
// system df and image events (docker CLI), and docker-py's prune, commit and history.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { DOCKER_CLI, docker, pythonDocker, testImages } from './harness/clients.ts';

describe('image API', () => {
  let d: DaemonHandle;
  let imgs: Awaited<ReturnType<typeof testImages>>;
  let since = 0;
  const dk = async (...args: string[]) => {
    const r = await docker(d, args);
    assert.equal(r.code, 0, `docker ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
  const imageIds = async () => (await dk('images', '-a', '-q', '--no-trunc')).split('\n').filter(Boolean);

  before(async () => {
    d = await startDaemon();
    imgs = await testImages();
    since = Math.floor(Date.now() / 1000) - 1;
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(async () => {
    await d?.cleanup();
  });

  test('docker history of a loaded image', async () => {
    const out = await dk('history', '--no-trunc', '--format', '{{.ID}}|{{.CreatedBy}}|{{.Size}}', imgs.tag);
    const lines = out.split('\n');
    assert.equal(lines.length, 1);
    const [id, createdBy, size] = lines[0].split('|');
    assert.equal(id, imgs.id);
    assert.match(createdBy, /busybox-static rootfs/);
    assert.notEqual(size, '0B');
  });

  test('docker commit with --change: the committed image runs the new CMD and has the file', async () => {
    await dk('run', '-d', '--name', 'commit-src', '--network', 'none', imgs.tag, 'sh', '-c', 'echo data > /committed.txt; sleep 300');
    for (let i = 0; i < 50; i++) {
      const r = await docker(d, ['exec', 'commit-src', 'cat', '/committed.txt']);
      if (r.code === 0 && r.stdout.trim() === 'data') break;
      await new Promise((res) => setTimeout(res, 100));
    }
    const id = await dk('commit', '--change', 'CMD ["echo","committed"]', '--change', 'ENV COMMITTED=1', '-m', 'a message', '-a', 'an author', 'commit-src', 'engine-test/committed:v1');
    assert.match(id, /^sha256:[0-9a-f]{64}$/);
    // The container was paused for the commit and runs again.
    assert.equal(await dk('inspect', '--format', '{{.State.Status}}', 'commit-src'), 'running');

    assert.equal(await dk('run', '--rm', '--network', 'none', 'engine-test/committed:v1'), 'committed');
    assert.equal(await dk('run', '--rm', '--network', 'none', 'engine-test/committed:v1', 'cat', '/committed.txt'), 'data');
    const insp = JSON.parse(await dk('image', 'inspect', 'engine-test/committed:v1'))[0];
    assert.equal(insp.Id, id);
    assert.equal(insp.Parent, imgs.id);
    assert.equal(insp.Comment, 'a message');
    assert.equal(insp.Author, 'an author');
    assert.deepEqual(insp.Config.Cmd, ['echo', 'committed']);
    assert.ok(insp.Config.Env.includes('COMMITTED=1'));
    assert.equal(insp.RootFS.Layers.length, 2);

    const hist = (await dk('history', '--no-trunc', '--format', '{{.ID}}|{{.Comment}}', 'engine-test/committed:v1')).split('\n');
    assert.deepEqual(hist, [`${id}|a message`, `${imgs.id}|`]);

    // pause=false on a running container, and a commit of a stopped one without repo.
    const again = await dk('commit', '--pause=false', 'commit-src');
    assert.match(again, /^sha256:/);
    await dk('rm', '-f', 'commit-src');
    await dk('rmi', again);
  });

  test('docker save a b | docker load round-trips both images', async () => {
    const committedId = await dk('image', 'inspect', '--format', '{{.Id}}', 'engine-test/committed:v1');
    const file = `${d.root}/two.tar`;
    await dk('save', '-o', file, imgs.tag, 'engine-test/committed:v1');
    await dk('rmi', 'engine-test/committed:v1', imgs.tag);
    assert.deepEqual(await imageIds(), []);
    await dk('load', '-i', file);
    rmSync(file, { force: true });
    assert.equal(await dk('image', 'inspect', '--format', '{{.Id}}', 'engine-test/committed:v1'), committedId);
    assert.equal(await dk('image', 'inspect', '--format', '{{.Id}}', imgs.tag), imgs.id);

    // The same through a pipe, as `docker save a b | docker load` runs it.
    const piped = await new Promise<string>((resolve, reject) => {
      execFile('/bin/sh', ['-c', `${DOCKER_CLI} save ${imgs.tag} engine-test/committed:v1 | ${DOCKER_CLI} load`], {
        env: { ...process.env, DOCKER_HOST: d.dockerHost, DOCKER_CONTEXT: '', DOCKER_CLI_HINTS: 'false' },
        encoding: 'utf8',
      }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)));
    });
    assert.match(piped, /Loaded image: engine-test\/busybox:latest/);
    assert.match(piped, /Loaded image: engine-test\/committed:v1/);
  });

  test('docker system df', async () => {
    const rows = (await dk('system', 'df', '--format', '{{json .}}')).split('\n').map((l) => JSON.parse(l));
    const images = rows.find((r) => r.Type === 'Images');
    assert.equal(images.TotalCount, '2');
    assert.equal(images.Active, '0');
    assert.notEqual(images.Size, '0B');
    assert.ok(rows.find((r) => r.Type === 'Containers'));
    assert.ok(rows.find((r) => r.Type === 'Local Volumes'));
    assert.ok(rows.find((r) => r.Type === 'Build Cache'));
    const verbose = await dk('system', 'df', '-v');
    assert.match(verbose, /engine-test\/committed\s+v1/);
  });

  test('docker image prune: dangling only, then -a keeps what containers use', async () => {
    // A dangling image: import one, then move its tag away.
    const imported = await dk('import', imgs.rootfsTar, 'engine-test/dangle:1');
    await dk('tag', imgs.tag, 'engine-test/dangle:1');
    const out = await dk('image', 'prune', '-f');
    assert.match(out, new RegExp(`deleted: ${imported}`));
    // The imported rootfs is busybox's own layer, which busybox still holds: nothing is freed.
    assert.match(out, /Total reclaimed space: 0B/);
    assert.ok(!(await imageIds()).includes(imported));
    assert.ok((await imageIds()).includes(imgs.id));

    await dk('create', '--name', 'keeper', '--network', 'none', imgs.tag, 'true');
    const all = await dk('image', 'prune', '-a', '-f');
    assert.match(all, /untagged: engine-test\/committed:v1/);
    const left = await imageIds();
    assert.deepEqual(left, [imgs.id], 'busybox stays: a container uses it');
    // Of its two tags the first is removed; the last one is kept for the container, as the reference daemon does.
    assert.equal(await dk('images', '--format', '{{.Repository}}:{{.Tag}}'), 'engine-test/dangle:1');
    await dk('rm', 'keeper');
  });

  test('docker events shows the image actions and the commit', async () => {
    const until = String(Math.floor(Date.now() / 1000) + 1);
    const lines = (await dk('events', '--since', String(since), '--until', until, '--format', '{{.Type}} {{.Action}} {{.Actor.ID}} {{index .Actor.Attributes "name"}}')).split('\n');
    const actions = new Set(lines.map((l) => l.split(' ').slice(0, 2).join(' ')));
    for (const a of ['image load', 'image tag', 'image untag', 'image delete', 'image save', 'image import', 'image prune', 'container commit']) {
      assert.ok(actions.has(a), `${a} in:\n${lines.join('\n')}`);
    }
    assert.ok(lines.includes(`image load ${imgs.id} ${imgs.id}`));
    assert.ok(lines.some((l) => /^image tag sha256:[0-9a-f]{64} engine-test\/committed:v1$/.test(l)));
    assert.ok(lines.some((l) => /^container commit [0-9a-f]{64} commit-src$/.test(l)));
    const filtered = await dk('events', '--since', String(since), '--until', until, '--filter', 'type=image', '--filter', 'event=untag', '--format', '{{.Action}}');
    assert.ok(filtered.split('\n').every((a) => a === 'untag'));
  });

  test('docker-py: container.commit, image.history, images.prune', async () => {
    await dk('load', '-i', imgs.dockerArchive);
    const out = await pythonDocker(
      d,
      `
c = client.containers.run('${imgs.tag}', ['sh', '-c', 'echo py > /py.txt'], network_mode='none', detach=True)
c.wait()
img = c.commit(repository='engine-test/pycommit', tag='1', changes=['CMD ["cat","/py.txt"]'], message='from py')
ran = client.containers.run('engine-test/pycommit:1', network_mode='none', remove=True).decode()
hist = img.history()
c.remove()
dangling = client.images.prune()
client.images.remove('engine-test/pycommit:1')
pruned = client.images.prune(filters={'dangling': False})
print(json.dumps({'id': img.id, 'tags': img.tags, 'ran': ran, 'hist': hist, 'dangling': dangling, 'pruned': pruned, 'left': [i.id for i in client.images.list(all=True)]}))
`,
    );
    const r = JSON.parse(out);
    assert.match(r.id, /^sha256:[0-9a-f]{64}$/);
    assert.deepEqual(r.tags, ['engine-test/pycommit:1']);
    assert.equal(r.ran, 'py\n');
    assert.equal(r.hist[0].Id, r.id);
    assert.equal(r.hist[0].Comment, 'from py');
    assert.deepEqual(r.hist[0].Tags, ['engine-test/pycommit:1']);
    assert.equal(r.hist[1].Id, imgs.id);
    assert.equal(r.dangling.ImagesDeleted, null);
    assert.equal(typeof r.dangling.SpaceReclaimed, 'number');
    assert.ok(r.pruned.ImagesDeleted.some((x: { Untagged?: string }) => x.Untagged === 'engine-test/busybox:latest'));
    assert.deepEqual(r.left, []);
  });
});
