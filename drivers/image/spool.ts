// Spools every regular file of an archive to a private temp dir, because the formats we read
// do not fix the order of entries (a manifest may come after the blobs it names). Each file is
// hashed on the way through so blob digests can be checked without reading it twice.
import { createHash } from 'node:crypto';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { posix, join } from 'node:path';
import type { Readable } from 'node:stream';
import tarStream from 'tar-stream';
import { EngineError, invalidArgument, isSystemError } from '../../lib/errors.ts';
import { drainedOrClosed } from '../storage/pack-entry.ts';

export interface SpooledFile {
  /** Where the bytes are on disk. */
  path: string;
  size: number;
  /** `<alg>:<hex>` of the content; the algorithm is the one a `blobs/<alg>/` path names, else sha256. */
  digest: string;
}

const MAX_LINK_HOPS = 16;

export class Spool {
  readonly dir: string;
  private readonly files = new Map<string, SpooledFile>();
  /** Symlinks and hard links, archive-relative name -> archive-relative target. */
  private readonly links = new Map<string, string>();

  private constructor(dir: string) {
    this.dir = dir;
  }

  /** Read the whole tar `body` into a new directory under `tmpDir`. Removes it again on failure. */
  static async fromTar(body: Readable, tmpDir: string, signal: AbortSignal): Promise<Spool> {
    const spool = new Spool(await mkdtemp(join(tmpDir, 'load-')));
    try {
      await spool.ingest(body, signal);
      return spool;
    } catch (err) {
      await spool.remove();
      throw err;
    }
  }

  /** The file at an archive path, following links; undefined when absent. */
  lookup(name: string): SpooledFile | undefined {
    let cur = normalizeName(name);
    for (let hop = 0; hop <= MAX_LINK_HOPS; hop++) {
      const f = this.files.get(cur);
      if (f) return f;
      const next = this.links.get(cur);
      if (next === undefined) return undefined;
      cur = next;
    }
    return undefined;
  }

  async readBytes(name: string): Promise<Buffer | undefined> {
    const f = this.lookup(name);
    return f ? readFile(f.path) : undefined;
  }

  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }

  private async ingest(body: Readable, signal: AbortSignal): Promise<void> {
    const extract = tarStream.extract();
    let bodyError: unknown;
    let stopped = false;
    const feeding = (async () => {
      try {
        for await (const chunk of body) {
          // After a failure the rest of the body is read and dropped, not cut off: a socket
          // closed with unread data is reset, and the client would lose the error answer.
          if (stopped) continue;
          if (!extract.write(chunk as Buffer)) await drainedOrClosed(extract);
        }
        if (!stopped) extract.end(null);
      } catch (err) {
        bodyError = err;
        extract.destroy(err as Error);
      }
    })();
    const onAbort = () => {
      stopped = true;
      body.destroy();
      extract.destroy(new Error('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    // Aborted while the spool directory was made or the body peeked at: no event will come.
    if (signal.aborted) onAbort();
    let n = 0;
    try {
      for await (const entry of extract) {
        const h = entry.header;
        const name = normalizeName(h.name);
        if (h.type === 'file' || h.type === 'contiguous-file') {
          this.files.set(name, await this.writeEntry(entry, join(this.dir, String(n++)), digestAlgorithmFor(name)));
          continue;
        }
        if (h.type === 'symlink' && h.linkname) {
          this.links.set(name, posix.normalize(posix.join(posix.dirname(name), h.linkname)).replace(/^\/+/, ''));
        } else if (h.type === 'link' && h.linkname) {
          this.links.set(name, normalizeName(h.linkname));
        }
        entry.resume();
      }
      await feeding;
    } catch (err) {
      stopped = true;
      if (signal.aborted) throw new EngineError('Canceled', 'context canceled', { cause: err });
      if (err instanceof EngineError) throw err;
      // Our own write failing (no space left on device) is not the archive's fault.
      if (bodyError === undefined && isSystemError(err)) throw err;
      const cause = bodyError ?? err;
      if (bodyError !== undefined && !isDecodeError(bodyError)) throw bodyError;
      throw invalidArgument(`invalid tar archive: ${(cause as Error).message ?? String(cause)}`, cause);
    } finally {
      stopped = true;
      signal.removeEventListener('abort', onAbort);
    }
    if (signal.aborted) throw new EngineError('Canceled', 'context canceled');
  }

  private async writeEntry(entry: AsyncIterable<unknown>, path: string, alg: string): Promise<SpooledFile> {
    const hash = createHash(alg);
    const fh = await open(path, 'wx', 0o600);
    let size = 0;
    try {
      for await (const c of entry) {
        const chunk = c as Buffer;
        hash.update(chunk);
        size += chunk.length;
        await fh.write(chunk);
      }
    } catch (err) {
      if (isSystemError(err)) err.path ??= path;
      throw err;
    } finally {
      await fh.close();
    }
    return { path, size, digest: `${alg}:${hash.digest('hex')}` };
  }
}

/** Archive paths compare without `./`, leading or doubled slashes. */
export function normalizeName(name: string): string {
  return posix.normalize(`/${name}`).replace(/^\/+/, '').replace(/\/+$/, '');
}

function digestAlgorithmFor(name: string): string {
  const m = /^blobs\/(sha256|sha384|sha512)\//.exec(name);
  return m ? m[1]! : 'sha256';
}

function isDecodeError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && (code.startsWith('Z_') || code.startsWith('ERR_ZLIB') || code.startsWith('ERR__ZSTD'));
}

