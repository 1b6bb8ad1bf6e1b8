// Building and reading small tar archives in tests.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import tarStream from 'tar-stream';

export type TarEntry =
  | { name: string; data: Buffer | string }
  | { name: string; symlink: string }
  | { name: string; dir: true };

export async function makeTar(entries: TarEntry[]): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const e of entries) {
    if ('data' in e) pack.entry({ name: e.name }, typeof e.data === 'string' ? Buffer.from(e.data) : e.data);
    else if ('symlink' in e) pack.entry({ name: e.name, type: 'symlink', linkname: e.symlink });
    else pack.entry({ name: e.name, type: 'directory' });
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function readTar(stream: AsyncIterable<unknown> | Iterable<unknown>): Promise<Map<string, Buffer>> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  const extract = tarStream.extract();
  const out = new Map<string, Buffer>();
  const feed = Readable.from([Buffer.concat(chunks)]);
  feed.pipe(extract as unknown as NodeJS.WritableStream);
  for await (const entry of extract) {
    const parts: Buffer[] = [];
    for await (const c of entry) parts.push(c as Buffer);
    out.set(entry.header.name, Buffer.concat(parts));
  }
  return out;
}

export const hex = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
export const digest = (b: Buffer | string) => `sha256:${hex(b)}`;
export const body = (b: Buffer) => Readable.from([b], { objectMode: false });
