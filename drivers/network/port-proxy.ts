// The userland proxy for published ports: traffic from the host to its own addresses (127.0.0.1:8080)
// never passes the DNAT rules, so with --userland-proxy (the default) each binding also gets a
// listener on hostIp:hostPort that forwards to containerIp:containerPort. In-process by default;
// with --userland-proxy-path one external process per binding, speaking docker-proxy's flags and its
// fd 3 status protocol ("0\n" when listening, "1\n<error>" when not).
// Nothing here may throw out of an event handler: a client or container connection error only ends
// that connection, never the daemon.
import type { ParentPorts } from './rootlesskit-ports.ts';
import type { ChildProcess } from 'node:child_process';
import { execa } from 'execa';
import dgram from 'node:dgram';
import net from 'node:net';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { conflict, EngineError, internal, invalidArgument, notImplemented, unavailable } from '../../lib/errors.ts';
import { EXECA_DEFAULTS } from '../sys/exec.ts';

export interface ProxySpec { proto: 'tcp' | 'udp' | 'sctp'; hostIp: string; hostPort: number; containerIp: string; containerPort: number }

export interface ProxyHandle { readonly spec: ProxySpec; close(): Promise<void> }

export interface PortProxyOptions {
  log: Logger;
  /** external proxy binary (docker-proxy flags); in-process when unset */
  binary?: string;
  /** Idle time after which a UDP client's upstream socket is dropped; default 90 s (docker-proxy's conntrack timeout). */
  udpIdleMs?: number;
  /** How long an external proxy may take to report on fd 3; default 16 s, as the reference daemon. */
  startTimeoutMs?: number;
  /** Rootless mode: each proxy's port is also exposed on the host by rootlesskit's port driver. */
  parent?: ParentPorts;
}

const UDP_IDLE_MS = 90_000;
const START_TIMEOUT_MS = 16_000;
const KILL_AFTER_MS = 2_000;

// Linux strerror texts, as Go prints them in "listen tcp4 0.0.0.0:80: bind: <text>".
const ERRNO_TEXT: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'cannot assign requested address',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EINVAL: 'invalid argument',
  EAFNOSUPPORT: 'address family not supported by protocol',
};

export class PortProxies {
  private readonly log: Logger;
  private readonly binary?: string;
  private readonly udpIdleMs: number;
  private readonly startTimeoutMs: number;
  private readonly parent: ParentPorts | undefined;
  private readonly handles = new Set<ProxyHandle>();
  private closing = false;

  constructor(opts: PortProxyOptions) {
    this.log = opts.log.child({ component: 'port-proxy' });
    this.binary = opts.binary;
    this.udpIdleMs = opts.udpIdleMs ?? UDP_IDLE_MS;
    this.startTimeoutMs = opts.startTimeoutMs ?? START_TIMEOUT_MS;
    this.parent = opts.parent;
  }

  /** Start listening on hostIp:hostPort and forwarding to containerIp:containerPort. */
  async start(spec: ProxySpec): Promise<ProxyHandle> {
    validate(spec);
    if (this.closing) throw unavailable('Error starting userland proxy: daemon is shutting down');
    const s: ProxySpec = { ...spec };
    let handle: ProxyHandle;
    let unexpose: (() => Promise<void>) | undefined;
    const wrapped: ProxyHandle = {
      spec: s,
      close: once(async () => {
        this.handles.delete(wrapped);
        await unexpose?.().catch((err: unknown) => this.log.warn({ err, ...s }, 'unexposing a port on the host'));
        await handle.close();
      }),
    };
    if (this.binary) handle = await startExternal(this.binary, s, this.startTimeoutMs, this.log, () => this.handles.delete(wrapped));
    else if (s.proto === 'tcp') handle = await startTcp(s, this.log);
    else if (s.proto === 'udp') handle = await startUdp(s, this.udpIdleMs, this.log);
    else throw notImplemented(`Error starting userland proxy: protocol ${s.proto} is not supported by the in-process userland proxy`);
    if (this.closing) {
      await handle.close();
      throw unavailable('Error starting userland proxy: daemon is shutting down');
    }
    if (this.parent) {
      try {
        unexpose = await this.parent.expose({ proto: s.proto, parentIP: s.hostIp, parentPort: s.hostPort, childPort: s.hostPort });
      } catch (err) {
        await handle.close();
        throw err;
      }
    }
    this.handles.add(wrapped);
    this.log.debug({ ...s }, 'userland proxy started');
    return wrapped;
  }

