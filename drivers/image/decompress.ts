// `docker load` accepts a compressed archive as well as a plain tar: sniff the magic bytes and
// put the matching decompressor in front of the stream.
import { Readable, pipeline } from 'node:stream';
import { createGunzip, createZstdDecompress } from 'node:zlib';

const GZIP = Buffer.from([0x1f, 0x8b]);
const ZSTD = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);

export async function decompressed(body: Readable): Promise<Readable> {
  const { head, ended } = await readHead(body, 4);
  const rest = ended ? Readable.from(head.length ? [head] : [], { objectMode: false }) : body;
  let decoder;
  if (head.subarray(0, 2).equals(GZIP)) decoder = createGunzip();
  else if (head.subarray(0, 4).equals(ZSTD)) decoder = createZstdDecompress();
  else return rest;
  // pipeline destroys the decoder with the source's error, so the reader sees every failure.
  pipeline(rest, decoder, () => {});
  return decoder;
}

/**
 * Peek at least `n` bytes (fewer at end of stream). The bytes are pushed back synchronously:
 * a stream whose source is exhausted emits 'end' on the next tick unless data is buffered again.
 */
function readHead(body: Readable, n: number): Promise<{ head: Buffer; ended: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let len = 0;
    const finish = (ended: boolean) => {
      body.off('readable', onReadable);
      body.off('end', onEnd);
      body.off('error', onError);
      const head = Buffer.concat(chunks);
      if (!ended && head.length > 0) body.unshift(head);
      resolve({ head, ended });
    };
    const onReadable = () => {
      let c: Buffer | null;
      while ((c = body.read() as Buffer | null) !== null) {
        chunks.push(c);
        len += c.length;
        if (len >= n) return finish(false);
      }
    };
    const onEnd = () => finish(true);
    const onError = (err: Error) => {
      body.off('readable', onReadable);
      body.off('end', onEnd);
      reject(err);
    };
    body.on('readable', onReadable);
    body.on('end', onEnd);
    body.on('error', onError);
  });
}
