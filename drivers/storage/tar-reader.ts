// A streaming tar reader (ustar, GNU long names, PAX). Hand-written rather than tar-stream because
// layer unpacking needs PAX values as raw bytes: SCHILY.xattr.* values such as security.capability
// are binary, and decoding them as UTF-8 would corrupt them.
import { invalidArgument } from '../../lib/errors.ts';

export type TarType = 'file' | 'link' | 'symlink' | 'char' | 'block' | 'dir' | 'fifo' | 'other';

export interface TarHeader {
  name: string;
  type: TarType;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  /** Seconds since the epoch (fractional when a PAX mtime says so). */
  mtime: number;
  atime?: number;
  linkname: string;
  devmajor: number;
  devminor: number;
  xattrs: Map<string, Buffer>;
}

export interface TarEntry {
  header: TarHeader;
  /** The entry's data; read it fully or leave it: the reader skips what is left before the next entry. */
  body: AsyncIterable<Buffer>;
}

const BLOCK = 512;

/** Reads exact byte counts from an async iterable of chunks. */
class ByteReader {
  private buf: Buffer = Buffer.alloc(0);
  private done = false;
  private readonly it: AsyncIterator<Buffer>;
  constructor(src: AsyncIterable<Buffer>) {
    this.it = src[Symbol.asyncIterator]();
  }

  private async more(): Promise<boolean> {
    if (this.done) return false;
    const r = await this.it.next();
    if (r.done) {
      this.done = true;
      return false;
    }
    const chunk = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value as Uint8Array);
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    return true;
  }

  /** Exactly n bytes, or null at a clean end of input. */
  async read(n: number): Promise<Buffer | null> {
    while (this.buf.length < n) {
      if (!(await this.more())) {
        if (this.buf.length === 0) return null;
        throw invalidArgument('unexpected EOF in tar archive');
      }
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }

  async *take(n: number): AsyncGenerator<Buffer> {
    let left = n;
    while (left > 0) {
      if (this.buf.length === 0 && !(await this.more())) throw invalidArgument('unexpected EOF in tar archive');
      const k = Math.min(left, this.buf.length);
      const out = this.buf.subarray(0, k);
      this.buf = this.buf.subarray(k);
      left -= k;
      yield out;
    }
  }

  async skip(n: number): Promise<void> {
    for await (const _ of this.take(n)) {
      // discard
    }
  }

  /** Skips n bytes; false when the input ends before the first of them (a clean end), true when skipped. */
  async skipOrEnd(n: number): Promise<boolean> {
    if (n === 0) return true;
    if (this.buf.length === 0 && !(await this.more())) return false;
    await this.skip(n);
    return true;
  }

  /** Read to the end of input (the bytes after the end-of-archive marker still count for the digest). */
  async drain(): Promise<void> {
    this.buf = Buffer.alloc(0);
    while (await this.more()) this.buf = Buffer.alloc(0);
  }
}

function cstr(b: Buffer, off: number, len: number): string {
  const f = b.subarray(off, off + len);
  const z = f.indexOf(0);
  return (z === -1 ? f : f.subarray(0, z)).toString('utf8');
}

function num(b: Buffer, off: number, len: number): number {
  const f = b.subarray(off, off + len);
  if (f[0]! & 0x80) {
    // GNU base-256: big-endian two's complement with the top bit as marker.
    let v = f[0]! & 0x7f;
    for (let i = 1; i < f.length; i++) v = v * 256 + f[i]!;
    return v;
  }
  const s = f.toString('latin1').replace(/[\0 ]+$/g, '').replace(/^[\0 ]+/, '');
  if (s === '') return 0;
  const v = parseInt(s, 8);
  if (Number.isNaN(v)) throw invalidArgument(`invalid tar header number ${JSON.stringify(s)}`);
  return v;
}

function checksumOk(b: Buffer): boolean {
  const want = num(b, 148, 8);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : b[i]!;
  return sum === want;
}

function typeOf(flag: number): TarType | 'pax' | 'paxGlobal' | 'gnuLongName' | 'gnuLongLink' {
  switch (String.fromCharCode(flag)) {
    case '\0': case '0': case '7': return 'file';
    case '1': return 'link';
    case '2': return 'symlink';
    case '3': return 'char';
    case '4': return 'block';
    case '5': return 'dir';
    case '6': return 'fifo';
    case 'x': return 'pax';
    case 'g': return 'paxGlobal';
    case 'L': return 'gnuLongName';
    case 'K': return 'gnuLongLink';
    default: return 'other';
  }
}

