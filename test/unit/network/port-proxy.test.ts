// The userland proxy on loopback: TCP and UDP forwarding to local echo servers, half-close, refused
// upstreams, port conflicts with the reference's message, and the external-binary mode driven by
// a fake docker-proxy written here (a node script that reports on fd 3).
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, test } from 'node:test';
import { pino } from 'pino';
import { PortProxies, type ProxySpec } from '../../../drivers/network/port-proxy.ts';
import { EngineError } from '../../../lib/errors.ts';

const log = pino({ level: 'silent' });
const LO = '127.0.0.1';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const dir = mkdtempSync(join(tmpdir(), 'port-proxy-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function proxies(opts: { binary?: string; udpIdleMs?: number } = {}): PortProxies {
  const p = new PortProxies({ log, ...opts });
  cleanups.push(() => p.closeAll());
  return p;
}

async function freeTcpPort(host = LO): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, host, r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function freeUdpPort(): Promise<number> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, LO, r));
  const port = s.address().port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A TCP server that echoes "echo:<data>" and, when the client half-closes, answers "bye:<all data>" and ends. */
async function tcpEcho(): Promise<number> {
  const sockets = new Set<net.Socket>();
  const s = net.createServer({ allowHalfOpen: true }, (c) => {
    sockets.add(c);
    c.on('close', () => sockets.delete(c));
    let all = '';
    c.on('data', (d) => { all += d; c.write(`echo:${d}`); });
    c.on('end', () => c.end(`bye:${all}`));
    c.on('error', () => {});
  });
  await new Promise<void>((r) => s.listen(0, LO, r));
  cleanups.push(() => new Promise<void>((r) => { for (const c of sockets) c.destroy(); s.close(() => r()); }));
  return (s.address() as net.AddressInfo).port;
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const c = net.connect({ host: LO, port, allowHalfOpen: true }, () => resolve(c));
    c.once('error', reject);
    cleanups.push(() => { c.destroy(); });
  });
}

/** Everything the socket receives until the peer ends or closes it. */
function readAll(c: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    c.on('data', (d) => { out += d; });
    c.on('error', () => {});
    c.once('end', () => resolve(out));
    c.once('close', () => resolve(out));
  });
}

function readUntil(c: net.Socket, want: string): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const on = (d: Buffer) => {
      out += d;
      if (out.includes(want)) { c.off('data', on); resolve(out); }
    };
    c.on('data', on);
  });
}

async function canListen(port: number, host = LO): Promise<boolean> {
  const s = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => { s.once('error', reject); s.listen(port, host, resolve); });
    await new Promise<void>((r) => s.close(() => r()));
    return true;
  } catch {
    return false;
  }
}

const tcpSpec = (hostPort: number, containerPort: number): ProxySpec => ({ proto: 'tcp', hostIp: LO, hostPort, containerIp: LO, containerPort });

async function rejectsWith(p: Promise<unknown>, code: string, message: string | RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof EngineError, `not an EngineError: ${err}`);
    assert.equal(err.code, code);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

test('tcp: round trip through the proxy', async () => {
  const echo = await tcpEcho();
  const hostPort = await freeTcpPort();
  const h = await proxies().start(tcpSpec(hostPort, echo));
  assert.deepEqual(h.spec, tcpSpec(hostPort, echo));
  const c = await connect(hostPort);
  c.write('ping');
  assert.equal(await readUntil(c, 'echo:ping'), 'echo:ping');
  c.write('again');
  assert.equal(await readUntil(c, 'echo:again'), 'echo:again');
});

test('tcp: a client half-close passes through and the reply still arrives', async () => {
  const echo = await tcpEcho();
  const hostPort = await freeTcpPort();
  await proxies().start(tcpSpec(hostPort, echo));
  const c = await connect(hostPort);
  const got = readAll(c);
  c.end('hello');
  assert.equal(await got, 'echo:hellobye:hello');
});

