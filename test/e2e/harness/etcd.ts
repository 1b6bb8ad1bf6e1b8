// Starts a private single-member etcd (Debian's etcd-server, /usr/bin/etcd) on a temp data
// directory and free loopback ports for one test file, and leaves nothing behind: the etcd
// process (by its PID) and the temp directory. With `tls` it serves its clients over https (the
// peer URL stays http), optionally requiring client certificates.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { cleanedUp, cleanupAtExit, logTail, signalPid, sleep } from './processes.ts';
import { freePort } from './free-port.ts';

/** ENGINE_E2E_ETCD runs the suite against another etcd binary. */
const ETCD = process.env.ENGINE_E2E_ETCD || '/usr/bin/etcd';

export interface EtcdOptions {
  /** How long to wait for /health. Default 30 s. */
  startTimeoutMs?: number;
  /** Extra etcd arguments. */
  args?: string[];
  /** Serve the client URLs over https (PEM file paths); the peer URL stays http. */
  tls?: EtcdTlsOptions;
  /** The address the client URL listens on. Default 127.0.0.1; e.g. a netns.ts bridge's .1 for daemons in namespaces. The peer URL stays on loopback. */
  host?: string;
}

export interface EtcdTlsOptions {
  /** The server certificate (--cert-file); it must name 127.0.0.1 (an IP SAN). */
  cert: string;
  /** Its key (--key-file). */
  key: string;
  /** The CA that signed the server certificate and trusted for client certificates (--trusted-ca-file). */
  ca: string;
  /** Require client certificates signed by `ca` (--client-cert-auth). Default false. */
  clientCertAuth?: boolean;
  /** The client certificate and key the harness presents for its /health checks (needed with clientCertAuth). */
  clientCert?: string;
  clientKey?: string;
}

export interface EtcdHandle {
  /** The client URLs, e.g. ['http://127.0.0.1:40123']. */
  readonly endpoints: string[];
  /** endpoints[0]. */
  readonly clientUrl: string;
  readonly peerUrl: string;
  /** The TLS options it was started with (undefined: plain http). */
  readonly tls: EtcdTlsOptions | undefined;
  /** The member name (--name). */
  readonly name: string;
  /** The temp directory holding the data dir and the log. */
  readonly root: string;
  readonly dataDir: string;
  readonly logFile: string;
  /** PID of the running etcd (changes on start); 0 when stopped. */
  readonly pid: number;
  /** The whole etcd log (all runs). */
  logs(): string;
  /** SIGTERM by PID and wait for the exit (SIGKILL after timeoutMs, default 15 s). */
  stop(timeoutMs?: number): Promise<void>;
  /** SIGKILL by PID (does not wait; await stop() afterwards to wait). */
  kill(): void;
  /** Starts etcd again on the same data dir and ports (no-op if it runs) and waits for /health. */
  start(): Promise<void>;
  /** Stops etcd and removes the temp directory. Safe to call twice. */
  cleanup(): Promise<void>;
}

/** GET <clientUrl>/health (over https with the CA and the client certificate); true when etcd says {"health":"true"}. */
function healthy(clientUrl: string, tls: EtcdTlsOptions | undefined, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolveHealth) => {
    const read = (f: string | undefined) => (f ? readFileSync(f) : undefined);
    const get = clientUrl.startsWith('https:') ? httpsRequest : request;
    const tlsOpts = tls ? { ca: read(tls.ca), cert: read(tls.clientCert), key: read(tls.clientKey) } : {};
    const req = get(`${clientUrl}/health`, { method: 'GET', timeout: timeoutMs, ...tlsOpts }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        try {
          resolveHealth(res.statusCode === 200 && JSON.parse(body).health === 'true');
        } catch {
          resolveHealth(false);
        }
      });
      res.on('error', () => resolveHealth(false));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolveHealth(false));
    req.end();
  });
}

class Etcd implements EtcdHandle {
  readonly endpoints: string[];
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly tls: EtcdTlsOptions | undefined;
  readonly name: string;
  readonly root: string;
  readonly dataDir: string;
  readonly logFile: string;
  private readonly opts: EtcdOptions;
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private cleaned = false;

