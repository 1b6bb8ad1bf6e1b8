// The managed etcd member of a swarm manager (Debian's etcd binary), as the daemon manages its
// private supervisor: its data under <data-root>/swarm/etcd, TLS for clients and peers with the
// node's certificate from the swarm's CA (clients must present one too; the files under the exec
// root, written at start and removed at stop), its client and peer URLs
// on the advertise host at ports of their own (2387 and 2388 unless told), its output in the
// daemon's log at debug level. It is started with the daemon while the node is a manager and stopped
// with it; one a killed daemon left running (its PID file names it, its command line its data
// directory) is stopped before a new one starts. `forceNewCluster` starts a single-member cluster
// again from the node's data (the reference's `swarm init --force-new-cluster`).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import { isAlive } from '../sys/alive.ts';
import { bracketHost } from '../../lib/host-port.ts';

export const SWARM_ETCD_CLIENT_PORT = 2387;
export const SWARM_ETCD_PEER_PORT = 2388;

export interface MemberTls {
  caPem: string;
  certPem: string;
  keyPem: string;
}

export interface EtcdMemberOptions {
  /** The member's name: the node id. */
  name: string;
  /** <data-root>/swarm: the member's data in etcd/, its certificates in etcd-tls/. */
  dir: string;
  /** Where the PID file goes (the exec root). */
  runDir: string;
  advertiseHost: string;
  clientPort?: number;
  peerPort?: number;
  tls: MemberTls;
  /** The initial cluster token (the swarm's id). */
  clusterToken: string;
  forceNewCluster?: boolean;
  /**
   * A member joining a cluster that has it as a learner: etcd's --initial-cluster (every member,
   * this one too) and `existing`; `ready` says when it has caught up (its promotion), not /health.
   */
  join?: { initialCluster: string; ready: () => Promise<boolean> };
  log: Logger;
  binary?: string;
  startTimeoutMs?: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));


export class EtcdMember {
  readonly clientUrl: string;
  readonly peerUrl: string;
  private readonly opts: EtcdMemberOptions;
  private readonly dataDir: string;
  private readonly tlsDir: string;
  private readonly pidFile: string;
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();

  constructor(opts: EtcdMemberOptions) {
    this.opts = opts;
    const host = bracketHost(opts.advertiseHost);
    this.clientUrl = `https://${host}:${opts.clientPort ?? SWARM_ETCD_CLIENT_PORT}`;
    this.peerUrl = `https://${host}:${opts.peerPort ?? SWARM_ETCD_PEER_PORT}`;
    this.dataDir = join(opts.dir, 'etcd');
    // Its key unsealed only while it runs, under the exec root (the swarm's key may be sealed on disk: autolock).
    this.tlsDir = join(opts.runDir, 'swarm-etcd-tls');
    this.pidFile = join(opts.runDir, 'swarm-etcd.pid');
  }

  /** The PID of the member this daemon started (0 when none runs). */
  get pid(): number {
    const c = this.child;
    return c && c.exitCode === null && c.signalCode === null ? (c.pid ?? 0) : 0;
  }

