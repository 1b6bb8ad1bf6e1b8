// Tar headers for layer export: ustar, with a PAX record for whatever ustar cannot hold (long
// names, large ids or sizes, and xattrs, whose values are written as raw bytes).
import type { TarType } from './tar-reader.ts';

export interface TarWriteHeader {
  name: string;
  type: Exclude<TarType, 'other'>;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtime: number;
  linkname?: string;
  devmajor?: number;
  devminor?: number;
  xattrs?: Map<string, Buffer>;
}

const BLOCK = 512;
const FLAG: Record<TarWriteHeader['type'], string> = {
  file: '0', link: '1', symlink: '2', char: '3', block: '4', dir: '5', fifo: '6',
};

function writeStr(b: Buffer, off: number, len: number, s: string): void {
  Buffer.from(s, 'utf8').copy(b, off, 0, len);
}

function writeOctal(b: Buffer, off: number, len: number, v: number): void {
  writeStr(b, off, len, `${Math.max(0, Math.floor(v)).toString(8).padStart(len - 1, '0')}\0`);
}

function paxRecord(key: string, value: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(` ${key}=`, 'utf8'), value, Buffer.from('\n')]);
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return Buffer.concat([Buffer.from(String(len)), body]);
}

function ustar(h: { name: string; flag: string; mode: number; uid: number; gid: number; size: number; mtime: number; linkname: string; devmajor: number; devminor: number }): Buffer {
  const b = Buffer.alloc(BLOCK);
  writeStr(b, 0, 100, h.name);
  writeOctal(b, 100, 8, h.mode & 0o7777);
  writeOctal(b, 108, 8, h.uid);
  writeOctal(b, 116, 8, h.gid);
  writeOctal(b, 124, 12, h.size);
  writeOctal(b, 136, 12, h.mtime);
  b.write('        ', 148, 'latin1');
  b.write(h.flag, 156, 'latin1');
  writeStr(b, 157, 100, h.linkname);
  b.write('ustar\x0000', 257, 'latin1');
  writeOctal(b, 329, 8, h.devmajor);
  writeOctal(b, 337, 8, h.devminor);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += b[i]!;
  b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return b;
}

export const padding = (size: number): Buffer => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
export const endOfArchive = (): Buffer => Buffer.alloc(BLOCK * 2);

/** The header block(s) for one entry: an optional PAX header entry, then the ustar header. */
export function encodeHeader(h: TarWriteHeader): Buffer {
  const records: Buffer[] = [];
  const fits = (s: string) => Buffer.byteLength(s) <= 100 && /^[\x20-\x7e]*$/.test(s);
  const MAX7 = 0o7777777;
  const MAX11 = 0o77777777777;
  if (!fits(h.name)) records.push(paxRecord('path', Buffer.from(h.name)));
  if (h.linkname && !fits(h.linkname)) records.push(paxRecord('linkpath', Buffer.from(h.linkname)));
  if (h.uid > MAX7) records.push(paxRecord('uid', Buffer.from(String(h.uid))));
  if (h.gid > MAX7) records.push(paxRecord('gid', Buffer.from(String(h.gid))));
  if (h.size > MAX11) records.push(paxRecord('size', Buffer.from(String(h.size))));
  for (const [k, v] of [...(h.xattrs ?? new Map<string, Buffer>())].sort(([a], [b]) => (a < b ? -1 : 1))) {
    records.push(paxRecord(`SCHILY.xattr.${k}`, v));
  }
  const main = ustar({
    name: h.name,
    flag: FLAG[h.type],
    mode: h.mode,
    uid: Math.min(h.uid, MAX7),
    gid: Math.min(h.gid, MAX7),
    size: Math.min(h.size, MAX11),
    mtime: h.mtime,
    linkname: h.linkname ?? '',
    devmajor: h.devmajor ?? 0,
    devminor: h.devminor ?? 0,
  });
  if (records.length === 0) return main;
  const pax = Buffer.concat(records);
  const base = h.name.replace(/\/+$/, '').split('/').pop() ?? '';
  const paxHeader = ustar({
    name: `PaxHeaders.0/${base}`.slice(0, 100),
    flag: 'x', mode: 0o644, uid: 0, gid: 0, size: pax.length, mtime: h.mtime, linkname: '', devmajor: 0, devminor: 0,
  });
  return Buffer.concat([paxHeader, pax, padding(pax.length), main]);
}