test('tcp: a refused upstream ends the client connection, the proxy keeps serving', async () => {
  const dead = await freeTcpPort();
  const hostPort = await freeTcpPort();
  const p = proxies();
  await p.start(tcpSpec(hostPort, dead));
  for (let i = 0; i < 3; i++) {
    const c = await connect(hostPort);
    const got = readAll(c);
    c.write('anyone?');
    assert.equal(await got, ''); // EOF (or a reset) without a byte
    c.destroy();
  }
});

test('tcp: a taken port is a Conflict with the reference message', async () => {
  const hostPort = await freeTcpPort();
  const blocker = net.createServer();
  await new Promise<void>((r) => blocker.listen(hostPort, LO, r));
  cleanups.push(() => new Promise<void>((r) => blocker.close(() => r())));
  await rejectsWith(proxies().start(tcpSpec(hostPort, 80)), 'Conflict',
    `Error starting userland proxy: listen tcp4 127.0.0.1:${hostPort}: bind: address already in use`);
});

test('tcp: an empty host IP binds 0.0.0.0 and says so', async () => {
  const hostPort = await freeTcpPort('0.0.0.0');
  const blocker = net.createServer();
  await new Promise<void>((r) => blocker.listen(hostPort, '0.0.0.0', r));
  cleanups.push(() => new Promise<void>((r) => blocker.close(() => r())));
  await rejectsWith(proxies().start({ ...tcpSpec(hostPort, 80), hostIp: '' }), 'Conflict',
    `Error starting userland proxy: listen tcp4 0.0.0.0:${hostPort}: bind: address already in use`);
});

test('tcp: close() frees the port and drops open connections', async () => {
  const echo = await tcpEcho();
  const hostPort = await freeTcpPort();
  const p = proxies();
  const h = await p.start(tcpSpec(hostPort, echo));
  const c = await connect(hostPort);
  c.write('x');
  await readUntil(c, 'echo:x');
  const got = readAll(c);
  await h.close();
  await got; // the proxy ended the connection
  assert.ok(await canListen(hostPort));
  await h.close(); // idempotent
  // and the same binding can be started again
  const again = await p.start(tcpSpec(hostPort, echo));
  await again.close();
  assert.ok(await canListen(hostPort));
});

test('tcp6: an IPv6 host IP forwards, and its conflict names tcp6 [addr]:port', async (t) => {
  const probe = net.createServer();
  const v6 = await new Promise<boolean>((r) => { probe.once('error', () => r(false)); probe.listen(0, '::1', () => r(true)); });
  if (!v6) return t.skip('no IPv6 loopback');
  const hostPort = (probe.address() as net.AddressInfo).port;
  cleanups.push(() => new Promise<void>((r) => probe.close(() => r())));
  const spec = { ...tcpSpec(hostPort, 80), hostIp: '::1' };
  await rejectsWith(proxies().start(spec), 'Conflict', `Error starting userland proxy: listen tcp6 [::1]:${hostPort}: bind: address already in use`);
  await new Promise<void>((r) => probe.close(() => r()));
  const echo = await tcpEcho();
  await proxies().start({ ...spec, containerPort: echo });
  const c = await new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect({ host: '::1', port: hostPort }, () => resolve(s));
    s.once('error', reject);
    cleanups.push(() => { s.destroy(); });
  });
  c.write('six');
  assert.equal(await readUntil(c, 'echo:six'), 'echo:six');
});

test('closeAll closes every proxy; later starts are refused', async () => {
  const echo = await tcpEcho();
  const ports = [await freeTcpPort(), await freeTcpPort()];
  const p = new PortProxies({ log });
  for (const port of ports) await p.start(tcpSpec(port, echo));
  await p.closeAll();
  for (const port of ports) assert.ok(await canListen(port));
  await rejectsWith(p.start(tcpSpec(ports[0], echo)), 'Unavailable', /shutting down/);
});