  /** Close every proxy (daemon shutdown). */
  async closeAll(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.handles].map((h) => h.close().catch((err) => this.log.warn({ err, ...h.spec }, 'closing userland proxy'))));
  }
}

function validate(spec: ProxySpec): void {
  if (!['tcp', 'udp', 'sctp'].includes(spec.proto)) throw invalidArgument(`invalid proto ${JSON.stringify(spec.proto)}`);
  for (const [name, port] of [['host', spec.hostPort], ['container', spec.containerPort]] as const) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalidArgument(`invalid ${name} port ${port}`);
  }
  if (spec.hostIp !== '' && !net.isIP(spec.hostIp)) throw invalidArgument(`invalid host IP ${JSON.stringify(spec.hostIp)}`);
  if (!net.isIP(spec.containerIp)) throw invalidArgument(`invalid container IP ${JSON.stringify(spec.containerIp)}`);
}

/** The address to bind: '' means every IPv4 address, as the reference. */
function bindAddress(spec: ProxySpec): string {
  return spec.hostIp === '' ? '0.0.0.0' : spec.hostIp;
}

/** Go's "listen tcp4 0.0.0.0:8080: bind: address already in use", as an EngineError. */
function listenError(spec: ProxySpec, err: unknown): EngineError {
  const addr = bindAddress(spec);
  const network = `${spec.proto}${net.isIPv6(addr) ? '6' : '4'}`;
  const where = net.isIPv6(addr) ? `[${addr}]:${spec.hostPort}` : `${addr}:${spec.hostPort}`;
  const code = (err as NodeJS.ErrnoException)?.code ?? '';
  const text = ERRNO_TEXT[code] ?? (err as Error)?.message ?? String(err);
  const msg = `Error starting userland proxy: listen ${network} ${where}: bind: ${text}`;
  return code === 'EADDRINUSE' ? conflict(msg, err) : internal(msg, err);
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let p: Promise<void> | undefined;
  return () => (p ??= fn());
}

// ---- TCP ----

async function startTcp(spec: ProxySpec, log: Logger): Promise<ProxyHandle> {
  const addr = bindAddress(spec);
  const conns = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    try {
      forwardTcp(client, spec, conns, log);
    } catch (err) {
      log.debug({ err }, 'userland proxy: connection setup failed');
      client.destroy();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // '::' is IPv6 only, as Go's tcp6 listener: the reference runs a separate proxy for 0.0.0.0.
    server.listen({ host: addr, port: spec.hostPort, ipv6Only: net.isIPv6(addr) }, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err) => { throw listenError(spec, err); });
  server.on('error', (err) => log.warn({ err, ...spec }, 'userland proxy: listener error'));

  return {
    spec,
    close: once(() => new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const c of conns) c.destroy();
      conns.clear();
    })),
  };
}

function forwardTcp(client: net.Socket, spec: ProxySpec, conns: Set<net.Socket>, log: Logger): void {
  const upstream = net.connect({ host: spec.containerIp, port: spec.containerPort, allowHalfOpen: true });
  conns.add(client);
  conns.add(upstream);
  const pair: Array<[net.Socket, net.Socket]> = [[client, upstream], [upstream, client]];
  for (const [from, to] of pair) {
    from.on('error', (err) => {
      log.debug({ err: err.message, ...spec }, 'userland proxy: connection error');
      from.destroy();
      to.destroy();
    });
    from.on('close', (hadError) => {
      conns.delete(from);
      // An abortive close (reset, error) takes the other side down too; an orderly one has
      // already passed its FIN on through the pipe.
      if (hadError) to.destroy();
      else if (!to.destroyed) to.end();
    });
    // pipe ends `to` when `from` ends: a half-close passes through, the other direction stays open.
    from.pipe(to);
  }
}

// ---- UDP ----

