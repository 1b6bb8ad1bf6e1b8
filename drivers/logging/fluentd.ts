// The fluentd driver, as the reference's daemon/logger/fluentd with fluent-logger-golang: the
// forward protocol's Message mode over tcp, tls or a unix socket, one msgpack array per line:
//   [tag, time, {container_id, container_name, source, log, ...labels/env}, {}]
// (time: integer seconds, or EventTime with fluentd-sub-second-precision; the 4th element is the
// option map, {"chunk": id} with fluentd-request-ack, whose ack the driver then waits for).
// Synchronous (default): the connection is made at start (a failure fails the start) and a send
// reconnects with retries (fluentd-retry-wait doubling by 1.5, fluentd-max-retries). With
// fluentd-async: the start does not connect; messages wait in a buffer of fluentd-buffer-limit
// messages (as the Go library's channel) and are dropped with an error when it is full.
import { Decoder, encode, ExtData } from '@msgpack/msgpack';
import { randomBytes } from 'node:crypto';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { ramInBytes } from '../../lib/units.ts';
import { dialError, extraAttributes, goParseBool, goParseDuration, goParseUint, goUrlParse, parseLogTag, type ContainerLogInfo } from './info.ts';
import type { LogMessage, RemoteDriver } from './remote.ts';

const ATTRS = new Set(['env', 'env-regex', 'labels', 'labels-regex', 'tag']);
const KEYS = new Set([
  'fluentd-address', 'fluentd-async', 'fluentd-async-reconnect-interval', 'fluentd-buffer-limit', 'fluentd-max-retries',
  'fluentd-request-ack', 'fluentd-retry-wait', 'fluentd-sub-second-precision', 'fluentd-write-timeout', 'fluentd-read-timeout',
]);
const MAX_INT32 = 2 ** 31 - 1;
const MAX_RETRY_WAIT_MS = 60_000;

export interface FluentLocation {
  protocol: string;
  host: string;
  port: number;
  path: string;
}

export function parseFluentAddress(address: string | undefined): FluentLocation {
  if (!address) return { protocol: 'tcp', host: '127.0.0.1', port: 24224, path: '' };
  const full = address.includes('://') ? address : `tcp://${address}`;
  const u = goUrlParse(full);
  if (u.scheme === 'unix') {
    if (u.path.replace(/^\/+/, '') === '') throw new Error('path is empty');
    return { protocol: 'unix', host: '', port: 0, path: u.path };
  }
  if (u.scheme !== 'tcp' && u.scheme !== 'tls') throw new Error(`unsupported scheme: '${u.scheme}'`);
  if (u.path !== '') throw new Error('should not contain a path element');
  let host = '127.0.0.1';
  let port = 24224;
  const m = /^(\[[^\]]*\]|[^:]*)(?::(.*))?$/.exec(u.host);
  const h = (m?.[1] ?? '').replace(/^\[|\]$/g, '');
  if (h) host = h;
  const p = m?.[2];
  if (p) {
    if (!/^\d+$/.test(p) || Number(p) > 65535) throw new Error(`invalid port: strconv.ParseUint: parsing "${p}": ${/^\d+$/.test(p) ? 'value out of range' : 'invalid syntax'}`);
    port = Number(p);
  }
  return { protocol: u.scheme, host, port, path: '' };
}

export interface FluentConfig {
  loc: FluentLocation;
  bufferLimit: number;
  retryWaitMs: number;
  maxRetries: number;
  async: boolean;
  asyncReconnectIntervalMs: number;
  subSecondPrecision: boolean;
  requestAck: boolean;
  writeTimeoutMs: number;
  readTimeoutMs: number;
}

function timeoutOpt(cfg: Record<string, string>, key: string): number {
  if (!cfg[key]) return 0;
  let d: number;
  try {
    d = goParseDuration(cfg[key]);
  } catch (err) {
    throw new Error(`invalid value for ${key}: value must be a duration: ${(err as Error).message}`);
  }
  if (d < 0) throw new Error(`invalid value for ${key}: value must be a duration that is non-negative`);
  return d;
}

