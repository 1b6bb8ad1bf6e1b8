// The tar reader and writer: PAX and GNU extensions, binary xattr values, archives from GNU tar.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { link, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { lsetxattr } from '../../../drivers/sys/fs-syscalls.ts';
import { createLayerStore } from '../../../drivers/storage/layer-store.ts';
import { readTar } from '../../../drivers/storage/tar-reader.ts';
import { encodeHeader, endOfArchive, padding } from '../../../drivers/storage/tar-writer.ts';
import { body, describe, digest, removeRoot, silentLog, tempRoot } from './helpers.ts';

test('writer and reader agree on long names, large ids and binary xattrs', async () => {
  const longName = `${'d'.repeat(120)}/${'f'.repeat(150)}`;
  const cap = Buffer.from([0x01, 0x00, 0x00, 0x02, 0xff, 0xfe, 0x00, 0x80]);
  const data = Buffer.from('payload');
  const tar = Buffer.concat([
    encodeHeader({ name: longName, type: 'file', mode: 0o4755, uid: 70_000_000, gid: 5, size: data.length, mtime: 1_600_000_000, xattrs: new Map([['security.capability', cap]]) }),
    data, padding(data.length),
    encodeHeader({ name: 'ln', type: 'symlink', mode: 0o777, uid: 0, gid: 0, size: 0, mtime: 0, linkname: `/${'t'.repeat(200)}` }),
    endOfArchive(),
  ]);
  const seen = [];
  for await (const e of readTar(body(tar))) {
    const chunks: Buffer[] = [];
    for await (const c of e.body) chunks.push(c);
    seen.push({ h: e.header, data: Buffer.concat(chunks) });
  }
  assert.equal(seen.length, 2);
  assert.equal(seen[0]!.h.name, longName);
  assert.equal(seen[0]!.h.uid, 70_000_000);
  assert.equal(seen[0]!.h.mode, 0o4755);
  assert.deepEqual(seen[0]!.h.xattrs.get('security.capability'), cap);
  assert.deepEqual(seen[0]!.data, data);
  assert.equal(seen[1]!.h.linkname, `/${'t'.repeat(200)}`);
});

test('an archive made by GNU tar unpacks to the same tree', async () => {
  const root = await tempRoot('layers-gnutar-');
  try {
    const src = join(root, 'src');
    const deep = join(src, 'a'.repeat(90), 'b'.repeat(90));
    await mkdir(deep, { recursive: true });
    await writeFile(join(deep, 'c'.repeat(90)), 'deep');
    await writeFile(join(src, 'f'), 'file');
    await link(join(src, 'f'), join(src, 'hard'));
    lsetxattr(join(src, 'f'), 'user.k', Buffer.from('v'));
    const tar = execFileSync('tar', ['--xattrs', '--xattrs-include=user.*', '--numeric-owner', '-C', src, '-cf', '-', '.']);
    const store = await createLayerStore({ dataRoot: join(root, 'data'), driver: 'vfs', tmpDir: join(root, 'tmp'), usePigz: false, log: silentLog() });
    const l = await store.applyLayer(null, body(tar), { expectedDiffId: digest(tar) });
    await store.createRW('x', l.chainId);
    assert.deepEqual(await describe(await store.mountRW('x')), await describe(src));
  } finally {
    await removeRoot(root);
  }
});

test('input that ends right after the last entry data (no padding, no end blocks) is a clean end, as Go reads it; a cut inside data is not', async () => {
  const a = Buffer.from('first');
  const b = Buffer.from('FROM x\n');
  const hdr = (name: string, size: number) => encodeHeader({ name, type: 'file', mode: 0o600, uid: 0, gid: 0, size, mtime: 0 });
  // What the docker CLI sends for `build -f /elsewhere/Dockerfile ctx`.
  const cut = Buffer.concat([hdr('a.txt', a.length), a, padding(a.length), hdr('.dockerfile.0123', b.length), b]);
  const names: string[] = [];
  const texts: string[] = [];
  for await (const e of readTar(body(cut))) {
    const chunks: Buffer[] = [];
    for await (const c of e.body) chunks.push(c);
    names.push(e.header.name);
    texts.push(Buffer.concat(chunks).toString());
  }
  assert.deepEqual(names, ['a.txt', '.dockerfile.0123']);
  assert.deepEqual(texts, ['first', 'FROM x\n']);
  const inside = Buffer.concat([hdr('a.txt', a.length), a.subarray(0, 2)]);
  await assert.rejects(async () => {
    for await (const e of readTar(body(inside))) for await (const _ of e.body);
  }, /unexpected EOF in tar archive/);
});
