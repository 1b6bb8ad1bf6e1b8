// The overlayfs snapshotter driver (drivers/storage/snapshotter.ts) on a fake snapshots service:
// the paths of a prepared snapshot's mounts, a parent committed once before anything is made on
// it (two at once included), removal of either form of a snapshot, and the cache ids it lists.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import pino from 'pino';
import { pathsOfMounts, SnapshotterDriver, type SnapshotMount, type SnapshotPort } from '../../../drivers/storage/snapshotter.ts';
import { notFound } from '../../../lib/errors.ts';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);

class FakeSnapshots implements SnapshotPort {
  readonly snaps = new Map<string, { parent: string; dir: string; committed: boolean }>();
  readonly calls: string[] = [];
  private n = 0;
  async prepare(key: string, parent: string): Promise<SnapshotMount[]> {
    this.calls.push(`prepare ${key} ${parent}`);
    const dir = `/snap/${++this.n}/fs`;
    this.snaps.set(key, { parent, dir, committed: false });
    if (!parent) return [{ type: 'bind', source: dir, options: ['rw', 'rbind'] }];
    const lowers: string[] = [];
    for (let p = parent; p; p = this.snaps.get(p)!.parent) lowers.push(this.snaps.get(p)!.dir);
    return [{ type: 'overlay', source: 'overlay', options: ['index=off', `workdir=/snap/${this.n}/work`, `upperdir=${dir}`, `lowerdir=${lowers.join(':')}`] }];
  }
  async commit(name: string, key: string): Promise<void> {
    await new Promise((r) => setTimeout(r, 5));
    this.calls.push(`commit ${name}`);
    const s = this.snaps.get(key);
    if (!s) throw notFound(`snapshot ${key} does not exist`);
    this.snaps.delete(key);
    this.snaps.set(name, { ...s, committed: true });
  }
  async remove(key: string): Promise<void> {
    if (!this.snaps.delete(key)) throw notFound(`snapshot ${key} does not exist`);
  }
  async list(): Promise<string[]> {
    return [...this.snaps.keys()];
  }
}

let home: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'engine-snapshotter-'));
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

test('a prepared snapshot\'s upper, lower and work directories from its mounts', () => {
  assert.deepEqual(pathsOfMounts([{ type: 'bind', source: '/s/1/fs', options: ['rw', 'rbind'] }]), { dir: '/s/1/fs', lowers: [], work: '' });
  assert.deepEqual(pathsOfMounts([{ type: 'overlay', source: 'overlay', options: ['index=off', 'workdir=/s/3/work', 'upperdir=/s/3/fs', 'lowerdir=/s/2/fs:/s/1/fs'] }]), {
    dir: '/s/3/fs', lowers: ['/s/2/fs', '/s/1/fs'], work: '/s/3/work',
  });
  assert.throws(() => pathsOfMounts([]), /no mount/);
});

test('a layer is committed once, before the first snapshot on it; removal takes either form; list answers the cache ids', async () => {
  const fake = new FakeSnapshots();
  const d = new SnapshotterDriver(home, fake, pino({ level: 'silent' }));
  await d.init();
  await d.create(A, null);
  assert.equal(d.unpackDir(A), '/snap/1/fs');
  await Promise.all([d.create(B, A), d.create(C, A)]);
  assert.deepEqual(fake.calls.filter((c) => c.startsWith('commit')), [`commit engine/layer/${A}`]);
  assert.deepEqual(d.metadata(B), { LowerDir: '/snap/1/fs', MergedDir: join(home, B), UpperDir: d.unpackDir(B), WorkDir: d.unpackDir(B).replace(/fs$/, 'work') });
  assert.deepEqual((await d.list()).sort(), [A, B, C]);
  await d.remove(B);
  await d.remove(C);
  await d.remove(A);
  assert.deepEqual(await d.list(), []);
  assert.equal(fake.snaps.size, 0);
  await assert.rejects(d.create(A, B), /does not exist/);
  assert.throws(() => d.unpackDir(B), /does not exist/);
});