export function parseFluentConfig(cfg: Record<string, string>): FluentConfig {
  let loc: FluentLocation;
  try {
    loc = parseFluentAddress(cfg['fluentd-address']);
  } catch (err) {
    throw new Error(`invalid fluentd-address (${cfg['fluentd-address']}): ${(err as Error).message}`);
  }
  let bufferLimit = 1024 * 1024;
  if (cfg['fluentd-buffer-limit']) bufferLimit = ramInBytes(cfg['fluentd-buffer-limit']);
  let retryWaitMs = 1000;
  if (cfg['fluentd-retry-wait']) retryWaitMs = Math.trunc(goParseDuration(cfg['fluentd-retry-wait']));
  let maxRetries = MAX_INT32;
  if (cfg['fluentd-max-retries']) {
    const n = goParseUint(cfg['fluentd-max-retries'], 32);
    if (n > MAX_INT32) throw new Error('invalid fluentd-max-retries: value out of range');
    maxRetries = n;
  }
  const async = cfg['fluentd-async'] ? goParseBool(cfg['fluentd-async']) : false;
  let asyncReconnectIntervalMs = 0;
  const ri = cfg['fluentd-async-reconnect-interval'];
  if (ri) {
    let d: number;
    try {
      d = goParseDuration(ri);
    } catch (err) {
      throw new Error(`invalid value for fluentd-async-reconnect-interval: ${(err as Error).message}`);
    }
    if (d !== 0 && (d < 100 || d > 10_000)) throw new Error(`invalid value for fluentd-async-reconnect-interval: value ("${ri}") must be between 100ms and 10s`);
    asyncReconnectIntervalMs = d;
  }
  const subSecondPrecision = cfg['fluentd-sub-second-precision'] ? goParseBool(cfg['fluentd-sub-second-precision']) : false;
  const requestAck = cfg['fluentd-request-ack'] ? goParseBool(cfg['fluentd-request-ack']) : false;
  return {
    loc, bufferLimit, retryWaitMs, maxRetries, async, asyncReconnectIntervalMs, subSecondPrecision, requestAck,
    writeTimeoutMs: timeoutOpt(cfg, 'fluentd-write-timeout'), readTimeoutMs: timeoutOpt(cfg, 'fluentd-read-timeout'),
  };
}

export function validateFluentd(cfg: Record<string, string>): void {
  for (const k of Object.keys(cfg)) if (!ATTRS.has(k) && !KEYS.has(k)) throw new Error(`unknown log opt '${k}' for fluentd log driver`);
  parseFluentConfig(cfg);
}

/** EventTime: msgpack ext type 0, seconds and nanoseconds as big-endian uint32. */
function eventTime(d: Date): ExtData {
  const b = Buffer.alloc(8);
  const ms = d.getTime();
  b.writeUInt32BE(Math.floor(ms / 1000), 0);
  b.writeUInt32BE((ms % 1000) * 1e6, 4);
  return new ExtData(0, b);
}

export function encodeForward(tag: string, time: Date, record: Record<string, string>, subSecond: boolean, option: Record<string, string> = {}): Uint8Array {
  return encode([tag, subSecond ? eventTime(time) : Math.floor(time.getTime() / 1000), record, option]);
}