  /** Starts the member (stopping one a killed daemon left) and waits until it answers /health (or is `join.ready`). */
  async start(): Promise<void> {
    if (this.pid) return;
    await this.stopLeftover();
    await mkdir(this.dataDir, { recursive: true, mode: 0o700 });
    await mkdir(this.tlsDir, { recursive: true, mode: 0o700 });
    await mkdir(this.opts.runDir, { recursive: true });
    const f = (n: string) => join(this.tlsDir, n);
    await writeFile(f('ca.pem'), this.opts.tls.caPem);
    await writeFile(f('cert.pem'), this.opts.tls.certPem);
    await writeFile(f('key.pem'), this.opts.tls.keyPem, { mode: 0o600 });
    const { name, clusterToken } = this.opts;
    const args = [
      '--name', name,
      '--data-dir', this.dataDir,
      '--listen-client-urls', this.clientUrl,
      '--advertise-client-urls', this.clientUrl,
      '--listen-peer-urls', this.peerUrl,
      '--initial-advertise-peer-urls', this.peerUrl,
      '--initial-cluster', this.opts.join?.initialCluster ?? `${name}=${this.peerUrl}`,
      // With data present etcd ignores the --initial-* flags: a restart keeps its cluster.
      '--initial-cluster-state', this.opts.join ? 'existing' : 'new',
      '--initial-cluster-token', clusterToken,
      '--cert-file', f('cert.pem'), '--key-file', f('key.pem'), '--trusted-ca-file', f('ca.pem'), '--client-cert-auth',
      '--peer-cert-file', f('cert.pem'), '--peer-key-file', f('key.pem'), '--peer-trusted-ca-file', f('ca.pem'), '--peer-client-cert-auth',
      '--logger', 'zap', '--log-outputs', 'stderr',
      ...(this.opts.forceNewCluster ? ['--force-new-cluster'] : []),
    ];
    const log = this.opts.log;
    const child = spawn(this.opts.binary ?? 'etcd', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let failed: Error | null = null;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        if (this.child === child) log.debug({ code, signal }, 'swarm etcd member exited');
        resolve();
      });
      child.once('error', (err) => {
        failed = err;
        resolve();
      });
    });
    const tail: string[] = [];
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        tail.push(line);
        if (tail.length > 20) tail.shift();
        log.debug({ etcd: line }, 'swarm etcd member');
      });
    }
    if (child.pid) await writeFile(this.pidFile, `${child.pid}\n`);
    const deadline = Date.now() + (this.opts.startTimeoutMs ?? 30_000);
    for (;;) {
      if (failed || !this.pid) {
        this.child = null;
        throw new Error(`the swarm's etcd member did not start: ${(failed as Error | null)?.message ?? tail.slice(-3).join(' | ')}`);
      }
      if (this.opts.join ? await this.opts.join.ready() : await this.healthy()) return;
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`the swarm's etcd member did not answer ${this.clientUrl}/health in time: ${tail.slice(-3).join(' | ')}`);
      }
      await sleep(100);
    }
  }

  /** SIGTERM, then SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 10_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (this.pid) child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const res = await Promise.race([this.exited.then(() => 'exited'), new Promise((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)))]);
    clearTimeout(timer);
    if (res === 'timeout') {
      child.kill('SIGKILL');
      await this.exited;
    }
    this.child = null;
    await rm(this.pidFile, { force: true });
    await rm(this.tlsDir, { recursive: true, force: true });
  }

  /** Stops and removes the member's data and certificates (leaving the swarm). */
  async remove(): Promise<void> {
    await this.stop();
    await rm(this.dataDir, { recursive: true, force: true });
    await rm(this.tlsDir, { recursive: true, force: true });
  }

  /** GET /health with the node's certificate: true when etcd says it is healthy. */
  healthy(timeoutMs = 2000): Promise<boolean> {
    const { caPem, certPem, keyPem } = this.opts.tls;
    return new Promise((resolve) => {
      const req = request(`${this.clientUrl}/health`, { ca: caPem, cert: certPem, key: keyPem, timeout: timeoutMs }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve(res.statusCode === 200 && /"health":\s*"true"/.test(body)));
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
      req.end();
    });
  }

  /** The member a killed daemon left running: stopped by its PID when its command line names our data. */
  private async stopLeftover(): Promise<void> {
    const pid = Number((await readFile(this.pidFile, 'utf8').catch(() => '')).trim());
    if (!Number.isInteger(pid) || pid <= 0 || !(await isAlive(pid))) return;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.split('\0').includes(this.dataDir)) return;
    this.opts.log.info({ pid }, 'stopping the swarm etcd member a previous daemon left running');
    const signal = (sig: NodeJS.Signals) => {
      try {
        process.kill(pid, sig);
      } catch {
        // gone meanwhile
      }
    };
    signal('SIGTERM');
    for (let i = 0; i < 100 && (await isAlive(pid)); i++) await sleep(100);
    if (await isAlive(pid)) signal('SIGKILL');
    for (let i = 0; i < 50 && (await isAlive(pid)); i++) await sleep(100);
  }
}
