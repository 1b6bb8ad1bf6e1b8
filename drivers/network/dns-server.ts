// Embedded DNS for a user-defined network: one server per network, on the gateway address, port 53
// over UDP and TCP. Names the network knows are answered here; everything else is relayed to the
// upstream resolvers, so containers need only `nameserver <gateway>` in their resolv.conf.
// The driver knows nothing of the store: answers come from a DnsAnswerSource.
import { readFileSync } from 'node:fs';
import dgram from 'node:dgram';
import net from 'node:net';
import dnsPacket from 'dns-packet';
import { conflict, unavailable } from '../../lib/errors.ts';

export interface DnsAnswerSource {
  /**
   * A/AAAA records for a name on this network (container names, aliases, short ids), or null when
   * the network does not know it. Names come lowercased, without the trailing dot. `from`: the
   * asking address (a container's links are names only it resolves).
   */
  lookup(name: string, type: 'A' | 'AAAA', from?: string): string[] | null;
  /** PTR: the name for an IPv4 address on this network (or another of the asker's, `from`), or null. */
  reverse?(ip: string, from?: string): string | null;
}

export interface DnsServerOptions {
  address: string;
  port?: number;
  source: DnsAnswerSource;
  /**
   * Upstream resolvers for names the network does not know ("ip" or "ip:port"), for a query from
   * the address `from`. A function so a reload takes effect and each client may have its own.
   */
  upstreams: (from?: string) => string[];
  log: { debug: Function; warn: Function };
  /** Per upstream query deadline, default 2000 ms. */
  upstreamTimeoutMs?: number;
}

export interface DnsServer { readonly port: number; close(): Promise<void>; }

// The reference daemon's TTL for container records.
const LOCAL_TTL = 600;
// A TCP client that goes quiet must not hold a socket forever.
const TCP_IDLE_MS = 10_000;
const RCODE_SERVFAIL = 2;

