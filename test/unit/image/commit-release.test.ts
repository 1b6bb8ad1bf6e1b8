// A commit whose layer write fails half-way (the data root full) lets go of the container's file it
// was reading: the diff's walk is stopped, so no deleted file stays open and its space comes back
// (found by e2e disk-full's build case: the daemon held /big of a removed container open).
import assert from 'node:assert/strict';
import { createReadStream, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { emptyTar, withoutMountPoints } from '../../../drivers/image/commit.ts';
import { chunksOf } from '../../../drivers/storage/chunks.ts';
import { encodeHeader, endOfArchive, padding } from '../../../drivers/storage/tar-writer.ts';

test('a commit stream destroyed by its failing consumer closes the file the layer walk had open', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'engine-commit-release-'));
  try {
    const file = join(dir, 'big');
    const size = 8 << 20;
    writeFileSync(file, Buffer.alloc(size, 7));
    // What drivers/storage/diff-walk.ts diffTar yields for one file.
    async function* diff(): AsyncGenerator<Buffer> {
      yield encodeHeader({ name: 'big', type: 'file', mode: 0o644, uid: 0, gid: 0, size, mtime: 0 });
      for await (const c of createReadStream(file)) yield c as Buffer;
      yield padding(size);
      yield endOfArchive();
    }
    const open = () => readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === file;
      } catch {
        return false;
      }
    });
    const tar = Readable.from(withoutMountPoints(Readable.from(diff(), { objectMode: false })), { objectMode: false });
    const { stream } = await emptyTar(tar);
    let read = 0;
    await assert.rejects(async () => {
      for await (const c of chunksOf(stream)) {
        read += c.length;
        if (read > 1 << 20) throw Object.assign(new Error('write: no space left on device'), { code: 'ENOSPC' });
      }
    }, /no space left/);
    assert.equal(open().length, 1, 'the walk still reads the file');
    stream.destroy();
    for (let i = 0; i < 50 && open().length; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(open(), [], 'the file is closed');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
