// The journald driver, as the reference's daemon/logger/journald with go-systemd's journal.Send:
// one entry per message, sent as one datagram in the journal's native protocol to its socket
// (/run/systemd/journal/socket; ENGINE_JOURNAL_SOCKET names another, e.g. a test's receiver).
// Each entry: PRIORITY (6 for stdout, 3 for stderr), MESSAGE (the line, without its newline), then
// CONTAINER_ID, CONTAINER_ID_FULL, CONTAINER_NAME, CONTAINER_TAG, IMAGE_NAME, SYSLOG_IDENTIFIER,
// the `labels`/`env` options' fields (their names upper-cased, other characters `_`), and for the
// pieces of a long line CONTAINER_PARTIAL_ID/_ORDINAL/_LAST (and _MESSAGE=true but on the last).
// A field is `NAME=value\n`, or, when the value holds a newline, `NAME\n` + its length as 64-bit
// little-endian + the value + `\n`. No socket there: "journald is not enabled on this host", as the
// reference. Lines are cut at 16 KiB by the sink, so an entry always fits one datagram (go-systemd's
// fallback for larger ones, a memfd passed over the socket, is never needed).
import { statSync } from 'node:fs';
import { openUnixDgram } from '../sys/unix-dgram.ts';
import { dgramConn, type Conn } from './dgram-conn.ts';
import type { ContainerLogInfo } from './info.ts';
import { parseLogTag, extraAttributes } from './info.ts';
import type { LogMessage, RemoteDriver } from './remote.ts';

export const JOURNAL_SOCKET = '/run/systemd/journal/socket';
const ATTRS = new Set(['env', 'env-regex', 'labels', 'labels-regex', 'tag']);
const PRI_ERR = 3;
const PRI_INFO = 6;

/** The journal's socket: ENGINE_JOURNAL_SOCKET when set, else systemd's. */
export function journalSocket(): string {
  return process.env.ENGINE_JOURNAL_SOCKET || JOURNAL_SOCKET;
}

export function validateJournald(cfg: Record<string, string>): void {
  for (const k of Object.keys(cfg)) if (!ATTRS.has(k)) throw new Error(`unknown log opt '${k}' for journald log driver`);
}

/** A label's or variable's name as a journal field (the reference's sanitizeKeyMod). */
export function journalFieldName(s: string): string {
  let n = '';
  for (const ch of s) {
    let v = ch;
    if (v >= 'a' && v <= 'z') v = v.toUpperCase();
    else if ((v > 'Z' || v < 'A') && (v > '9' || v < '0')) v = '_';
    if (!(n === '' && v === '_')) n += v;
  }
  return n;
}

/** One entry in the native protocol (go-systemd's appendVariable for each field, in order). */
export function journalEntry(fields: ReadonlyArray<readonly [string, string]>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of fields) {
    if (!value.includes('\n')) {
      parts.push(Buffer.from(`${name}=${value}\n`));
      continue;
    }
    const v = Buffer.from(value);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(v.length));
    parts.push(Buffer.from(`${name}\n`), len, v, Buffer.from('\n'));
  }
  return Buffer.concat(parts);
}

export async function newJournald(info: ContainerLogInfo, config: Record<string, string>, socket = journalSocket()): Promise<RemoteDriver> {
  try {
    if (!statSync(socket).isSocket()) throw new Error('not a socket');
  } catch {
    throw new Error('journald is not enabled on this host');
  }
  const tag = parseLogTag(info, config);
  const vars: Array<[string, string]> = [
    ['CONTAINER_ID', info.id.slice(0, 12)],
    ['CONTAINER_ID_FULL', info.id],
    ['CONTAINER_NAME', info.name.replace(/^\//, '')],
    ['CONTAINER_TAG', tag],
    ['IMAGE_NAME', info.imageName],
    ['SYSLOG_IDENTIFIER', tag],
  ];
  for (const [k, v] of Object.entries(extraAttributes(info, config, journalFieldName))) {
    const at = vars.findIndex(([n]) => n === k);
    if (at >= 0) vars[at] = [k, v];
    else vars.push([k, v]);
  }
  let conn: Conn | null = null;
  const dial = (): Conn => {
    try {
      return dgramConn(openUnixDgram(socket), socket);
    } catch (err) {
      throw new Error(`journald: dial unixgram ${socket}: ${(err as Error).message}`);
    }
  };
  return {
    name: 'journald',
    async send(msg: LogMessage): Promise<void> {
      const fields: Array<readonly [string, string]> = [
        ['PRIORITY', String(msg.source === 'stderr' ? PRI_ERR : PRI_INFO)],
        ['MESSAGE', msg.line.toString()],
        ...vars,
      ];
      if (msg.partial) {
        fields.push(['CONTAINER_PARTIAL_ID', msg.partial.id], ['CONTAINER_PARTIAL_ORDINAL', String(msg.partial.ordinal)], ['CONTAINER_PARTIAL_LAST', String(msg.partial.last)]);
        if (!msg.partial.last) fields.push(['CONTAINER_PARTIAL_MESSAGE', 'true']);
      }
      if (conn?.broken) {
        conn.close();
        conn = null;
      }
      conn ??= dial();
      await conn.write(journalEntry(fields));
    },
    async close(): Promise<void> {
      conn?.close();
      conn = null;
    },
  };
}
