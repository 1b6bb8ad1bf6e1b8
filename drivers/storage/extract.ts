// Extraction of a layer blob: decompress, hash the tar (the diff id) and unpack it into a directory
// (or only hash it). The blob's own digest and keeping are the layer store's business.
import { createHash } from 'node:crypto';
import { Readable, type Duplex } from 'node:stream';
import { chunksOf } from './chunks.ts';
import { decompressStream } from './compression.ts';
import { readTar } from './tar-reader.ts';
import type { BlobMedia } from './types.ts';
import type { IdMap } from '../../lib/idmap.ts';
import { unpack, type WhiteoutMode } from './unpack.ts';

export interface ExtractOptions {
  media: BlobMedia;
  /** Where to unpack; null only hashes. */
  root: string | null;
  whiteouts: WhiteoutMode;
  signal?: AbortSignal;
  /** Decompress gzip with unpigz (installed, allowed, and the blob is large enough to gain). */
  usePigz?: boolean;
  /** --userns-remap: unpack with container ids turned into host ids. */
  idMap?: IdMap;
}

export interface ExtractResult {
  diffId: string;
  /** Bytes of regular file data written. */
  size: number;
}

export async function extract(src: AsyncIterable<Buffer>, o: ExtractOptions): Promise<ExtractResult> {
  const diffHash = createHash('sha256');
  const tarBytes = decompressStream(src, o.media, !!o.usePigz);
  const bytes = tarBytes instanceof Readable ? chunksOf(tarBytes) : tarBytes;
  async function* hashed(): AsyncGenerator<Buffer> {
    for await (const c of bytes) {
      diffHash.update(c);
      yield c;
    }
  }
  let size = 0;
  try {
    if (o.root !== null) {
      size = (await unpack(readTar(hashed()), { root: o.root, whiteouts: o.whiteouts, signal: o.signal, idMap: o.idMap })).size;
    } else {
      for await (const _ of hashed()) {
        // hashing only
      }
    }
  } catch (err) {
    // The tar reader pulls its input by hand, so nothing has closed the decoder yet.
    if ('destroy' in tarBytes) (tarBytes as Duplex).destroy();
    else (tarBytes as AsyncGenerator<Buffer>).return(undefined).catch(() => {});
    throw err;
  }
  return { diffId: `sha256:${diffHash.digest('hex')}`, size };
}
