// The context of a classic `docker build` (the POST /build body): a tar, maybe gzip, bzip2, xz or
// zstd compressed, unpacked into a fresh directory; its Dockerfile read; paths its .dockerignore
// names removed. Unpacking never follows a symlink of the tree: an entry below one is refused.
import { execa } from 'execa';
import { constants as fsc } from 'node:fs';
import { chmod, link, lutimes, mkdir, mkdtemp, open, readdir, readFile, rm, rmdir, symlink, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { EngineError, failedPrecondition, invalidArgument } from '../../lib/errors.ts';
import { chunksOf } from '../storage/chunks.ts';
import { decompress, peek } from '../storage/compression.ts';
import { readTar, type TarEntry } from '../storage/tar-reader.ts';
import { lstatOrNull } from '../storage/unpack.ts';
import { EXECA_DEFAULTS } from '../sys/exec.ts';
import { resolveInRoot } from '../sys/rootfs-files.ts';
import { IgnoreMatcher, parseDockerignore } from './dockerignore.ts';

export interface OpenedContext {
  /** The unpacked context directory. */
  root: string;
  /** The Dockerfile's path relative to the root, as found (cleaned; `dockerfile` after the fallback). */
  dockerfileName: string;
  dockerfile: string;
  /** Removes the directory; idempotent. */
  close(): Promise<void>;
}

export interface OpenContextOptions {
  /** Relative to the context root; default `Dockerfile`. */
  dockerfile?: string;
  /** Where the context directory is made. */
  tmpDir: string;
  signal?: AbortSignal;
}

const DEFAULT_DOCKERFILE = 'Dockerfile';
const canceled = () => new EngineError('Canceled', 'context canceled');

export async function openContext(body: Readable, opts: OpenContextOptions): Promise<OpenedContext> {
  if (opts.signal?.aborted) throw canceled();
  const root = await mkdtemp(join(opts.tmpDir, 'build-context-'));
  try {
    const dirs = await unpackBody(body, root, opts.signal);
    const name = opts.dockerfile || DEFAULT_DOCKERFILE;
    const found = await findDockerfile(root, name);
    const ignore = await readFileIn(root, '.dockerignore');
    if (ignore !== null) {
      let m: IgnoreMatcher;
      try {
        m = new IgnoreMatcher(parseDockerignore(ignore.toString('utf8')));
      } catch (err) {
        throw invalidArgument(`invalid .dockerignore: ${(err as Error).message}`, err);
      }
      if (!m.empty) await prune(root, '', m);
    }
    // Last: pruning touched directory mtimes, and a read-only directory could have blocked it.
    await dirs.apply(root);
    if (opts.signal?.aborted) throw canceled();
    let closed: Promise<void> | null = null;
    return {
      root,
      dockerfileName: found.name,
      dockerfile: found.text,
      close: () => (closed ??= rm(root, { recursive: true, force: true })),
    };
  } catch (err) {
    await rm(root, { recursive: true, force: true }).catch(() => {});
    if (opts.signal?.aborted) throw canceled();
    throw err;
  }
}

// ---- decompression ----

interface Decoded {
  chunks: AsyncIterable<Buffer>;
  /** Stops decoding and releases the body (on failure or abort). */
  stop(): void;
}

const startsWith = (head: Buffer, magic: number[]) => magic.every((b, i) => head[i] === b);

async function decode(body: Readable): Promise<Decoded> {
  const { head, all } = await peek(chunksOf(body), 6);
  const release = () => {
    if (!body.destroyed) body.destroy();
  };
  const viaZlib = (media: 'gzip' | 'zstd'): Decoded => {
    const d = decompress(all, media) as Readable;
    return { chunks: chunksOf(d), stop: () => (d.destroy(), release()) };
  };
  if (startsWith(head, [0x1f, 0x8b])) return viaZlib('gzip');
  if (startsWith(head, [0x28, 0xb5, 0x2f, 0xfd])) return viaZlib('zstd');
  if (startsWith(head, [0x42, 0x5a, 0x68])) return viaCommand('bzip2', all, release);
  if (startsWith(head, [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])) return viaCommand('xz', all, release);
  return { chunks: all, stop: release };
}

/** `<cmd> -dc` with the input piped through. The output ends only once it exited 0. */
function viaCommand(cmd: 'bzip2' | 'xz', src: AsyncIterable<Buffer>, release: () => void): Decoded {
  // As long as the context is large: no deadline. `stop` (the build ended early, the input failed)
  // SIGKILLs it; its exit status is read from the 'close' event, so the result is not awaited.
  const stop = new AbortController();
  const child = execa(cmd, ['-dc'], {
    ...EXECA_DEFAULTS,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: false,
    cancelSignal: stop.signal,
    killSignal: 'SIGKILL',
    reject: false,
  });
  // With buffer: false execa resumes a stdout nobody reads yet after a tick: keep it for out().
  child.stdout.pause();
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4096)));
  // EPIPE when the decoder quits on bad data: its exit status says why.
  child.stdin.on('error', () => {});
  const exited = new Promise<number | string>((resolve) => child.on('close', (code, sig) => resolve(code ?? sig ?? -1)));
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  spawned.catch(() => {});
  child.on('error', () => {}); // a later failure (of kill, say) shows in the exit status
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) stop.abort();
  };
  let feedErr: unknown;
  async function* out(): AsyncGenerator<Buffer> {
    try {
      await spawned.catch((err: Error) => {
        throw failedPrecondition(`cannot decompress the build context with ${cmd}: ${err.message}`, err);
      });
      pipeline(Readable.from(src, { objectMode: false }), child.stdin, (err) => {
        if (err && (err as NodeJS.ErrnoException).code !== 'EPIPE') {
          feedErr ??= err;
          kill();
        }
      });
      for await (const c of child.stdout) yield c as Buffer;
      const code = await exited;
      if (feedErr) throw feedErr;
      // Its first line says what is wrong ("bzip2: Data integrity error ..."); the rest is advice.
      if (code !== 0) throw invalidArgument(stderr.trim().split('\n')[0] || `${cmd}: exit ${code}`);
    } finally {
      kill();
    }
  }
  return { chunks: out(), stop: () => (kill(), release()) };
}