  constructor(root: string, clientPort: number, peerPort: number, opts: EtcdOptions) {
    this.opts = opts;
    this.root = root;
    this.dataDir = join(root, 'data');
    this.logFile = join(root, 'etcd.log');
    this.name = `e2e-${root.slice(-6).replace(/[^A-Za-z0-9]/g, 'x')}`;
    this.tls = opts.tls;
    this.clientUrl = `${opts.tls ? 'https' : 'http'}://${opts.host ?? '127.0.0.1'}:${clientPort}`;
    this.peerUrl = `http://127.0.0.1:${peerPort}`;
    this.endpoints = [this.clientUrl];
  }

  get pid(): number {
    return this.child && this.child.exitCode === null && this.child.signalCode === null ? (this.child.pid ?? 0) : 0;
  }

  logs(): string {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  async start(): Promise<void> {
    if (this.cleaned) throw new Error('etcd handle already cleaned up');
    if (this.pid) return;
    const args = [
      '--name', this.name,
      '--data-dir', this.dataDir,
      '--listen-client-urls', this.clientUrl,
      '--advertise-client-urls', this.clientUrl,
      '--listen-peer-urls', this.peerUrl,
      '--initial-advertise-peer-urls', this.peerUrl,
      '--initial-cluster', `${this.name}=${this.peerUrl}`,
      // On a restart the member directory exists and etcd ignores the --initial-* flags.
      '--initial-cluster-state', 'new',
      '--initial-cluster-token', this.name,
      '--logger', 'zap',
      '--log-outputs', 'stderr',
      ...(this.tls
        ? [
            '--cert-file', this.tls.cert,
            '--key-file', this.tls.key,
            '--trusted-ca-file', this.tls.ca,
            ...(this.tls.clientCertAuth ? ['--client-cert-auth'] : []),
          ]
        : []),
      ...(this.opts.args ?? []),
    ];
    const fd = openSync(this.logFile, 'a');
    writeFileSync(fd, `\n===== ${new Date().toISOString()} etcd ${args.join(' ')}\n`);
    const child = spawn(ETCD, args, {
      cwd: this.root,
      env: process.env,
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    // A test that forgets cleanup() must not hang its file: the exit hook kills etcd then.
    child.unref();
    this.child = child;
    let gone = false;
    this.exited = new Promise((resolveExit) => {
      child.once('exit', () => resolveExit());
      child.once('error', () => resolveExit());
    });
    void this.exited.then(() => (gone = true));

    const timeout = this.opts.startTimeoutMs ?? 30_000;
    const deadline = Date.now() + timeout;
    while (Date.now() < deadline) {
      if (gone) throw new Error(`etcd exited during start-up (code ${child.exitCode ?? child.signalCode}); log tail:\n${logTail(this.logs(), 40)}`);
      if (await healthy(this.clientUrl, this.tls)) return;
      await sleep(100);
    }
    throw new Error(`etcd did not answer ${this.clientUrl}/health within ${timeout} ms; log tail:\n${logTail(this.logs(), 40)}`);
  }

  async stop(timeoutMs = 15_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (this.pid) signalPid(child.pid!, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const res = await Promise.race([this.exited, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)))]);
    clearTimeout(timer);
    if (res === 'timeout') {
      signalPid(child.pid!, 'SIGKILL');
      await this.exited;
    }
  }

  kill(): void {
    if (this.pid) signalPid(this.pid, 'SIGKILL');
  }

  async cleanup(): Promise<void> {
    if (this.cleaned) return;
    await this.stop();
    this.cleanupSync();
  }

  /** Synchronous so it can run from process 'exit'. */
  cleanupSync(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    cleanedUp(this);
    if (this.pid) signalPid(this.pid, 'SIGKILL');
    try {
      rmSync(this.root, { recursive: true, force: true });
    } catch {
      // best effort
    }
  }
}

/** Starts a fresh single-member etcd on free ports (loopback, or opts.host for its clients) and waits until it is healthy. */
export async function startEtcd(opts: EtcdOptions = {}): Promise<EtcdHandle> {
    const clientPort = await freePort(opts.host);
  let peerPort = await freePort();
  while (peerPort === clientPort) peerPort = await freePort();
  const root = mkdtempSync('/tmp/engine-etcd-');
  const h = new Etcd(root, clientPort, peerPort, opts);
  cleanupAtExit(h);
  try {
    await h.start();
  } catch (err) {
    await h.cleanup();
    throw err;
  }
  return h;
}
