// The syslog driver, as the reference's daemon/logger/syslog with its srslog fork: one message
// per line, "<PRI>" + the format's header + the line + "\n", over udp, tcp, tcp+tls or a unix
// stream or datagram socket. Formats (time is local time, the pid is the daemon's):
//   ""            <30>Jan  2 15:04:05 TAG[PID]: LINE
//   rfc3164       <30>Jan  2 15:04:05 HOSTNAME TAG[PID]: LINE
//   rfc5424       <30>1 2006-01-02T15:04:05Z HOSTNAME TAG PID TAG - LINE
//   rfc5424micro  <30>1 2006-01-02T15:04:05.000000Z HOSTNAME TAG PID TAG - LINE
// rfc5424* over tcp+tls are framed with their length ("LEN MSG", RFC 5425).
// unixgram sends each message (with its "\n") as one datagram, through the koffi sockets of
// drivers/sys/unix-dgram.ts (Node has none). No address is srslog's local syslog: unixgram, then
// unix, on /dev/log, /var/run/syslog, /var/run/log; none there fails with "Unix syslog delivery
// error" (the container does not start).
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { readFileSync, statSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { hostname as osHostname } from 'node:os';
import { connect as tlsConnect } from 'node:tls';
import { openUnixDgram, type UnixDgramSender } from '../sys/unix-dgram.ts';
import { dgramConn, type Conn } from './dgram-conn.ts';
import { dialError, goAtoi, goUrlParse, parseLogTag, splitHostPort, type ContainerLogInfo } from './info.ts';
import type { LogMessage, RemoteDriver } from './remote.ts';
import { joinHostPort } from '../../lib/host-port.ts';

const FACILITIES: Record<string, number> = {
  kern: 0, user: 1, mail: 2, daemon: 3, auth: 4, syslog: 5, lpr: 6, news: 7, uucp: 8, cron: 9, authpriv: 10, ftp: 11,
  local0: 16, local1: 17, local2: 18, local3: 19, local4: 20, local5: 21, local6: 22, local7: 23,
};
const SEVERITY_ERR = 3;
const SEVERITY_INFO = 6;

export const SYSLOG_OPTS = new Set([
  'env', 'env-regex', 'labels', 'labels-regex', 'tag',
  'syslog-address', 'syslog-facility', 'syslog-tls-ca-cert', 'syslog-tls-cert', 'syslog-tls-key', 'syslog-tls-skip-verify', 'syslog-format',
]);

export function parseSyslogAddress(address: string): { proto: string; addr: string } {
  if (!address) return { proto: '', addr: '' };
  const u = goUrlParse(address);
  if (u.scheme === 'unix' || u.scheme === 'unixgram') {
    try {
      statSync(u.path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new Error(`stat ${u.path}: ${code === 'ENOENT' ? 'no such file or directory' : code === 'EACCES' ? 'permission denied' : (err as Error).message}`);
    }
    return { proto: u.scheme, addr: u.path };
  }
  if (u.scheme !== 'udp' && u.scheme !== 'tcp' && u.scheme !== 'tcp+tls') throw new Error(`unsupported scheme: '${u.scheme}'`);
  let host = u.host;
  try {
    splitHostPort(host);
  } catch (err) {
    if (!(err as Error).message.includes('missing port in address')) throw err;
    host = joinHostPort(host, 514);
  }
  return { proto: u.scheme, addr: host };
}

export function parseFacility(f: string | undefined): number {
  if (!f) return FACILITIES.daemon! << 3;
  if (Object.hasOwn(FACILITIES, f)) return FACILITIES[f]! << 3;
  let n = NaN;
  try {
    n = goAtoi(f);
  } catch {}
  if (n >= 0 && n <= 23) return n << 3;
  throw new Error('invalid syslog facility');
}

export type SyslogFormat = '' | 'rfc3164' | 'rfc5424' | 'rfc5424micro';

export function parseFormat(f: string | undefined): SyslogFormat {
  const v = f ?? '';
  if (v === '' || v === 'rfc3164' || v === 'rfc5424' || v === 'rfc5424micro') return v;
  throw new Error('Invalid syslog format');
}

export function validateSyslog(cfg: Record<string, string>): void {
  for (const k of Object.keys(cfg)) if (!SYSLOG_OPTS.has(k)) throw new Error(`unknown log opt '${k}' for syslog log driver`);
  parseSyslogAddress(cfg['syslog-address'] ?? '');
  parseFacility(cfg['syslog-facility']);
  parseFormat(cfg['syslog-format']);
}

// ---- formatting -----------------------------------------------------------------------------

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const p2 = (n: number) => String(n).padStart(2, '0');

/** time.Stamp: "Jan _2 15:04:05", local time. */
function stamp(d: Date): string {
  return `${MONTHS[d.getMonth()]} ${String(d.getDate()).padStart(2, ' ')} ${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
}

/** RFC 3339 in local time, with `frac` fractional digits ("Z" for UTC, as Go's Z07:00). */
function rfc3339(d: Date, micros: number, frac: 0 | 6): string {
  const off = -d.getTimezoneOffset();
  const zone = off === 0 ? 'Z' : `${off > 0 ? '+' : '-'}${p2(Math.floor(Math.abs(off) / 60))}:${p2(Math.abs(off) % 60)}`;
  const base = `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())}T${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
  return frac ? `${base}.${String(micros).padStart(6, '0')}${zone}` : `${base}${zone}`;
}

export interface SyslogClock {
  /** Microseconds since the epoch. */
  (): number;
}

const defaultClock: SyslogClock = () => Date.now() * 1000 + Number((process.hrtime.bigint() / 1000n) % 1000n);

/** One message as srslog's formatter and framer write it. */
export function formatSyslog(format: SyslogFormat, priority: number, hostname: string, tag: string, pid: number, content: string, nowMicros: number, lengthFramed = false): string {
  const d = new Date(Math.floor(nowMicros / 1000));
  const micros = nowMicros % 1_000_000;
  const msg = content.endsWith('\n') ? content : `${content}\n`;
  let out: string;
  switch (format) {
    case '':
      out = `<${priority}>${stamp(d)} ${tag}[${pid}]: ${msg}`;
      break;
    case 'rfc3164':
      out = `<${priority}>${stamp(d)} ${hostname} ${tag}[${pid}]: ${msg}`;
      break;
    case 'rfc5424':
      out = `<${priority}>1 ${rfc3339(d, 0, 0)} ${hostname} ${tag} ${pid} ${tag} - ${msg}`;
      break;
    case 'rfc5424micro':
      out = `<${priority}>1 ${rfc3339(d, micros, 6)} ${hostname} ${tag} ${pid} ${tag} - ${msg}`;
      break;
  }
  return lengthFramed ? `${Buffer.byteLength(out)} ${out}` : out;
}

// ---- the connection -------------------------------------------------------------------------

function streamConn(s: Socket): Conn {
  const c: Conn = {
    broken: false,
    write: (b) => new Promise((res, rej) => {
      if (c.broken) return rej(new Error('broken pipe'));
      s.write(b, (err) => (err ? rej(err) : res()));
    }),
    close: () => s.destroy(),
  };
  s.on('error', () => (c.broken = true));
  s.on('close', () => (c.broken = true));
  s.on('end', () => (c.broken = true));
  return c;
}

function waitConnect(s: Socket, event: 'connect' | 'secureConnect', network: string, addr: string): Promise<Socket> {
  return new Promise((res, rej) => {
    s.once(event, () => {
      s.removeAllListeners('error');
      res(s);
    });
    s.once('error', (err: NodeJS.ErrnoException) => {
      s.destroy();
      rej(err.code ? dialError(network, addr, err) : err);
    });
  });
}

export interface SyslogConfig {
  proto: string;
  addr: string;
  tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized: boolean };
  /** The local syslog sockets tried when there is no address (tests point them elsewhere). */
  localPaths?: string[];
  /** How long a unixgram send waits out a full receive queue before dropping (DGRAM_STALL_MS). */
  dgramStallMs?: number;
}

