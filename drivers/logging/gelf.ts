// The gelf driver, as the reference's daemon/logger/gelf with Graylog's go-gelf writer: one JSON
// object per line, {"version":"1.1","host":...,"short_message":...,"timestamp":...,"level":6|3,
// then the container's "_" fields (sorted)}. UDP: compressed (gzip by default, level 1; zlib or
// none) and sent in chunks of at most 1420 bytes when larger (magic 0x1e 0x0f, 8-byte id,
// sequence, count; 128 chunks at most). TCP: uncompressed, each message ended by a NUL byte.
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect as netConnect, type Socket } from 'node:net';
import { hostname as osHostname } from 'node:os';
import { deflateSync, gzipSync } from 'node:zlib';
import { dialError, extraAttributes, goAtoi, goTimeJson, goUrlParse, parseLogTag, splitHostPort, type ContainerLogInfo } from './info.ts';
import type { LogMessage, RemoteDriver } from './remote.ts';

export const GELF_CHUNK_SIZE = 1420;
const CHUNK_HEADER = 12;
const CHUNK_DATA = GELF_CHUNK_SIZE - CHUNK_HEADER;
const ATTRS = new Set(['env', 'env-regex', 'labels', 'labels-regex', 'tag']);

export function parseGelfAddress(address: string | undefined): { scheme: string; host: string } {
  if (!address) throw new Error('gelf-address is a required parameter');
  const u = goUrlParse(address);
  if (u.scheme !== 'udp' && u.scheme !== 'tcp') throw new Error('gelf: endpoint needs to be TCP or UDP');
  try {
    splitHostPort(u.host);
  } catch {
    throw new Error('gelf: please provide gelf-address as proto://host:port');
  }
  return { scheme: u.scheme, host: u.host };
}

export function validateGelf(cfg: Record<string, string>): void {
  const address = parseGelfAddress(cfg['gelf-address']);
  for (const [key, val] of Object.entries(cfg)) {
    if (ATTRS.has(key) || key === 'gelf-address') continue;
    if (key === 'gelf-compression-level') {
      if (address.scheme !== 'udp') throw new Error('compression is only supported on UDP');
      const i = /^[+-]?\d+$/.test(val) ? Number.parseInt(val, 10) : NaN;
      if (!(i >= -1 && i <= 9)) throw new Error(`unknown value "${val}" for log opt "${key}" for gelf log driver`);
    } else if (key === 'gelf-compression-type') {
      if (address.scheme !== 'udp') throw new Error('compression is only supported on UDP');
      if (val !== 'gzip' && val !== 'zlib' && val !== 'none') throw new Error(`unknown value "${val}" for log opt "${key}" for gelf log driver`);
    } else if (key === 'gelf-tcp-max-reconnect' || key === 'gelf-tcp-reconnect-delay') {
      if (address.scheme !== 'tcp') throw new Error(`"${key}" is only valid for TCP`);
      const i = /^[+-]?\d+$/.test(val) ? Number.parseInt(val, 10) : NaN;
      if (!(i >= 0)) throw new Error(`"${key}" must be a positive integer`);
    } else {
      throw new Error(`unknown log opt "${key}" for gelf log driver`);
    }
  }
}

/** encoding/json's escaping of HTML characters. */
function goJson(v: unknown): string {
  return JSON.stringify(v).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The container's fields of every message, as a JSON object body without braces. */
export function gelfExtra(info: ContainerLogInfo, config: Record<string, string>): string {
  const extra: Record<string, string> = {
    _container_id: info.id,
    _container_name: info.name.replace(/^\//, ''),
    _image_id: info.imageId,
    _image_name: info.imageName,
    _command: [info.path, ...info.args].join(' '),
    _tag: parseLogTag(info, config),
    _created: goTimeJson(info.created),
    ...extraAttributes(info, config, (k) => (k[0] === '_' ? k : `_${k}`)),
  };
  const keys = Object.keys(extra).sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : a === b ? 0 : 1));
  return keys.map((k) => `${goJson(k)}:${goJson(extra[k])}`).join(',');
}

export function gelfMessage(hostname: string, msg: LogMessage, rawExtra: string): Buffer {
  const level = msg.source === 'stderr' ? 3 : 6;
  const ts = Math.trunc(msg.timestamp.getTime()) / 1000;
  return Buffer.from(`{"version":"1.1","host":${goJson(hostname)},"short_message":${goJson(msg.line.toString('utf8'))},"timestamp":${ts},"level":${level}${rawExtra ? `,${rawExtra}` : ''}}`);
}