test('bad specs: sctp is NotImplemented, port 0 and bad addresses are InvalidArgument', async () => {
  const p = proxies();
  await rejectsWith(p.start({ ...tcpSpec(await freeTcpPort(), 80), proto: 'sctp' }), 'NotImplemented', /sctp/);
  await rejectsWith(p.start(tcpSpec(0, 80)), 'InvalidArgument', /host port 0/);
  await rejectsWith(p.start(tcpSpec(8080, 70000)), 'InvalidArgument', /container port/);
  await rejectsWith(p.start({ ...tcpSpec(8080, 80), hostIp: 'localhost' }), 'InvalidArgument', /host IP/);
  await rejectsWith(p.start({ ...tcpSpec(8080, 80), containerIp: '' }), 'InvalidArgument', /container IP/);
});

// ---- UDP ----

/** A UDP server answering each datagram with "<msg>@<sender port>". */
async function udpEcho(): Promise<{ port: number; senders: Set<number> }> {
  const s = dgram.createSocket('udp4');
  const senders = new Set<number>();
  s.on('message', (m, r) => { senders.add(r.port); s.send(`${m}@${r.port}`, r.port, r.address); });
  await new Promise<void>((r) => s.bind(0, LO, r));
  cleanups.push(() => new Promise<void>((r) => s.close(() => r())));
  return { port: s.address().port, senders };
}

async function udpClient(): Promise<dgram.Socket> {
  const c = dgram.createSocket('udp4');
  await new Promise<void>((r) => c.bind(0, LO, r));
  cleanups.push(() => new Promise<void>((r) => c.close(() => r())));
  return c;
}

function ask(c: dgram.Socket, port: number, msg: string): Promise<string> {
  return new Promise((resolve) => {
    c.once('message', (m) => resolve(m.toString()));
    c.send(msg, port, LO);
  });
}

test('udp: two clients each get their own replies', async () => {
  const echo = await udpEcho();
  const hostPort = await freeUdpPort();
  await proxies().start({ proto: 'udp', hostIp: LO, hostPort, containerIp: LO, containerPort: echo.port });
  const [a, b] = [await udpClient(), await udpClient()];
  const [ra, rb] = await Promise.all([ask(a, hostPort, 'a1'), ask(b, hostPort, 'b1')]);
  assert.match(ra, /^a1@\d+$/);
  assert.match(rb, /^b1@\d+$/);
  // Each client has its own upstream socket, kept for later datagrams.
  assert.notEqual(ra.split('@')[1], rb.split('@')[1]);
  const ra2 = await ask(a, hostPort, 'a2');
  assert.equal(ra2.split('@')[1], ra.split('@')[1]);
  assert.equal(echo.senders.size, 2);
});

test('udp: an idle client mapping expires and a new one is made', async () => {
  const echo = await udpEcho();
  const hostPort = await freeUdpPort();
  await proxies({ udpIdleMs: 100 }).start({ proto: 'udp', hostIp: LO, hostPort, containerIp: LO, containerPort: echo.port });
  const a = await udpClient();
  const first = (await ask(a, hostPort, 'x')).split('@')[1];
  await new Promise((r) => setTimeout(r, 300));
  const second = (await ask(a, hostPort, 'y')).split('@')[1];
  assert.notEqual(first, second);
});

test('udp: a taken port is a Conflict; close() frees it', async () => {
  const hostPort = await freeUdpPort();
  const blocker = dgram.createSocket('udp4');
  await new Promise<void>((r) => blocker.bind(hostPort, LO, r));
  const spec: ProxySpec = { proto: 'udp', hostIp: LO, hostPort, containerIp: LO, containerPort: 53 };
  const p = proxies();
  await rejectsWith(p.start(spec), 'Conflict', `Error starting userland proxy: listen udp4 127.0.0.1:${hostPort}: bind: address already in use`);
  await new Promise<void>((r) => blocker.close(() => r()));
  const h = await p.start(spec);
  await h.close();
  const again = dgram.createSocket('udp4');
  await new Promise<void>((r) => again.bind(hostPort, LO, r));
  await new Promise<void>((r) => again.close(() => r()));
});

// ---- external binary ----