async function dial(cfg: SyslogConfig): Promise<Conn> {
  const { proto, addr } = cfg;
  if (proto === 'udp') {
    const { host, port } = splitHostPort(addr);
    const sock: UdpSocket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    await new Promise<void>((res, rej) => {
      sock.once('error', (err: NodeJS.ErrnoException) => {
        sock.close();
        rej(dialError('udp', addr, err));
      });
      sock.connect(Number(port), host || undefined, () => {
        sock.removeAllListeners('error');
        res();
      });
    });
    const c: Conn = {
      broken: false,
      write: (b) => new Promise((res, rej) => sock.send(b, (err) => (err ? rej(err) : res()))),
      close: () => sock.close(),
    };
    sock.on('error', () => (c.broken = true));
    return c;
  }
  if (proto === 'tcp') {
    const { host, port } = splitHostPort(addr);
    return streamConn(await waitConnect(netConnect({ host, port: Number(port) }), 'connect', 'tcp', addr));
  }
  if (proto === 'tcp+tls') {
    const { host, port } = splitHostPort(addr);
    const t = cfg.tls ?? { rejectUnauthorized: true };
    const s = tlsConnect({ host, port: Number(port), servername: /^[\d.:]+$/.test(host) ? undefined : host, ca: t.ca, cert: t.cert, key: t.key, rejectUnauthorized: t.rejectUnauthorized });
    return streamConn(await waitConnect(s as unknown as Socket, 'secureConnect', 'tcp', addr));
  }
  if (proto === 'unix') return streamConn(await waitConnect(netConnect({ path: addr }), 'connect', 'unix', addr));
  if (proto === 'unixgram') return dgramConn(dialUnixgram(addr), addr, cfg.dgramStallMs);
  return dialLocal(cfg.localPaths ?? LOCAL_SYSLOG_PATHS, cfg.dgramStallMs);
}