// ---- unpacking ----

/** Cleaned components of a tar name; a leading `/` is the root, `..` may not climb above it. */
function components(name: string, what: string): string[] {
  const out: string[] = [];
  for (const c of name.split('/')) {
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (out.length === 0) throw invalidArgument(`invalid build context: ${what} ${JSON.stringify(name)} escapes the context`);
      out.pop();
    } else out.push(c);
  }
  return out;
}

/** Errors of reading the archive (not of writing files) say the context is bad. */
function readError(err: unknown): unknown {
  if (err instanceof EngineError) {
    return err.code === 'InvalidArgument' ? invalidArgument(`invalid build context: ${err.message}`, err) : err;
  }
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (typeof code === 'string' && code.startsWith('Z_')) return invalidArgument(`invalid build context: ${(err as Error).message}`, err);
  return err;
}

async function* reading<T>(src: AsyncIterable<T>): AsyncGenerator<T> {
  const it = src[Symbol.asyncIterator]();
  try {
    for (;;) {
      let r: IteratorResult<T>;
      try {
        r = await it.next();
      } catch (err) {
        throw readError(err);
      }
      if (r.done) return;
      yield r.value;
    }
  } finally {
    await it.return?.();
  }
}

/** Directory modes and times, applied once everything below them is written. */
class DirTimes {
  private readonly pending = new Map<string, { mode: number; atime: number; mtime: number }>();
  set(rel: string, mode: number, atime: number, mtime: number): void {
    this.pending.set(rel, { mode, atime, mtime });
  }
  /** `rel` was replaced: neither it nor anything below it is that directory any more. */
  drop(rel: string): void {
    for (const k of this.pending.keys()) if (k === rel || k.startsWith(`${rel}/`)) this.pending.delete(k);
  }
  async apply(root: string): Promise<void> {
    const deepestFirst = [...this.pending].sort(([a], [b]) => b.split('/').length - a.split('/').length);
    for (const [rel, d] of deepestFirst) {
      const p = join(root, rel);
      const st = await lstatOrNull(p); // pruned by .dockerignore
      if (!st?.isDirectory()) continue;
      await chmod(p, d.mode);
      await utimes(p, d.atime, d.mtime);
    }
  }
}

class Unpacker {
  private readonly root: string;
  /** Relative directories known to be real directories (no symlink on the way). */
  private readonly known = new Set<string>(['']);
  readonly dirs = new DirTimes();

  constructor(root: string) {
    this.root = root;
  }

  /** The absolute path of directory `comps`, creating what is missing; never through a symlink. */
  private async dir(comps: string[], create: boolean, entry: string): Promise<string> {
    for (let i = 1; i <= comps.length; i++) {
      const rel = comps.slice(0, i).join('/');
      if (this.known.has(rel)) continue;
      const p = join(this.root, rel);
      const st = await lstatOrNull(p);
      if (st === null) {
        if (!create) throw invalidArgument(`invalid build context: ${JSON.stringify(entry)}: ${rel} does not exist`);
        await mkdir(p, 0o755);
      } else if (st.isSymbolicLink()) {
        throw invalidArgument(`invalid build context: ${JSON.stringify(entry)} is below the symlink ${rel}`);
      } else if (!st.isDirectory()) {
        throw invalidArgument(`invalid build context: ${JSON.stringify(entry)}: ${rel} is not a directory`);
      }
      this.known.add(rel);
    }
    return join(this.root, ...comps);
  }