// A stand-in for docker-proxy: parses its flags, listens (TCP only) and forwards, reports on fd 3.
// FAKE_MODE=exit: exits 3 without reporting; FAKE_MODE=stubborn: ignores SIGTERM.
const FAKE = `#!${process.execPath}
import fs from 'node:fs';
import net from 'node:net';
const a = process.argv.slice(2);
const flag = (n) => a[a.indexOf('-' + n) + 1];
fs.writeFileSync(process.env.FAKE_ARGS, JSON.stringify(a));
if (process.env.FAKE_MODE === 'exit') process.exit(3);
if (process.env.FAKE_MODE === 'stubborn') process.on('SIGTERM', () => {});
const report = (s) => { fs.writeSync(3, s); fs.closeSync(3); };
const server = net.createServer((c) => {
  const u = net.connect(+flag('container-port'), flag('container-ip'));
  c.pipe(u).pipe(c);
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
});
server.on('error', (e) => {
  report('1\\nlisten tcp4 ' + flag('host-ip') + ':' + flag('host-port') + ': bind: ' + (e.code === 'EADDRINUSE' ? 'address already in use' : e.message));
  process.exit(1);
});
server.listen(+flag('host-port'), flag('host-ip'), () => report('0\\n'));
`;

function fakeProxy(mode = ''): { binary: string; argsFile: string } {
  const binary = join(dir, `fake-proxy${mode}.mjs`);
  const argsFile = join(dir, `args${mode}.json`);
  writeFileSync(binary, FAKE);
  chmodSync(binary, 0o755);
  process.env.FAKE_ARGS = argsFile;
  process.env.FAKE_MODE = mode;
  return { binary, argsFile };
}

test('external: the binary gets docker-proxy flags, reports ready, forwards, and stops on close()', async () => {
  const { binary, argsFile } = fakeProxy();
  const echo = await tcpEcho();
  const hostPort = await freeTcpPort();
  const h = await proxies({ binary }).start(tcpSpec(hostPort, echo));
  assert.deepEqual(JSON.parse(readFileSync(argsFile, 'utf8')), [
    '-proto', 'tcp', '-host-ip', LO, '-host-port', String(hostPort), '-container-ip', LO, '-container-port', String(echo),
  ]);
  const c = await connect(hostPort);
  c.write('via-binary');
  assert.equal(await readUntil(c, 'echo:via-binary'), 'echo:via-binary');
  c.destroy();
  await h.close();
  assert.ok(await canListen(hostPort));
});

test('external: a failure report becomes the error, Conflict for a taken port', async () => {
  const { binary } = fakeProxy();
  const hostPort = await freeTcpPort();
  const blocker = net.createServer();
  await new Promise<void>((r) => blocker.listen(hostPort, LO, r));
  cleanups.push(() => new Promise<void>((r) => blocker.close(() => r())));
  await rejectsWith(proxies({ binary }).start(tcpSpec(hostPort, 80)), 'Conflict',
    `Error starting userland proxy: listen tcp4 127.0.0.1:${hostPort}: bind: address already in use`);
});

test('external: a binary that exits without reporting, or does not exist, is an error', async () => {
  const { binary } = fakeProxy('exit');
  const hostPort = await freeTcpPort();
  await rejectsWith(proxies({ binary }).start(tcpSpec(hostPort, 80)), 'Internal', /^Error starting userland proxy: .*status 3/);
  await rejectsWith(proxies({ binary: join(dir, 'missing') }).start(tcpSpec(hostPort, 80)), 'Internal', /^Error starting userland proxy: .*ENOENT/);
});

test('external: a proxy ignoring SIGTERM is killed after 2 s', async () => {
  const { binary } = fakeProxy('stubborn');
  const hostPort = await freeTcpPort();
  const h = await proxies({ binary }).start(tcpSpec(hostPort, 80));
  const t0 = Date.now();
  await h.close();
  assert.ok(Date.now() - t0 >= 1900, 'closed before the SIGKILL deadline');
  assert.ok(await canListen(hostPort));
});