interface UdpFlow { sock: dgram.Socket; ready: boolean; queue: Buffer[]; timer: NodeJS.Timeout }

async function startUdp(spec: ProxySpec, idleMs: number, log: Logger): Promise<ProxyHandle> {
  const addr = bindAddress(spec);
  const listener = dgram.createSocket({ type: net.isIPv6(addr) ? 'udp6' : 'udp4', ipv6Only: net.isIPv6(addr) });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.bind({ address: addr, port: spec.hostPort }, () => {
      listener.off('error', reject);
      resolve();
    });
  }).catch((err) => {
    try { listener.close(); } catch { /* never bound */ }
    throw listenError(spec, err);
  });

  const flows = new Map<string, UdpFlow>();
  let closed = false;
  const upstreamType = net.isIPv6(spec.containerIp) ? 'udp6' : 'udp4';

  const drop = (key: string) => {
    const f = flows.get(key);
    if (!f) return;
    flows.delete(key);
    clearTimeout(f.timer);
    try { f.sock.close(); } catch { /* already closed */ }
  };

  const flowFor = (rinfo: dgram.RemoteInfo): UdpFlow => {
    const key = `${rinfo.address}|${rinfo.port}`;
    let f = flows.get(key);
    if (f) return f;
    const sock = dgram.createSocket(upstreamType);
    const timer = setTimeout(() => drop(key), idleMs);
    timer.unref();
    const flow: UdpFlow = { sock, ready: false, queue: [], timer };
    flows.set(key, flow);
    sock.on('error', (err: NodeJS.ErrnoException) => {
      // A connected UDP socket sees ICMP port unreachable as ECONNREFUSED: the container is not
      // listening (yet); keep the flow, as docker-proxy does.
      if (err.code === 'ECONNREFUSED') return;
      log.debug({ err: err.message, ...spec }, 'userland proxy: udp upstream error');
      drop(key);
    });
    sock.on('message', (msg) => {
      flow.timer.refresh();
      if (closed) return;
      listener.send(msg, rinfo.port, rinfo.address, (err) => {
        if (err) log.debug({ err: err.message, ...spec }, 'userland proxy: udp reply failed');
      });
    });
    sock.connect(spec.containerPort, spec.containerIp, () => {
      flow.ready = true;
      for (const m of flow.queue.splice(0)) send(key, flow, m);
    });
    return flow;
  };

  const send = (key: string, flow: UdpFlow, msg: Buffer) => {
    try {
      flow.sock.send(msg, (err) => {
        if (err && (err as NodeJS.ErrnoException).code !== 'ECONNREFUSED') log.debug({ err: err.message, ...spec }, 'userland proxy: udp forward failed');
      });
    } catch (err) {
      log.debug({ err: (err as Error).message, ...spec }, 'userland proxy: udp forward failed');
      drop(key);
    }
  };

  listener.on('message', (msg, rinfo) => {
    if (closed) return;
    try {
      const flow = flowFor(rinfo);
      flow.timer.refresh();
      if (flow.ready) send(`${rinfo.address}|${rinfo.port}`, flow, msg);
      else if (flow.queue.length < 64) flow.queue.push(msg);
    } catch (err) {
      log.debug({ err: (err as Error).message, ...spec }, 'userland proxy: udp flow setup failed');
    }
  });
  listener.on('error', (err) => log.warn({ err, ...spec }, 'userland proxy: udp listener error'));

  return {
    spec,
    close: once(() => new Promise<void>((resolve) => {
      closed = true;
      for (const key of [...flows.keys()]) drop(key);
      try { listener.close(() => resolve()); } catch { resolve(); }
    })),
  };
}

// ---- external binary ----