/** PAX records ("<len> <key>=<value>\n"), values kept as raw bytes. */
export function parsePax(buf: Buffer): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  let off = 0;
  while (off < buf.length) {
    const sp = buf.indexOf(0x20, off);
    if (sp === -1) break;
    const len = parseInt(buf.subarray(off, sp).toString('latin1'), 10);
    if (!Number.isFinite(len) || len <= 0 || off + len > buf.length) throw invalidArgument('invalid PAX record in tar archive');
    const rec = buf.subarray(sp + 1, off + len - 1);
    const eq = rec.indexOf(0x3d);
    if (eq === -1) throw invalidArgument('invalid PAX record in tar archive');
    out.set(rec.subarray(0, eq).toString('utf8'), rec.subarray(eq + 1));
    off += len;
  }
  return out;
}

function applyPax(h: TarHeader, pax: Map<string, Buffer>): void {
  for (const [k, v] of pax) {
    const s = () => v.toString('utf8');
    if (k === 'path') h.name = s();
    else if (k === 'linkpath') h.linkname = s();
    else if (k === 'size') h.size = Number(s());
    else if (k === 'uid') h.uid = Number(s());
    else if (k === 'gid') h.gid = Number(s());
    else if (k === 'mtime') h.mtime = Number(s());
    else if (k === 'atime') h.atime = Number(s());
    else if (k.startsWith('SCHILY.xattr.')) h.xattrs.set(k.slice('SCHILY.xattr.'.length), Buffer.from(v));
    else if (k.startsWith('LIBARCHIVE.xattr.')) {
      h.xattrs.set(decodeURIComponent(k.slice('LIBARCHIVE.xattr.'.length)), Buffer.from(s(), 'base64'));
    }
  }
}

const padOf = (n: number) => (BLOCK - (n % BLOCK)) % BLOCK;

/** Entries of a tar stream. Reads the input to its very end, even past the end-of-archive marker. */
export async function* readTar(src: AsyncIterable<Buffer>): AsyncGenerator<TarEntry> {
  const r = new ByteReader(src);
  let globalPax = new Map<string, Buffer>();
  let pax: Map<string, Buffer> | null = null;
  let longName: string | null = null;
  let longLink: string | null = null;
  for (;;) {
    const block = await r.read(BLOCK);
    if (block === null) break;
    if (block.every((b) => b === 0)) {
      await r.drain();
      break;
    }
    if (!checksumOk(block)) throw invalidArgument('invalid tar header: checksum mismatch');
    const kind = typeOf(block[156]!);
    let size = num(block, 124, 12);
    if (kind === 'pax' || kind === 'paxGlobal' || kind === 'gnuLongName' || kind === 'gnuLongLink') {
      if (size > 16 << 20) throw invalidArgument('tar metadata entry too large');
      const data = size > 0 ? await r.read(size) : Buffer.alloc(0);
      if (data === null) throw invalidArgument('unexpected EOF in tar archive');
      await r.skip(padOf(size));
      if (kind === 'pax') pax = parsePax(data);
      else if (kind === 'paxGlobal') globalPax = new Map([...globalPax, ...parsePax(data)]);
      else if (kind === 'gnuLongName') longName = cstr(data, 0, data.length);
      else longLink = cstr(data, 0, data.length);
      continue;
    }
    const magic = block.subarray(257, 263).toString('latin1');
    let name = cstr(block, 0, 100);
    if (magic === 'ustar\0') {
      const prefix = cstr(block, 345, 155);
      if (prefix) name = `${prefix}/${name}`;
    }
    const header: TarHeader = {
      name,
      type: kind,
      mode: num(block, 100, 8),
      uid: num(block, 108, 8),
      gid: num(block, 116, 8),
      size,
      mtime: num(block, 136, 12),
      linkname: cstr(block, 157, 100),
      devmajor: magic.startsWith('ustar') ? num(block, 329, 8) : 0,
      devminor: magic.startsWith('ustar') ? num(block, 337, 8) : 0,
      xattrs: new Map(),
    };
    applyPax(header, globalPax);
    if (pax) applyPax(header, pax);
    if (longName !== null && !pax?.has('path')) header.name = longName;
    if (longLink !== null && !pax?.has('linkpath')) header.linkname = longLink;
    pax = null;
    longName = null;
    longLink = null;
    size = header.size;
    // As in Go's archive/tar, header-only types carry no data whatever their size field says.
    const dataSize = header.type === 'file' || header.type === 'other' ? size : 0;
    let consumed = 0;
    const body = (async function* () {
      for await (const c of r.take(dataSize)) {
        consumed += c.length;
        yield c;
      }
    })();
    yield { header, body };
    // Whatever the consumer left unread.
    if (consumed < dataSize) {
      await body.return(undefined);
      await r.skip(dataSize - consumed);
    }
    // As Go's archive/tar (tryReadFull): input that ends right after the last entry's data, with
    // neither its padding nor the end-of-archive blocks, is a clean end. The docker CLI sends such a
    // tar when it adds a Dockerfile from outside the context (`build -f /elsewhere/Dockerfile ctx`).
    if (!(await r.skipOrEnd(padOf(dataSize)))) break;
  }
}
