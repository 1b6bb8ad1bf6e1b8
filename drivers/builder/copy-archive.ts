// ADD's local archives: a source file that is a tar (plain, gzip, bzip2 or xz) is extracted into
// the destination directory instead of copied. bzip2 and xz are decoded by the system tools.
import { execa } from 'execa';
import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, lchown, link, lstat, lutimes, mkdir, open, rm, symlink, utimes } from 'node:fs/promises';
import { basename, join, posix } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { invalidArgument } from '../../lib/errors.ts';
import { readTar } from '../storage/tar-reader.ts';
import { EXECA_DEFAULTS } from '../sys/exec.ts';
import { escapes, mkdirInRoot, type Ids } from './copy-paths.ts';

export type ArchiveKind = 'tar' | 'gzip' | 'bzip2' | 'xz';

const MAGIC: [Exclude<ArchiveKind, 'tar'>, Buffer][] = [
  ['gzip', Buffer.from([0x1f, 0x8b])],
  ['bzip2', Buffer.from('BZh')],
  ['xz', Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])],
];

interface Decoded {
  stream: Readable;
  /** Resolves when the decoder is done, rejecting when it failed. */
  finished: Promise<void>;
  stop(): void;
}

function decode(path: string, kind: ArchiveKind): Decoded {
  if (kind === 'tar' || kind === 'gzip') {
    const file = createReadStream(path);
    if (kind === 'tar') return { stream: file, finished: Promise.resolve(), stop: () => file.destroy() };
    const gunzip = createGunzip();
    const finished = pipeline(file, gunzip).catch((err: Error) => {
      throw invalidArgument(`failed to decompress ${basename(path)}: ${err.message}`);
    });
    finished.catch(() => {});
    return { stream: gunzip, finished, stop: () => gunzip.destroy() };
  }
  // As long as the archive is large: no deadline. stop() aborts `cancel`, which ends the decoder
  // (SIGTERM, as child.kill() did); its exit status is read from the 'close' event, so the result
  // is not awaited (reject: false). The caller's signal is checked between entries, as before.
  const cancel = new AbortController();
  const child = execa(kind, ['-dc', path], {
    ...EXECA_DEFAULTS,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: false,
    cancelSignal: cancel.signal,
    reject: false,
  });
  // With buffer: false execa resumes a stdout nobody reads yet after a tick: the reader comes later.
  child.stdout.pause();
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    if (stderr.length < 4096) stderr += c.toString();
  });
  let stopped = false;
  const finished = new Promise<void>((resolve, reject) => {
    child.on('error', (err) => reject(invalidArgument(`failed to run ${kind}: ${err.message}`)));
    child.on('close', (code) => {
      if (code === 0 || stopped) resolve();
      else reject(invalidArgument(`failed to decompress ${basename(path)}: ${kind}: ${stderr.trim() || `exit ${code}`}`));
    });
  });
  finished.catch(() => {});
  const stop = () => {
    stopped = true;
    cancel.abort();
  };
  return { stream: child.stdout, finished, stop };
}

/** As Go's tar reader: a header block whose checksum (unsigned or signed sum) holds. */
function isTarHeader(b: Buffer): boolean {
  if (b.length < 512 || b.every((x) => x === 0)) return false;
  const field = b.subarray(148, 156).toString('latin1').replace(/[\0 ]+$/, '').trim();
  if (!/^[0-7]+$/.test(field)) return false;
  const want = parseInt(field, 8);
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < 512; i++) {
    const v = i >= 148 && i < 156 ? 0x20 : b[i]!;
    unsigned += v;
    signed += v > 127 ? v - 256 : v;
  }
  return want === unsigned || want === signed;
}

async function head(stream: Readable, n: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let len = 0;
  for await (const c of stream) {
    chunks.push(c as Buffer);
    len += (c as Buffer).length;
    if (len >= n) break;
  }
  return Buffer.concat(chunks).subarray(0, n);
}

/** What kind of tar archive the file is, or null when it is none (and so copied as is). */
export async function archiveKind(path: string): Promise<ArchiveKind | null> {
  const fh = await open(path, 'r');
  let magic: Buffer;
  try {
    const buf = Buffer.alloc(8);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    magic = buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
  const kind = MAGIC.find(([, m]) => magic.subarray(0, m.length).equals(m))?.[0] ?? 'tar';
  const d = decode(path, kind);
  try {
    return isTarHeader(await head(d.stream, 512)) ? kind : null;
  } catch {
    return null;
  } finally {
    d.stop();
  }
}

export interface ExtractOptions {
  destRoot: string;
  /** The directory to extract into, as a path inside destRoot. */
  destDir: string;
  ids: Ids;
  chmod: number | null;
  signal?: AbortSignal;
}

const seconds = (t: number | undefined, fallback: number) => (t === undefined || !Number.isFinite(t) ? fallback : t);

/** Extract the archive into destDir: modes and mtimes from the entries, owners from `ids`. */
export async function extractArchive(path: string, kind: ArchiveKind, o: ExtractOptions): Promise<void> {
  await mkdirInRoot(o.destRoot, o.destDir, o.ids);
  const d = decode(path, kind);
  const dirTimes: [string, number, number][] = [];
  try {
    for await (const { header: h, body } of readTar(d.stream as AsyncIterable<Buffer>)) {
      o.signal?.throwIfAborted();
      const rel = posix.normalize(h.name.replace(/^\/+/, '')).replace(/\/+$/, '');
      if (escapes(rel)) throw invalidArgument(`failed to copy files: archive entry ${JSON.stringify(h.name)} is outside of the destination`);
      if (rel === '.' || rel === '') continue;
      if (!['file', 'dir', 'symlink', 'link'].includes(h.type)) continue; // devices and fifos: not creatable here
      const parent = await mkdirInRoot(o.destRoot, posix.join(o.destDir, posix.dirname(rel)), o.ids);
      const target = join(parent, posix.basename(rel));
      const existing = await lstat(target).catch(() => null);
      if (existing && !(existing.isDirectory() && h.type === 'dir')) await rm(target, { recursive: true, force: true });
      switch (h.type) {
        case 'file':
          await pipeline(Readable.from(body), createWriteStream(target, { flags: 'wx', mode: 0o600 }));
          break;
        case 'dir':
          if (!existing?.isDirectory()) await mkdir(target);
          break;
        case 'symlink':
          await symlink(h.linkname, target);
          break;
        case 'link': {
          const lrel = posix.normalize(h.linkname.replace(/^\/+/, ''));
          if (escapes(lrel)) throw invalidArgument(`failed to copy files: archive link ${JSON.stringify(h.linkname)} is outside of the destination`);
          const lparent = await mkdirInRoot(o.destRoot, posix.join(o.destDir, posix.dirname(lrel)), o.ids);
          await link(join(lparent, posix.basename(lrel)), target);
          break;
        }
      }
      await lchown(target, o.ids.uid, o.ids.gid);
      if (h.type === 'symlink') {
        await lutimes(target, seconds(h.atime, h.mtime), h.mtime);
        continue;
      }
      if (h.type !== 'link') await chmod(target, o.chmod ?? h.mode & 0o7777);
      // A directory's mtime is set once its entries are written.
      if (h.type === 'dir') dirTimes.push([target, seconds(h.atime, h.mtime), h.mtime]);
      else if (h.type === 'file') await utimes(target, seconds(h.atime, h.mtime), h.mtime);
    }
    await d.finished;
  } catch (err) {
    d.stop();
    throw err;
  }
  for (const [p, at, mt] of dirTimes.reverse()) await utimes(p, at, mt).catch(() => {});
}
