// Switching storage drivers on one data root (issue (10 of 21), item 5): as the reference, each
// driver has its own images and containers. A daemon restarted with another driver shows none of
// the first's (store/scope.ts parks them), and restarted with the first again shows them as they
// were: tags, a container by its name, the file it wrote in its layer.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';

describe('switching storage drivers', { skip: process.getuid?.() !== 0 && 'needs root' }, () => {
  let imgs: TestImages;
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  const lines = (s: string) => s.split('\n').map((l) => l.trim()).filter(Boolean).sort();
  const withDriver = async (driver: string) => {
    writeFileSync(d.configFile, JSON.stringify({ 'storage-driver': driver }));
    await d.restart();
    assert.equal((await dk('info', '-f', '{{.Driver}}')).trim(), driver);
  };

  before(async () => {
    imgs = await testImages();
    d = await startDaemon({ args: [] });
  }, { timeout: 120_000 });
  after(async () => {
    await d?.cleanup();
  });

  test('another driver hides the images and containers of the first, deleting nothing; the first again shows them; each keeps its own', async () => {
    await withDriver('overlay2');
    await dk('load', '-i', imgs.dockerArchive);
    await dk('tag', imgs.tag, 'first:1');
    await dk('run', '--name', 'web', imgs.tag, 'sh', '-c', 'echo first > /mark');
    const firstImages = lines(await dk('images', '--format', '{{.Repository}}:{{.Tag}}'));
    const firstId = (await dk('inspect', '-f', '{{.Id}}', 'web')).trim();

    await withDriver('vfs');
    assert.deepEqual(lines(await dk('images', '-q')), [], 'no image of overlay2 shown');
    assert.deepEqual(lines(await dk('ps', '-aq')), [], 'no container of overlay2 shown');
    const missing = await docker(d, ['inspect', 'web']);
    assert.notEqual(missing.code, 0);
    await dk('load', '-i', imgs.dockerArchive);
    await dk('tag', imgs.tag, 'second:1');
    await dk('run', '--name', 'web', imgs.tag, 'sh', '-c', 'echo second > /mark');
    const secondId = (await dk('inspect', '-f', '{{.Id}}', 'web')).trim();
    assert.notEqual(secondId, firstId);

    await withDriver('overlay2');
    assert.deepEqual(lines(await dk('images', '--format', '{{.Repository}}:{{.Tag}}')), firstImages);
    assert.equal((await dk('inspect', '-f', '{{.Id}} {{.Driver}}', 'web')).trim(), `${firstId} overlay2`);
    assert.equal((await dk('start', '-a', 'web')).trim(), '');
    assert.equal((await dk('cp', 'web:/mark', '-')).includes('first'), true, 'the container\'s layer as it was');
    assert.equal((await dk('run', '--rm', imgs.tag, 'echo', 'ok')).trim(), 'ok');

    await withDriver('vfs');
    assert.equal(lines(await dk('images', '--format', '{{.Repository}}')).includes('second'), true);
    assert.equal((await dk('images', '-q', 'first:1')).trim(), '', 'overlay2\'s tag is not vfs\'s');
    assert.equal((await dk('inspect', '-f', '{{.Id}} {{.Driver}}', 'web')).trim(), `${secondId} vfs`);
    assert.equal((await dk('cp', 'web:/mark', '-')).includes('second'), true);
  });
});
