// Layer blob compression: sniff the magic bytes, then decompress with zlib (gzip, zstd) or with
// unpigz when allowed and installed (faster for large gzip layers).
import { spawn } from 'node:child_process';
import { accessSync, constants as fsc } from 'node:fs';
import { delimiter, join } from 'node:path';
import { Duplex, Readable, pipeline } from 'node:stream';
import { createGunzip, createZstdDecompress } from 'node:zlib';
import { invalidArgument } from '../../lib/errors.ts';
import type { BlobMedia } from './types.ts';

const GZIP = [0x1f, 0x8b];
const ZSTD = [0x28, 0xb5, 0x2f, 0xfd];

export function sniff(head: Buffer): BlobMedia {
  if (GZIP.every((b, i) => head[i] === b)) return 'gzip';
  if (ZSTD.every((b, i) => head[i] === b)) return 'zstd';
  return 'none';
}

/** The first `n` bytes (fewer at end of input) and an iterable that yields the whole input again. */
export async function peek(src: AsyncIterable<Buffer>, n: number): Promise<{ head: Buffer; all: AsyncIterable<Buffer> }> {
  const it = src[Symbol.asyncIterator]();
  const first: Buffer[] = [];
  let len = 0;
  let done = false;
  while (len < n) {
    const r = await it.next();
    if (r.done) {
      done = true;
      break;
    }
    first.push(r.value);
    len += r.value.length;
  }
  async function* all(): AsyncGenerator<Buffer> {
    yield* first;
    if (done) return;
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      yield r.value;
    }
  }
  return { head: Buffer.concat(first).subarray(0, n), all: all() };
}

let pigzPath: string | null | undefined;
function findUnpigz(): string | null {
  if (pigzPath !== undefined) return pigzPath;
  pigzPath = null;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const p = join(dir, 'unpigz');
    try {
      accessSync(p, fsc.X_OK);
      pigzPath = p;
      break;
    } catch {
      // not here
    }
  }
  return pigzPath;
}

function unpigz(bin: string): Duplex {
  const child = spawn(bin, ['-d', '-c'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('close', (code, sig) => resolve(code ?? sig ?? -1)));
  child.stdin.on('error', () => {});
  // Output ends only once unpigz has exited 0: a truncated or corrupt stream is an error, not EOF.
  async function* out(): AsyncGenerator<Buffer> {
    for await (const c of child.stdout) yield c as Buffer;
    const code = await exited;
    if (code !== 0) throw invalidArgument(`unpigz: ${stderr.trim() || `exit ${code}`}`);
  }
  const duplex = Duplex.from({ writable: child.stdin, readable: Readable.from(out(), { objectMode: false }) });
  duplex.on('close', () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return duplex;
}

/** The uncompressed bytes of `src` given its detected media. */
export function decompress(src: AsyncIterable<Buffer>, media: BlobMedia, usePigz: boolean): AsyncIterable<Buffer> {
  if (media === 'none') return src;
  const bin = media === 'gzip' && usePigz ? findUnpigz() : null;
  const decoder: Duplex = bin ? unpigz(bin) : media === 'gzip' ? createGunzip() : createZstdDecompress();
  // pipeline destroys the decoder with the source's error, so the reader sees every failure.
  pipeline(Readable.from(src, { objectMode: false }), decoder, () => {});
  return decoder;
}
