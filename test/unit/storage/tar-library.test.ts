// Why layers are read and written with drivers/storage/tar-reader.ts and tar-writer.ts and not with
// tar-stream (which the daemon uses for image archives, save and load, where no entry carries
// binary PAX values): tar-stream decodes every PAX record as UTF-8 text, so a binary extended
// attribute such as security.capability (SCHILY.xattr.security.capability, bytes >= 0x80 for
// cap_setuid and others) comes back changed, and a layer applied from it would lose the file's
// capabilities. Go's archive/tar, which wrote the layer, keeps the bytes. When tar-stream keeps
// them too, this test fails and the layer code can move to it.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import tarStream from 'tar-stream';
import { readTar } from '../../../drivers/storage/tar-reader.ts';
import { encodeHeader, endOfArchive, padding } from '../../../drivers/storage/tar-writer.ts';

// cap_net_bind_service + cap_setuid, permitted and effective (VFS_CAP_REVISION_2): bytes >= 0x80.
const CAP = Buffer.from([0x01, 0x00, 0x00, 0x02, 0x80, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]);

function layerWithCapability(): Buffer {
  const data = Buffer.from('#!/bin/true\n');
  return Buffer.concat([
    encodeHeader({ name: 'bin/ping', type: 'file', mode: 0o755, uid: 0, gid: 0, size: data.length, mtime: 0, xattrs: new Map([['security.capability', CAP]]) }),
    data,
    padding(data.length),
    endOfArchive(),
  ]);
}

test('a binary security.capability survives our reader byte for byte; tar-stream decodes it as text and changes it', async () => {
  const tar = layerWithCapability();
  let ours: Buffer | undefined;
  for await (const e of readTar(Readable.from([tar]))) {
    ours = e.header.xattrs?.get('security.capability');
    for await (const _ of e.body);
  }
  assert.deepEqual(ours, CAP, 'our reader keeps the bytes');

  const extract = tarStream.extract();
  const theirs = await new Promise<string | undefined>((resolve, reject) => {
    let value: string | undefined;
    extract.on('entry', (header, stream, next) => {
      value = (header.pax as Record<string, string> | undefined)?.['SCHILY.xattr.security.capability'];
      stream.on('end', next);
      stream.resume();
    });
    extract.on('finish', () => resolve(value));
    extract.on('error', reject);
    extract.end(tar);
  });
  assert.ok(theirs !== undefined, 'tar-stream sees the record');
  assert.notDeepEqual(Buffer.from(theirs, 'utf8'), CAP, 'tar-stream hands the value back changed (invalid UTF-8 replaced)');
  assert.notDeepEqual(Buffer.from(theirs, 'latin1'), CAP, 'and no encoding gets the bytes back');
});