  async entry(e: TarEntry): Promise<void> {
    const h = e.header;
    const comps = components(h.name, 'entry');
    if (comps.length === 0) return; // the root itself stays as made
    if (h.type !== 'dir' && h.type !== 'file' && h.type !== 'symlink' && h.type !== 'link') return; // devices, fifos
    const rel = comps.join('/');
    const target = join(await this.dir(comps.slice(0, -1), true, h.name), comps[comps.length - 1]!);
    const existing = await lstatOrNull(target);
    if (existing && !(existing.isDirectory() && h.type === 'dir')) {
      await rm(target, { recursive: true, force: true });
      this.dirs.drop(rel);
      for (const k of this.known) if (k === rel || k.startsWith(`${rel}/`)) this.known.delete(k);
    }
    // Permission bits and the sticky bit; no setuid or setgid on files the daemon keeps as root's.
    const mode = h.mode & 0o1777;
    const atime = h.atime ?? h.mtime;
    switch (h.type) {
      case 'dir':
        if (!existing?.isDirectory()) await mkdir(target, 0o700);
        this.dirs.set(rel, mode, atime, h.mtime);
        return;
      case 'file': {
        const fh = await open(target, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
        try {
          for await (const c of reading(e.body)) await fh.write(c);
          await fh.chmod(mode);
          await fh.utimes(atime, h.mtime);
        } finally {
          await fh.close();
        }
        return;
      }
      case 'symlink':
        await symlink(h.linkname, target);
        await lutimes(target, atime, h.mtime);
        return;
      case 'link': {
        const lc = components(h.linkname, 'hardlink target');
        if (lc.length === 0) throw invalidArgument(`invalid build context: hardlink ${JSON.stringify(h.name)} has no target`);
        const src = join(await this.dir(lc.slice(0, -1), false, h.name), lc[lc.length - 1]!);
        const st = await lstatOrNull(src);
        if (!st || st.isDirectory()) {
          throw invalidArgument(`invalid build context: hardlink ${JSON.stringify(h.name)} to ${JSON.stringify(h.linkname)}, which is not a file of the context`);
        }
        // link(2) does not follow a symlink source: the link is to the symlink itself.
        await link(src, target);
      }
    }
  }
}

async function unpackBody(body: Readable, root: string, signal?: AbortSignal): Promise<DirTimes> {
  let decoded: Decoded | null = null;
  let aborted = false;
  const onAbort = () => {
    aborted = true;
    if (decoded) decoded.stop();
    else body.destroy(canceled());
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    decoded = await decode(body);
    if (aborted) decoded.stop();
    const u = new Unpacker(root);
    for await (const e of reading(readTar(decoded.chunks))) {
      if (signal?.aborted) throw canceled();
      await u.entry(e);
    }
    return u.dirs;
  } catch (err) {
    decoded?.stop();
    if (!body.destroyed) body.destroy();
    throw err;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

// ---- Dockerfile and .dockerignore ----

/**
 * The contents of regular file `rel` of the context, symlinks followed but kept inside the root
 * as a chroot would; null when there is none.
 */
async function readFileIn(root: string, rel: string): Promise<Buffer | null> {
  let p: string;
  try {
    p = await resolveInRoot(root, rel);
  } catch {
    return null; // a symlink loop: no such file
  }
  const st = await lstatOrNull(p);
  if (!st?.isFile()) return null;
  return readFile(p);
}

async function findDockerfile(root: string, name: string): Promise<{ name: string; text: string }> {
  // As the reference: a `..` cannot leave the context; it stops at the root.
  const comps: string[] = [];
  for (const c of name.split('/')) {
    if (c === '..') comps.pop();
    else if (c !== '' && c !== '.') comps.push(c);
  }
  const rel = comps.join('/');
  for (const candidate of rel === DEFAULT_DOCKERFILE ? [rel, rel.toLowerCase()] : [rel]) {
    const text = candidate === '' ? null : await readFileIn(root, candidate);
    if (text !== null) return { name: candidate, text: text.toString('utf8') };
  }
  throw invalidArgument(`Cannot locate specified Dockerfile: ${name}`);
}

/** Remove what the .dockerignore matches; walk into an excluded directory only if something below may come back. */
async function prune(root: string, dirRel: string, m: IgnoreMatcher): Promise<void> {
  const dirAbs = join(root, dirRel);
  for (const ent of await readdir(dirAbs, { withFileTypes: true })) {
    const rel = dirRel ? `${dirRel}/${ent.name}` : ent.name;
    const abs = join(dirAbs, ent.name);
    if (!m.matches(rel)) {
      if (ent.isDirectory()) await prune(root, rel, m);
    } else if (ent.isDirectory() && m.canReincludeUnder(rel)) {
      await prune(root, rel, m);
      // The directory itself stays only as the parent of what was re-included.
      if ((await readdir(abs)).length === 0) await rmdir(abs);
    } else {
      await rm(abs, { recursive: true, force: true });
    }
  }
}