/** The nameservers of a resolv.conf text (for the default upstreams), skipping 127.x / ::1 ones. */
export function resolvConfNameservers(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const [key, value] = raw.replace(/[#;].*$/, '').trim().split(/\s+/);
    if (key !== 'nameserver' || !value) continue;
    // As the reference daemon: a loopback nameserver is the host's local stub (systemd-resolved,
    // dnsmasq), not something to hand on to containers; --dns names a real one instead.
    if (!net.isIP(value) || value.startsWith('127.') || value === '::1') continue;
    out.push(value);
  }
  return out;
}

export async function startDnsServer(opts: DnsServerOptions): Promise<DnsServer> {
  const log = opts.log;
  const timeoutMs = opts.upstreamTimeoutMs ?? 2000;
  const closing = new AbortController();
  const tcpClients = new Set<net.Socket>();

  // Port 0 picks a free UDP port; TCP may find it taken, so a few attempts before giving up.
  let bound: { udp: dgram.Socket; tcp: net.Server } | undefined;
  for (let attempt = 0; !bound; attempt++) {
    try {
      bound = await bindBoth(opts.address, opts.port ?? 53);
    } catch (err) {
      if (opts.port !== 0 || attempt >= 4 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw bindError(opts, err);
    }
  }
  const { udp, tcp } = bound;
  const port = udp.address().port;

  async function answer(query: Buffer, viaTcp: boolean, from?: string): Promise<Buffer | null> {
    let q: dnsPacket.DecodedPacket;
    try { q = dnsPacket.decode(query); } catch { return null; } // malformed: drop, as a resolver would
    const question = q.questions?.[0];
    if (q.type !== 'query' || !question) return null;
    const local = answerLocally(q, question, opts.source, from);
    if (local) return local;
    return (await forward(query, q, viaTcp, from)) ?? reply(q, question, [], RCODE_SERVFAIL);
  }

  async function forward(query: Buffer, q: dnsPacket.DecodedPacket, viaTcp: boolean, from?: string): Promise<Buffer | null> {
    for (const upstream of opts.upstreams(from)) {
      const target = parseUpstream(upstream);
      if (!target) { log.warn({ upstream }, 'dns: ignoring malformed upstream'); continue; }
      const signal = AbortSignal.any([closing.signal, AbortSignal.timeout(timeoutMs)]);
      try {
        if (viaTcp) return await exchangeTcp(query, q.id ?? 0, target, signal);
        const res = await exchangeUdp(query, q.id ?? 0, target, signal);
        if (!dnsPacket.decode(res).flag_tc) return res;
        // Truncated: fetch the whole answer, but only send it if the client's buffer can take it;
        // otherwise relay the truncated one so the client retries over TCP itself.
        const full = await exchangeTcp(query, q.id ?? 0, target, AbortSignal.any([closing.signal, AbortSignal.timeout(timeoutMs)]));
        return full.length <= clientUdpSize(q) ? full : res;
      } catch (err) {
        if (closing.signal.aborted) return null;
        log.debug({ upstream, err: (err as Error).message }, 'dns: upstream failed');
      }
    }
    return null;
  }

  udp.on('message', (msg, rinfo) => {
    answer(msg, false, rinfo.address).then((res) => {
      if (res && !closing.signal.aborted) udp.send(res, rinfo.port, rinfo.address);
    }).catch((err) => log.warn({ err }, 'dns: udp handler failed'));
  });
  udp.on('error', (err) => log.warn({ err }, 'dns: udp socket error'));

  tcp.on('connection', (sock) => {
    tcpClients.add(sock);
    sock.setTimeout(TCP_IDLE_MS, () => sock.destroy());
    sock.on('close', () => tcpClients.delete(sock));
    sock.on('error', (err) => log.debug({ err: err.message }, 'dns: tcp client error'));
    readFrames(sock, (frame) => {
      answer(frame, true, sock.remoteAddress?.replace(/^::ffff:/, '')).then((res) => {
        if (res && !sock.destroyed) sock.write(frame2(res));
      }).catch((err) => log.warn({ err }, 'dns: tcp handler failed'));
    });
  });
  tcp.on('error', (err) => log.warn({ err }, 'dns: tcp server error'));

  return {
    port,
    async close() {
      closing.abort();
      for (const s of tcpClients) s.destroy();
      await Promise.all([
        new Promise<void>((r) => udp.close(() => r())),
        new Promise<void>((r) => tcp.close(() => r())),
      ]);
    },
  };
}

function answerLocally(q: dnsPacket.DecodedPacket, question: dnsPacket.Question, source: DnsAnswerSource, from?: string): Buffer | null {
  const name = question.name.toLowerCase().replace(/\.$/, '');
  if (question.type === 'A' || question.type === 'AAAA') {
    const other = question.type === 'A' ? 'AAAA' : 'A';
    // A name known only by its other family still exists: NOERROR with no records, not NXDOMAIN
    // from upstream, so the client's resolver keeps the address it did get.
    const ips = source.lookup(name, question.type, from) ?? (source.lookup(name, other, from) ? [] : null);
    if (!ips) return null;
    return reply(q, question, ips.map((ip) => ({ type: question.type as 'A' | 'AAAA', name: question.name, ttl: LOCAL_TTL, data: ip })));
  }
  if (question.type === 'PTR') {
    const ip = ptrToIpv4(name);
    const target = ip && source.reverse?.(ip, from);
    if (!target) return null;
    return reply(q, question, [{ type: 'PTR', name: question.name, ttl: LOCAL_TTL, data: target }]);
  }
  return null;
}

function reply(q: dnsPacket.DecodedPacket, question: dnsPacket.Question, answers: dnsPacket.Answer[], rcode = 0): Buffer {
  return dnsPacket.encode({
    type: 'response',
    id: q.id,
    flags: ((q.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | dnsPacket.RECURSION_AVAILABLE | rcode,
    questions: [question],
    answers,
  });
}

function ptrToIpv4(name: string): string | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.in-addr\.arpa$/.exec(name);
  if (!m) return null;
  const ip = `${m[4]}.${m[3]}.${m[2]}.${m[1]}`;
  return net.isIPv4(ip) ? ip : null;
}

function clientUdpSize(q: dnsPacket.DecodedPacket): number {
  const opt = q.additionals?.find((a): a is dnsPacket.OptAnswer => a.type === 'OPT');
  return Math.max(512, opt?.udpPayloadSize ?? 512);
}

function parseUpstream(s: string): { host: string; port: number } | null {
  if (net.isIP(s)) return { host: s, port: 53 };
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(s);
  if (!m || !net.isIP(m[1]) || Number(m[2]) > 65535) return null;
  return { host: m[1], port: Number(m[2]) };
}

function exchangeUdp(query: Buffer, id: number, to: { host: string; port: number }, signal: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error('aborted'));
    const sock = dgram.createSocket(net.isIPv6(to.host) ? 'udp6' : 'udp4');
    let settled = false;
    const done = (err: Error | null, res?: Buffer) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      sock.close();
      if (err) reject(err); else resolve(res!);
    };
    const onAbort = () => done(new Error(`no answer from ${to.host}:${to.port} in time`));
    signal.addEventListener('abort', onAbort);
    sock.on('error', (err) => done(err));
    // A connected socket hears only this upstream, and a dead one fails fast with ECONNREFUSED.
    sock.on('message', (msg) => {
      try {
        const r = dnsPacket.decode(msg);
        if (r.id === id && r.type === 'response') done(null, msg);
      } catch { /* noise, not an answer: keep waiting */ }
    });
    sock.connect(to.port, to.host, () => sock.send(query));
  });
}

