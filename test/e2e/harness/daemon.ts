// Starts a real engined on private temp roots and socket for one test file, and leaves nothing
// behind: the daemon, its supervisor and shims, mounts, the default bridge it made, the roots.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { linkExists, reapRoot, startReaper, type RootState } from './reap.ts';
import { cleanedUp, cleanupAtExit, logTail, signalPid, sleep } from './processes.ts';

export const REPO = resolve(fileURLToPath(new URL('../../../', import.meta.url)));
/** ENGINE_E2E_ENGINED runs the suite against another engined build. */
const ENGINED = process.env.ENGINE_E2E_ENGINED || join(REPO, 'bin', 'engined');
const NODE = join(REPO, 'node_modules', '.bin', 'node');

export interface StartOptions {
  /** Extra engined arguments. */
  args?: string[];
  /** More arguments made from the daemon's own --bip (e.g. a --fixed-cidr inside it); with bridge: true. */
  argsFromBip?: (bip: string) => string[];
  /** Give the daemon its default bridge (engine0); without it the daemon runs with --bridge none. */
  bridge?: boolean;
  /** Written as the daemon's config file (always a private file, never /etc/engine/daemon.json). */
  daemonJson?: Record<string, unknown>;
  /** Extra environment for the daemon. */
  env?: Record<string, string>;
  /** How long to wait for /_ping. Default 30 s. */
  startTimeoutMs?: number;
  /** Put the data root on a tmpfs of this size (e.g. '48m'), mounted under the daemon's temp root. */
  dataRootTmpfs?: string;
  /**
   * Put the data root on a file system of its own: a loop file of `size` (e.g. '1G') under the
   * daemon's temp root, made with mkfs.<type> and mounted with `options` (unmounted by the reaper
   * with every mount under the root; the loop device goes with the mount); `overlay`: an overlay
   * mount of directories under the temp root (size unused).
   */
  dataRootFs?: { type: 'btrfs' | 'xfs' | 'ext4' | 'overlay'; size: string; options?: string };
  /**
   * Run the daemon in this network namespace (a name under /var/run/netns, e.g. a netns.ts
   * handle's names[i]): spawned as `nsenter --net=… engined …`. nsenter execs engined (and the
   * launcher execs node), so the PID is the daemon's; the socket stays on the host's filesystem.
   */
  netns?: string;
  /** The launcher to run instead of ENGINED (e.g. an unpacked package's usr/bin/engined). */
  engined?: string;
}

export interface StopOptions {
  signal?: NodeJS.Signals;
  /** After this, SIGKILL. Default 30 s. */
  timeoutMs?: number;
}

export interface DaemonHandle {
  readonly root: string;
  /** The daemon's own bridge (a unique name) and its address, used when started with bridge: true. */
  readonly bridge: string;
  readonly bip: string;
  readonly socket: string;
  readonly dockerHost: string;
  readonly dataRoot: string;
  readonly execRoot: string;
  readonly pidfile: string;
  readonly configFile: string;
  readonly logFile: string;
  /** PID of the running daemon (changes on restart); 0 when stopped. */
  readonly pid: number;
  /** The whole daemon log (all runs). */
  logs(): string;
  /** Signals the daemon and waits for it to exit; resolves to its exit code (null if killed by a signal). */
  stop(opts?: StopOptions): Promise<number | null>;
  /** Stops the daemon if running (SIGTERM), then starts it again on the same roots. */
  restart(): Promise<void>;
  /** Stops everything it started and removes the roots. Safe to call twice. */
  cleanup(): Promise<void>;
}

/** GET /_ping over the unix socket; true on 200 OK. */
function ping(socket: string, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolvePing) => {
    const req = request({ socketPath: socket, path: '/_ping', method: 'GET', timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolvePing(res.statusCode === 200 && body === 'OK'));
      res.on('error', () => resolvePing(false));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolvePing(false));
    req.end();
  });
}