/** The UDP datagrams of one (compressed) message. */
export function gelfChunks(z: Buffer): Buffer[] {
  if (z.length <= GELF_CHUNK_SIZE) return [z];
  const n = Math.floor(z.length / CHUNK_DATA) + 1;
  if (n > 128) throw new Error(`msg too large, would need ${n} chunks`);
  const id = randomBytes(8);
  const out: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const data = z.subarray(i * CHUNK_DATA, Math.min(z.length, (i + 1) * CHUNK_DATA));
    out.push(Buffer.concat([Buffer.from([0x1e, 0x0f]), id, Buffer.from([i, n]), data]));
  }
  return out;
}

export async function newGelf(info: ContainerLogInfo, config: Record<string, string>, o: { hostname?: string } = {}): Promise<RemoteDriver> {
  const address = parseGelfAddress(config['gelf-address']);
  const hostname = o.hostname ?? osHostname();
  const rawExtra = gelfExtra(info, config);
  const { host, port } = splitHostPort(address.host);
  if (address.scheme === 'udp') {
    const type = config['gelf-compression-type'] ?? 'gzip';
    if (type !== 'gzip' && type !== 'zlib' && type !== 'none') throw new Error(`gelf: invalid compression type "${type}"`);
    let level = 1;
    if (config['gelf-compression-level'] !== undefined) {
      try {
        level = goAtoi(config['gelf-compression-level']);
      } catch (err) {
        throw new Error(`gelf: invalid compression level ${config['gelf-compression-level']}, err ${(err as Error).message}`);
      }
    }
    const sock = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    await new Promise<void>((res, rej) => {
      sock.once('error', (err: NodeJS.ErrnoException) => {
        sock.close();
        rej(new Error(`gelf: cannot connect to GELF endpoint: ${address.host} ${dialError('udp', address.host, err).message}`));
      });
      sock.connect(Number(port), host || undefined, () => {
        sock.removeAllListeners('error');
        res();
      });
    });
    sock.on('error', () => {});
    return {
      name: 'gelf',
      async send(msg) {
        if (msg.line.length === 0) return;
        const m = gelfMessage(hostname, msg, rawExtra);
        const z = type === 'gzip' ? gzipSync(m, { level }) : type === 'zlib' ? deflateSync(m, { level }) : m;
        try {
          for (const d of gelfChunks(z)) await new Promise<void>((res, rej) => sock.send(d, (err) => (err ? rej(err) : res())));
        } catch (err) {
          throw new Error(`gelf: cannot send GELF message: ${(err as Error).message}`);
        }
      },
      async close() {
        sock.close();
      },
    };
  }
  // TCP
  const maxReconnect = config['gelf-tcp-max-reconnect'] !== undefined ? Number(config['gelf-tcp-max-reconnect']) : 3;
  const delayS = config['gelf-tcp-reconnect-delay'] !== undefined ? Number(config['gelf-tcp-reconnect-delay']) : 1;
  const dial = () => new Promise<Socket>((res, rej) => {
    const s = netConnect({ host, port: Number(port) });
    s.once('connect', () => {
      s.removeAllListeners('error');
      s.on('error', () => {});
      res(s);
    });
    s.once('error', (err: NodeJS.ErrnoException) => {
      s.destroy();
      rej(dialError('tcp', address.host, err));
    });
  });
  let conn: Socket | null;
  try {
    conn = await dial();
  } catch (err) {
    throw new Error(`gelf: cannot connect to GELF endpoint: ${address.host} ${(err as Error).message}`);
  }
  const writeOnce = (b: Buffer) => new Promise<void>((res, rej) => {
    if (!conn || conn.destroyed || !conn.writable) return rej(new Error('connection closed'));
    conn.write(b, (err) => (err ? rej(err) : res()));
  });
  return {
    name: 'gelf',
    async send(msg) {
      if (msg.line.length === 0) return;
      const b = Buffer.concat([gelfMessage(hostname, msg, rawExtra), Buffer.from([0])]);
      let lastErr: unknown;
      for (let i = 0; i <= maxReconnect; i++) {
        try {
          if (!conn || conn.destroyed || !conn.writable) conn = await dial();
          return await writeOnce(b);
        } catch (err) {
          lastErr = err;
          conn?.destroy();
          conn = null;
          if (i < maxReconnect) await new Promise((r) => setTimeout(r, delayS * 1000));
        }
      }
      throw new Error(`gelf: cannot send GELF message: ${(lastErr as Error).message}`);
    },
    async close() {
      const c = conn;
      conn = null;
      if (c) await new Promise<void>((res) => c.end(res));
    },
  };
}