export async function newFluentd(info: ContainerLogInfo, config: Record<string, string>): Promise<RemoteDriver> {
  const fc = parseFluentConfig(config);
  const tag = parseLogTag(info, config);
  const extra = extraAttributes(info, config);
  const { loc } = fc;
  const addr = loc.protocol === 'unix' ? loc.path : `${loc.host}:${loc.port}`;
  let conn: Socket | null = null;
  let closed = false;

  const dial = () => new Promise<Socket>((res, rej) => {
    const s: Socket = loc.protocol === 'unix'
      ? netConnect({ path: loc.path })
      : loc.protocol === 'tls'
        ? (tlsConnect({ host: loc.host, port: loc.port, rejectUnauthorized: false }) as unknown as Socket)
        : netConnect({ host: loc.host, port: loc.port });
    const timer = setTimeout(() => {
      s.destroy();
      rej(new Error(`dial ${loc.protocol === 'unix' ? 'unix' : 'tcp'} ${addr}: i/o timeout`));
    }, 3000);
    s.once(loc.protocol === 'tls' ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      s.removeAllListeners('error');
      s.on('error', () => {});
      s.on('data', () => {});
      res(s);
    });
    s.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      s.destroy();
      rej(err.code ? dialError(loc.protocol === 'unix' ? 'unix' : 'tcp', addr, err) : err);
    });
  });

  const connectWithRetry = async (): Promise<Socket> => {
    let wait = fc.retryWaitMs;
    for (let i = 0; ; i++) {
      if (closed) throw new Error('fluent#connect: Logger already closed');
      try {
        return await dial();
      } catch (err) {
        if (i + 1 >= fc.maxRetries) throw new Error(`fluent#connectWithRetry: failed to connect after ${fc.maxRetries} attempts: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, Math.min(wait, MAX_RETRY_WAIT_MS)));
      wait *= 1.5;
    }
  };

  const readAck = (s: Socket, want: string) => new Promise<void>((res, rej) => {
    const dec = new Decoder();
    let buf = Buffer.alloc(0);
    const timer = fc.readTimeoutMs ? setTimeout(() => done(new Error('i/o timeout')), fc.readTimeoutMs) : null;
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      try {
        const resp = dec.decode(buf) as { ack?: string };
        done(resp?.ack === want ? undefined : new Error(`message ack (${resp?.ack}) doesn't match expected one (${want})`));
      } catch {}
    };
    const onClose = () => done(new Error('EOF'));
    const done = (err?: Error) => {
      if (timer) clearTimeout(timer);
      s.off('data', onData);
      s.off('close', onClose);
      if (err) rej(err);
      else res();
    };
    s.on('data', onData);
    s.once('close', onClose);
  });

  const writeMsg = async (data: Uint8Array, ack: string) => {
    if (!conn || conn.destroyed || !conn.writable) conn = await connectWithRetry();
    const s = conn;
    const acked = ack ? readAck(s, ack) : null;
    acked?.catch(() => {});
    await new Promise<void>((res, rej) => {
      const timer = fc.writeTimeoutMs ? setTimeout(() => rej(new Error('i/o timeout')), fc.writeTimeoutMs) : null;
      s.write(data, (err) => {
        if (timer) clearTimeout(timer);
        if (err) rej(err);
        else res();
      });
    });
    if (acked) await acked;
  };

  const post = async (data: Uint8Array, ack: string) => {
    for (let i = 0; i < fc.maxRetries; i++) {
      try {
        return await writeMsg(data, ack);
      } catch (err) {
        if ((err as Error).message.startsWith('fluent#connect')) throw new Error(`fluent#write: ${(err as Error).message}`);
        conn?.destroy();
        conn = null;
      }
    }
    throw new Error(`fluent#write: failed to write after ${fc.maxRetries} attempts`);
  };

  const encodeMsg = (msg: LogMessage): { data: Uint8Array; ack: string } => {
    const record: Record<string, string> = {
      container_id: info.id,
      container_name: info.name,
      source: msg.source,
      log: msg.line.toString('utf8'),
      ...extra,
    };
    if (msg.partial) {
      record.partial_message = 'true';
      record.partial_id = msg.partial.id;
      record.partial_ordinal = String(msg.partial.ordinal);
      record.partial_last = String(msg.partial.last);
    }
    const ack = fc.requestAck ? randomBytes(16).toString('base64') : '';
    return { data: encodeForward(tag, msg.timestamp, record, fc.subSecondPrecision, ack ? { chunk: ack } : {}), ack };
  };

  if (!fc.async) {
    conn = await dial();
    return {
      name: 'fluentd',
      async send(msg) {
        if (closed) throw new Error('fluent#postRawData: Logger already closed');
        const { data, ack } = encodeMsg(msg);
        await post(data, ack);
      },
      async close() {
        closed = true;
        const c = conn;
        conn = null;
        if (c) await new Promise<void>((res) => c.end(res));
      },
    };
  }

  // Async: a buffer of bufferLimit messages drained by a background loop.
  const pending: Array<{ data: Uint8Array; ack: string }> = [];
  let wake: (() => void) | null = null;
  let stopping = false;
  const loop = (async () => {
    for (;;) {
      while (!pending.length && !stopping) await new Promise<void>((r) => (wake = r));
      if (!pending.length) return;
      const m = pending[0]!;
      try {
        await post(m.data, m.ack);
        pending.shift();
      } catch {
        if (stopping) return;
        pending.shift();
      }
    }
  })();
  return {
    name: 'fluentd',
    send(msg) {
      if (closed) throw new Error('fluent#appendBuffer: Logger already closed');
      if (pending.length >= fc.bufferLimit) throw new Error(`fluent#appendBuffer: Buffer full, limit ${fc.bufferLimit}`);
      pending.push(encodeMsg(msg));
      wake?.();
      wake = null;
    },
    async close() {
      closed = true;
      stopping = true;
      wake?.();
      // Sends what it can within a short while (the reference forces the stop).
      await Promise.race([loop, new Promise((r) => setTimeout(r, conn ? 2000 : 200))]);
      const c = conn;
      conn = null;
      c?.destroy();
    },
  };
}
