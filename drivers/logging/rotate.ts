// Rotation of the file log drivers (json-file, local) as the reference does it
// (moby daemon/logger/loggerutils/logfile.go): the live file `path` becomes `path.1`, older ones
// shift up to `path.<max-file - 1>`; with `compress`, rotated files are gzipped in the
// background into `path.1.gz` (the uncompressed `path.1` is removed once the .gz is complete)
// and shift as `path.N.gz`. The gzip header's extra field holds {"lastTime": <time of the last
// entry>}, as the reference writes it. Readers open `path.N` first and fall back to `path.N.gz`.
import { existsSync } from 'node:fs';
import { open, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { promisify } from 'node:util';
import { crc32, deflateRaw, gunzip } from 'node:zlib';
import type { FileLog } from './batched-file.ts';

const deflateRawAsync = promisify(deflateRaw);
const gunzipAsync = promisify(gunzip);

/** What the log readers need of a file: positioned reads, its size and identity, close. */
export interface LogFileHandle {
  read(buf: Buffer, off: number, len: number, pos: number): Promise<{ bytesRead: number }>;
  stat(): Promise<{ size: number; ino: number }>;
  close(): Promise<void>;
}

const ignoreMissing = (err: NodeJS.ErrnoException) => {
  if (err.code !== 'ENOENT') throw err;
};

export class Rotator {
  private compressing: Promise<void> | null = null;
  private readonly path: string;
  private readonly maxFiles: number;
  private readonly compress: boolean;
  private readonly log: FileLog;

  constructor(path: string, maxFiles: number, compress: boolean, log: FileLog) {
    this.path = path;
    this.maxFiles = maxFiles;
    this.compress = compress;
    this.log = log;
  }

  /**
   * Moves the (closed) live file out of the way; the caller opens a new one at `path`.
   * `lastTime` (RFC 3339) is the time of the file's last entry, recorded in the gzip header.
   */
  async rotate(lastTime: string): Promise<void> {
    if (this.maxFiles < 2) {
      await unlink(this.path).catch(ignoreMissing);
      return;
    }
    // The previous compression must be done: its `.1.gz` is about to shift.
    await this.settle();
    const ext = this.compress ? '.gz' : '';
    await unlink(`${this.path}.${this.maxFiles - 1}${ext}`).catch(ignoreMissing);
    for (let i = this.maxFiles - 1; i > 1; i--) await rename(`${this.path}.${i - 1}${ext}`, `${this.path}.${i}${ext}`).catch(ignoreMissing);
    await rename(this.path, `${this.path}.1`).catch(ignoreMissing);
    if (this.compress) {
      this.compressing = compressFile(`${this.path}.1`, lastTime).catch((err) => this.log.warn({ err, path: this.path }, 'compressing rotated container log failed'));
    }
  }

  /** Resolves when no compression is running. */
  async settle(): Promise<void> {
    while (this.compressing) {
      const c = this.compressing;
      await c;
      if (this.compressing === c) this.compressing = null;
    }
  }
}

/** A gzip member with the reference's header (FEXTRA = {"lastTime":...}). */
export async function gzipWithLastTime(data: Buffer, lastTime: string): Promise<Buffer> {
  const extra = Buffer.from(JSON.stringify({ lastTime }));
  const head = Buffer.alloc(12);
  head[0] = 0x1f;
  head[1] = 0x8b;
  head[2] = 8; // deflate
  head[3] = 4; // FEXTRA
  head[9] = 255; // OS unknown, as Go writes it
  head.writeUInt16LE(extra.length, 10);
  const body = await deflateRawAsync(data);
  const tail = Buffer.alloc(8);
  tail.writeUInt32LE(crc32(data) >>> 0, 0);
  tail.writeUInt32LE(data.length >>> 0, 4);
  return Buffer.concat([head, extra, body, tail]);
}

/** `name` → `name.gz` (written to a temporary name first, so readers never see half of it), then `name` is removed. */
async function compressFile(name: string, lastTime: string): Promise<void> {
  let data: Buffer;
  try {
    data = await readFile(name);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const tmp = `${name}.gz.tmp`;
  try {
    await writeFile(tmp, await gzipWithLastTime(data, lastTime), { mode: 0o640 });
    await rename(tmp, `${name}.gz`);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
  await unlink(name).catch(ignoreMissing);
}

/** A rotated .gz file read as its content: decompressed on the first read, its size from the trailer. */
class GzipHandle implements LogFileHandle {
  private data: Promise<Buffer> | null = null;
  private size = -1;
  private readonly fh: FileHandle;

  constructor(fh: FileHandle) {
    this.fh = fh;
  }

  private content(): Promise<Buffer> {
    this.data ??= this.fh.readFile().then((b) => gunzipAsync(b));
    return this.data;
  }

  async read(buf: Buffer, off: number, len: number, pos: number): Promise<{ bytesRead: number }> {
    if (this.size >= 0 && pos >= this.size) return { bytesRead: 0 };
    const data = await this.content();
    if (pos >= data.length) return { bytesRead: 0 };
    return { bytesRead: data.copy(buf, off, pos, Math.min(data.length, pos + len)) };
  }

  async stat(): Promise<{ size: number; ino: number }> {
    const st = await this.fh.stat();
    if (this.size < 0) {
      // ISIZE: the uncompressed size mod 2^32 (one member, as written above; rotated files are far smaller).
      const t = Buffer.alloc(4);
      const { bytesRead } = st.size >= 18 ? await this.fh.read(t, 0, 4, st.size - 4) : { bytesRead: 0 };
      this.size = bytesRead === 4 ? t.readUInt32LE(0) : (await this.content()).length;
    }
    return { size: this.size, ino: st.ino };
  }

  async close(): Promise<void> {
    this.data = null;
    await this.fh.close();
  }
}

async function openIfExists(p: string): Promise<FileHandle | null> {
  try {
    return await open(p, 'r');
  } catch {
    return null;
  }
}

/** `path.i`, or else `path.i.gz` read decompressed; null when neither exists. */
export async function openRotated(path: string, i: number): Promise<LogFileHandle | null> {
  const p = `${path}.${i}`;
  // Most logs were never rotated: a failed open costs a threadpool round trip, access(2) microseconds.
  if (existsSync(p)) {
    const fh = await openIfExists(p);
    if (fh) return fh;
  }
  if (!existsSync(`${p}.gz`)) return null;
  const gz = await openIfExists(`${p}.gz`);
  return gz ? new GzipHandle(gz) : null;
}