class Handle implements DaemonHandle {
  readonly root: string;
  readonly bridge: string;
  readonly bip: string;
  readonly socket: string;
  readonly dockerHost: string;
  readonly dataRoot: string;
  readonly execRoot: string;
  readonly pidfile: string;
  readonly configFile: string;
  readonly logFile: string;
  private readonly opts: StartOptions;
  private child: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);
  private cleaned = false;
  private readonly state: RootState;
  private reaperPid = 0;

  constructor(opts: StartOptions) {
    this.opts = opts;
    // Short paths: a unix socket path must fit in 108 bytes, the supervisor's included.
    mkdirSync('/tmp', { recursive: true });
    this.root = mkdtempSync('/tmp/engine-e2e-');
    // A remapped root (--userns-remap) passes through the data root's parents, as under /var/lib.
    if (opts.args?.includes('--userns-remap')) chmodSync(this.root, 0o711);
    this.socket = join(this.root, 'engine.sock');
    this.dockerHost = `unix://${this.socket}`;
    this.dataRoot = join(this.root, 'data');
    this.execRoot = join(this.root, 'exec');
    this.pidfile = join(this.root, 'engine.pid');
    this.configFile = join(this.root, 'daemon.json');
    this.logFile = join(this.root, 'daemon.log');
    // Remove the bridge and iptables chains at the end only if this daemon is the one making them.
    // (Stale ENGINE* iptables chains without the bridge are leftovers of an earlier run: ours too.)
    // Each bridged daemon gets its own bridge, subnet and iptables chains, so test files (and
    // people's own daemons) can run side by side.
    const tag = this.root.slice(-6).replace(/[^A-Za-z0-9]/g, 'x');
    const n = parseInt(tag.replace(/[^0-9a-f]/gi, '0').slice(0, 4), 16);
    this.bridge = `et${tag}`;
    this.bip = `10.${200 + (n % 50)}.${(n >> 6) % 250}.1/24`;
    this.state = { ownsNetwork: !!opts.bridge && !linkExists(this.bridge), bridge: this.bridge, chainPrefix: `E${tag}` };
    writeFileSync(this.configFile, JSON.stringify(opts.daemonJson ?? {}, null, 2));
    // If this process dies without cleanup() (a runner's timeout kill), the reaper does it.
    this.reaperPid = startReaper(this.root, this.state, NODE);
    if (opts.dataRootTmpfs || opts.dataRootFs) {
      // Unmounted by reapRoot (every mount under the root), like the daemon's own mounts.
      try {
        mkdirSync(this.dataRoot);
        const fs = opts.dataRootFs;
        if (fs?.type === 'overlay') {
          const parts = ['lower', 'upper', 'work'].map((p) => join(this.root, `ovl-${p}`));
          for (const p of parts) mkdirSync(p);
          execFileSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${parts[0]},upperdir=${parts[1]},workdir=${parts[2]}`, this.dataRoot], { stdio: 'pipe', timeout: 30_000 });
        } else if (fs) {
          const file = join(this.root, `data.${fs.type}`);
          execFileSync('truncate', ['-s', fs.size, file], { stdio: 'pipe', timeout: 10_000 });
          execFileSync(`mkfs.${fs.type}`, [...(fs.type === 'ext4' ? ['-F', '-q'] : ['-q']), file], { stdio: 'pipe', timeout: 60_000 });
          execFileSync('mount', ['-o', `loop${fs.options ? `,${fs.options}` : ''}`, file, this.dataRoot], { stdio: 'pipe', timeout: 30_000 });
        } else {
          execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${opts.dataRootTmpfs},mode=0711`, 'tmpfs', this.dataRoot], { stdio: 'pipe', timeout: 10_000 });
        }
      } catch (err) {
        this.cleanupSync();
        throw err;
      }
    }
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
    const args = [
      '-H', this.dockerHost,
      '--data-root', this.dataRoot,
      '--exec-root', this.execRoot,
      '-p', this.pidfile,
      '--config-file', this.configFile,
      '--log-level', 'debug',
      ...(this.opts.bridge ? ['--bridge', this.bridge, '--bip', this.bip, ...(this.opts.argsFromBip?.(this.bip) ?? [])] : ['--bridge', 'none']),
      ...(this.opts.args ?? []),
    ];
    const fd = openSync(this.logFile, 'a');
    writeFileSync(fd, `\n===== ${new Date().toISOString()} engined ${args.join(' ')}\n`);
    const engined = this.opts.engined ?? ENGINED;
    const [cmd, ...argv] = this.opts.netns ? ['nsenter', `--net=/var/run/netns/${this.opts.netns}`, engined, ...args] : [engined, ...args];
    const child = spawn(cmd!, argv, {
      cwd: REPO,
      env: { ...process.env, ENGINE_IPTABLES_CHAIN_PREFIX: this.state.chainPrefix ?? '', ...this.opts.env },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    // A test that forgets cleanup() must not hang its file: the exit hook kills the daemon then.
    child.unref();
    this.child = child;
    this.exited = new Promise((resolveExit) => {
      child.once('exit', (code) => resolveExit(code));
      child.once('error', () => resolveExit(null));
    });
    let gone = false;
    void this.exited.then(() => (gone = true));

    const deadline = Date.now() + (this.opts.startTimeoutMs ?? 30_000);
    while (Date.now() < deadline) {
      if (gone) throw new Error(`engined exited during start-up (code ${child.exitCode ?? child.signalCode}); log tail:\n${logTail(this.logs(), 60)}`);
      if (existsSync(this.socket) && (await ping(this.socket))) return;
      await sleep(100);
    }
    throw new Error(`engined did not answer /_ping on ${this.socket} within ${this.opts.startTimeoutMs ?? 30_000} ms; log tail:\n${logTail(this.logs(), 60)}`);
  }

  async stop(opts: StopOptions = {}): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
    signalPid(child.pid!, opts.signal ?? 'SIGTERM');
    const timeout = opts.timeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    const res = await Promise.race([this.exited, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeout)))]);
    clearTimeout(timer);
    if (res !== 'timeout') return res;
    signalPid(child.pid!, 'SIGKILL');
    return this.exited;
  }

  async restart(): Promise<void> {
    if (this.pid) await this.stop({ signal: 'SIGTERM', timeoutMs: 60_000 });
    await this.start();
  }

  async cleanup(): Promise<void> {
    if (this.cleaned) return;
    if (this.pid) await this.stop({ signal: 'SIGTERM', timeoutMs: 30_000 });
    this.cleanupSync();
  }

  /** Synchronous so it can run from process 'exit'. */
  cleanupSync(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    cleanedUp(this);
    noteUncaught(this.logs());
    if (this.pid) signalPid(this.pid, 'SIGKILL');
    reapRoot(this.root, this.state);
    if (this.reaperPid) signalPid(this.reaperPid, 'SIGKILL');
  }
}

