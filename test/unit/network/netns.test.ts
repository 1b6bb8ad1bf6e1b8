// A network namespace made on a file before the task that joins it, and taken away after.
import assert from 'node:assert/strict';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createNetns, removeNetns } from '../../../drivers/network/netns.ts';

const dir = mkdtempSync('/tmp/engine-netns-');
after(() => rmSync(dir, { recursive: true, force: true }));

const mounted = (path: string) => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === path);

test('createNetns mounts a new namespace on the file (a fresh one each time); removeNetns unmounts and deletes it, and tolerates nothing there', async () => {
  const path = join(dir, 'deep', 'c1');
  await createNetns(path);
  assert.ok(mounted(path));
  const ino = statSync(path).ino;
  assert.notEqual(ino, statSync('/proc/self/ns/net').ino, 'not the host namespace');
  // Made again over a leftover: the old one is let go first. (Held open meanwhile: a namespace
  // freed at once may hand its inode number to the next one.)
  const old = openSync(path, 'r');
  try {
    await createNetns(path);
    assert.notEqual(statSync(path).ino, ino);
  } finally {
    closeSync(old);
  }
  assert.equal(readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.split(' ')[4] === path).length, 1);
  await removeNetns(path);
  assert.ok(!mounted(path) && !existsSync(path));
  await removeNetns(path);
});