function exchangeTcp(query: Buffer, id: number, to: { host: string; port: number }, signal: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: to.host, port: to.port, signal });
    sock.on('error', reject);
    sock.on('close', () => reject(new Error(`connection to ${to.host}:${to.port} closed without an answer`)));
    sock.on('connect', () => sock.write(frame2(query)));
    readFrames(sock, (msg) => {
      try {
        const r = dnsPacket.decode(msg);
        if (r.id !== id || r.type !== 'response') return;
      } catch { return; }
      resolve(msg);
      sock.destroy();
    });
  });
}

/** Split a DNS-over-TCP byte stream into messages by their 2-byte length prefix. */
function readFrames(sock: net.Socket, onFrame: (msg: Buffer) => void): void {
  let buf = Buffer.alloc(0);
  sock.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
      const len = buf.readUInt16BE(0);
      onFrame(buf.subarray(2, 2 + len));
      buf = buf.subarray(2 + len);
    }
  });
}

function frame2(msg: Buffer): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(msg.length);
  return Buffer.concat([len, msg]);
}

async function bindBoth(address: string, port: number): Promise<{ udp: dgram.Socket; tcp: net.Server }> {
  const udp = dgram.createSocket(net.isIPv6(address) ? 'udp6' : 'udp4');
  await new Promise<void>((resolve, reject) => {
    udp.once('error', reject);
    udp.bind(port, address, () => { udp.off('error', reject); resolve(); });
  });
  const tcp = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(udp.address().port, address, () => { tcp.off('error', reject); resolve(); });
    });
  } catch (err) {
    udp.close();
    throw err;
  }
  return { udp, tcp };
}

function bindError(opts: DnsServerOptions, err: unknown): Error {
  const where = `${opts.address}:${opts.port ?? 53}`;
  if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') return conflict(`dns: ${where} already in use`, err);
  return unavailable(`dns: cannot listen on ${where}: ${(err as Error).message}`, err);
}

/**
 * The upstreams of the embedded DNS: the daemon's --dns when set, else the host's nameservers
 * (systemd-resolved's upstream list when resolv.conf only names its local stub), re-read at
 * most every few seconds so a changed resolv.conf takes effect.
 */
export function dnsUpstreams(configured: () => string[], paths = { resolvConf: '/etc/resolv.conf', systemd: '/run/systemd/resolve/resolv.conf' }): () => string[] {
  let cached: string[] = [];
  let at = 0;
  const read = (p: string) => {
    try {
      return readFileSync(p, 'utf8');
    } catch {
      return '';
    }
  };
  return () => {
    const dns = configured();
    if (dns.length) return dns;
    if (Date.now() - at > 5_000) {
      cached = resolvConfNameservers(read(paths.resolvConf));
      if (!cached.length) cached = resolvConfNameservers(read(paths.systemd));
      at = Date.now();
    }
    return cached;
  };
}
