// An independent decoder of the `local` log format (the reference's daemon/logger/local): each
// record a 4-byte big-endian length, a protobuf LogEntry, the length again; LogEntry's wire format
// read by hand, so the tests do not lean on the daemon's own decoder.
import assert from 'node:assert/strict';

export interface Rec {
  source: string;
  timeNano: bigint;
  line: string;
  partial: boolean;
}

function varint(b: Buffer, p: { i: number }): bigint {
  let v = 0n;
  let shift = 0n;
  for (;;) {
    const c = b[p.i++]!;
    v |= BigInt(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
    shift += 7n;
  }
}

/** LogEntry's fields 1-4 from its wire format (length-delimited and varint fields only). */
export function decodeEntry(b: Buffer): Rec {
  const r: Rec = { source: '', timeNano: 0n, line: '', partial: false };
  const p = { i: 0 };
  while (p.i < b.length) {
    const key = Number(varint(b, p));
    if ((key & 7) === 0) {
      const v = varint(b, p);
      if (key >> 3 === 2) r.timeNano = v;
      if (key >> 3 === 4) r.partial = v !== 0n;
    } else if ((key & 7) === 2) {
      const n = Number(varint(b, p));
      const v = b.subarray(p.i, p.i + n);
      p.i += n;
      if (key >> 3 === 1) r.source = v.toString();
      if (key >> 3 === 3) r.line = v.toString();
    } else throw new Error(`wire type ${key & 7}`);
  }
  return r;
}

/** Records of a local file: 4-byte big-endian length, LogEntry, the length again. */
export function decodeFile(buf: Buffer): Rec[] {
  const out: Rec[] = [];
  let i = 0;
  while (i < buf.length) {
    const n = buf.readUInt32BE(i);
    assert.equal(buf.readUInt32BE(i + 4 + n), n, 'trailing length repeats the leading one');
    out.push(decodeEntry(buf.subarray(i + 4, i + 4 + n)));
    i += n + 8;
  }
  return out;
}