async function startExternal(binary: string, spec: ProxySpec, timeoutMs: number, log: Logger, onExit: () => void): Promise<ProxyHandle> {
  const args = [
    '-proto', spec.proto,
    '-host-ip', bindAddress(spec),
    '-host-port', String(spec.hostPort),
    '-container-ip', spec.containerIp,
    '-container-port', String(spec.containerPort),
  ];
  // Long-lived: it runs until the binding goes, so there is no deadline (readStatus bounds only the
  // start). Aborting `cancel` ends it: SIGTERM, then SIGKILL if it has not exited after 2 s. Not
  // killed when the daemon exits (cleanup off), as before; its output is read here, not buffered.
  const cancel = new AbortController();
  const child = execa(binary, args, {
    ...EXECA_DEFAULTS,
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    buffer: false,
    cancelSignal: cancel.signal,
    killSignal: 'SIGTERM',
    forceKillAfterDelay: KILL_AFTER_MS,
    reject: false,
  });
  let exited = child.exitCode !== null || child.signalCode !== null;
  const exitPromise = new Promise<void>((resolve) => {
    child.once('exit', () => { exited = true; resolve(); });
    child.once('error', () => { if (child.pid === undefined) { exited = true; resolve(); } });
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-4096); });
  child.stderr?.on('error', () => {});

  try {
    await readStatus(child, timeoutMs);
  } catch (err) {
    await stop(cancel, () => exited, exitPromise);
    if (err instanceof EngineError) throw err;
    const detail = stderr.trim() ? `${(err as Error).message}: ${stderr.trim()}` : (err as Error).message;
    throw internal(`Error starting userland proxy: ${detail}`, err);
  }

  let stopping = false;
  child.once('exit', (code, signal) => {
    if (!stopping) log.warn({ ...spec, code, signal, stderr: stderr.trim() || undefined }, 'userland proxy exited');
    onExit();
  });
  return {
    spec,
    close: once(async () => {
      stopping = true;
      await stop(cancel, () => exited, exitPromise);
    }),
  };
}

/** Wait for the child's first report on fd 3: "0" = listening; "1\n<error>" (or anything else) = failed. */
function readStatus(child: ChildProcess, timeoutMs: number): Promise<void> {
  const pipe = child.stdio[3] as Readable | null;
  return new Promise<void>((resolve, reject) => {
    let buf = '';
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      pipe?.removeAllListeners('data');
      pipe?.on('error', () => {});
      pipe?.destroy();
      if (err) reject(err); else resolve();
    };
    const failed = (text: string) => {
      const msg = `Error starting userland proxy: ${text.trim()}`;
      finish(/address already in use/.test(text) ? conflict(msg) : internal(msg));
    };
    const timer = setTimeout(() => finish(new Error('timed out waiting for the proxy to report')), timeoutMs);
    child.once('error', (err) => finish(err));
    // The exit may be seen before the pipe delivers what the child wrote: decide once the pipe has
    // closed too (or shortly after, should something else hold its other end).
    let exitText: string | undefined;
    const decide = () => {
      if (exitText === undefined) return;
      if (buf.split('\n')[0].trim() === '0') finish();
      else if (buf) failed(statusText(buf));
      else finish(new Error(exitText));
    };
    child.once('exit', (code, signal) => {
      exitText = signal ? `proxy killed by ${signal}` : `proxy exited with status ${code} before reporting`;
      if (!pipe || pipe.destroyed || pipe.readableEnded) decide();
      else setTimeout(decide, 200);
    });
    if (!pipe) return finish(new Error('no status pipe'));
    pipe.on('error', (err) => finish(err));
    pipe.on('data', (d: Buffer) => {
      buf += d.toString();
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      const first = buf.slice(0, nl).trim();
      if (first === '0') return finish();
      // The error text follows "1\n" until the child closes the pipe.
      if (first !== '1') failed(buf);
    });
    pipe.on('end', () => {
      if (buf.split('\n')[0].trim() === '0') finish();
      else if (buf) failed(statusText(buf));
      // Nothing written: wait for the exit status (or the start timeout).
    });
    pipe.on('close', decide);
  });
}

function statusText(buf: string): string {
  const nl = buf.indexOf('\n');
  return nl >= 0 && buf.slice(0, nl).trim() === '1' ? buf.slice(nl + 1) : buf;
}

/** SIGTERM, then SIGKILL if the child has not exited after 2 s (execa's cancelSignal and forceKillAfterDelay). */
async function stop(cancel: AbortController, exited: () => boolean, exitPromise: Promise<void>): Promise<void> {
  if (exited()) return;
  cancel.abort();
  await exitPromise;
}