/** net.Dial("unixgram", addr): "dial unixgram ADDR: connect: ..." on failure. */
function dialUnixgram(addr: string): UnixDgramSender {
  try {
    return openUnixDgram(addr);
  } catch (err) {
    throw new Error(`dial unixgram ${addr}: ${(err as Error).message}`);
  }
}

const LOCAL_SYSLOG_PATHS = ['/dev/log', '/var/run/syslog', '/var/run/log'];

/** srslog's unixSyslog: the first of unixgram then unix on each local path that connects. */
async function dialLocal(paths: string[], stallMs?: number): Promise<Conn> {
  for (const path of paths) {
    try {
      return dgramConn(openUnixDgram(path), path, stallMs);
    } catch {}
  }
  for (const path of paths) {
    try {
      return streamConn(await waitConnect(netConnect({ path }), 'connect', 'unix', path));
    } catch {}
  }
  throw new Error('Unix syslog delivery error');
}

export interface SyslogDriverOptions {
  clock?: SyslogClock;
  hostname?: string;
  pid?: number;
  /** The local syslog sockets tried when there is no syslog-address (default /dev/log, /var/run/syslog, /var/run/log). */
  localPaths?: string[];
  dgramStallMs?: number;
}

export async function newSyslog(info: ContainerLogInfo, config: Record<string, string>, o: SyslogDriverOptions = {}): Promise<RemoteDriver> {
  const tag = parseLogTag(info, config);
  const { proto, addr } = parseSyslogAddress(config['syslog-address'] ?? '');
  const facility = parseFacility(config['syslog-facility']);
  const format = parseFormat(config['syslog-format']);
  const framed = proto === 'tcp+tls' && (format === 'rfc5424' || format === 'rfc5424micro');
  const cfg: SyslogConfig = { proto, addr, localPaths: o.localPaths, dgramStallMs: o.dgramStallMs };
  if (proto === 'tcp+tls') {
    const rd = (k: string) => (config[k] ? readFileSync(config[k]) : undefined);
    cfg.tls = { ca: rd('syslog-tls-ca-cert'), cert: rd('syslog-tls-cert'), key: rd('syslog-tls-key'), rejectUnauthorized: !Object.hasOwn(config, 'syslog-tls-skip-verify') };
  }
  const clock = o.clock ?? defaultClock;
  const host = o.hostname ?? osHostname();
  const pid = o.pid ?? process.pid;
  let conn: Conn | null = await dial(cfg);
  const write = async (b: Buffer) => {
    if (conn && !conn.broken) {
      try {
        return await conn.write(b);
      } catch (err) {
        // A datagram dropped on a full queue: the socket is fine, redialing would not help.
        if ((err as { dropped?: boolean }).dropped) throw err;
      }
    }
    conn?.close();
    conn = null;
    conn = await dial(cfg);
    await conn.write(b);
  };
  return {
    name: 'syslog',
    async send(msg: LogMessage) {
      if (msg.line.length === 0) return;
      const pri = (facility & ~7) | (msg.source === 'stderr' ? SEVERITY_ERR : SEVERITY_INFO);
      await write(Buffer.from(formatSyslog(format, pri, host, tag, pid, msg.line.toString('utf8'), clock(), framed)));
    },
    async close() {
      conn?.close();
      conn = null;
    },
  };
}