/**
 * The uncaught exceptions and unhandled rejections the daemons logged (each ends its daemon:
 * cmd/daemon.ts), collected across the suite in ENGINE_E2E_UNCAUGHT_LOG (hack/test.sh sets it and
 * reports them at its end, where a test's own failure may not say why its daemon went away). The
 * faults a test injects on purpose (POST /debug/fault) are not counted.
 */
function noteUncaught(logs: string): void {
  const file = process.env.ENGINE_E2E_UNCAUGHT_LOG;
  if (!file) return;
  const lines = logs.split('\n').filter((l) => /msg="(uncaught exception|unhandled rejection)/.test(l) && !/injected (exception|rejection)/.test(l));
  if (lines.length) appendFileSync(file, `${lines.join('\n')}\n`);
}

/** Starts engined on fresh temp roots and waits until it answers /_ping. */
/**
 * ENGINE_E2E_STORAGE=btrfs: every daemon that asks for no storage of its own (no driver, no data
 * root file system, no feature) runs on a btrfs loop-file data root with -s btrfs;
 * ENGINE_E2E_STORAGE=snapshotter: with --feature supervisor-snapshotter (hack/test.sh runs the image
 * and container files so once more).
 */
function withSuiteStorage(opts: StartOptions): StartOptions {
  const storage = process.env.ENGINE_E2E_STORAGE;
  if ((storage !== 'btrfs' && storage !== 'snapshotter') || opts.dataRootFs || opts.dataRootTmpfs) return opts;
  const args = opts.args ?? [];
  if (args.some((a) => a === '-s' || a === '--storage-driver' || a.startsWith('--storage-driver=') || a.startsWith('--storage-opt') || a === '--feature')) return opts;
  if (storage === 'snapshotter') return { ...opts, args: [...args, '--feature', 'supervisor-snapshotter'] };
  return { ...opts, dataRootFs: { type: 'btrfs', size: '2G' }, args: [...args, '--storage-driver', 'btrfs'] };
}

export async function startDaemon(given: StartOptions = {}): Promise<DaemonHandle> {
  const opts = withSuiteStorage(given);
  const h = new Handle(opts);
  cleanupAtExit(h);
  try {
    await h.start();
  } catch (err) {
    await h.cleanup();
    throw err;
  }
  return h;
}
