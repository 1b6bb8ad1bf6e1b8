// The daemon's side of the cluster fencer (cmd/fencer.ts): connects to it (starting it when
// nobody answers on its socket), and tells it, whenever either changes, the deadline this node's
// lease could expire by less the margin and the init processes of its swarm task containers
// (lib/cluster/fencer-protocol.ts). Unless a newer order moves it, the fencer kills them at that
// deadline, as the self-fence (./self-fence.ts) would: also when this daemon is dead or frozen. Looked at every 250 ms: a renewal moves the
// deadline every TTL/3; between two looks the fencer holds the previous, earlier one (a kill too
// early, never too late); a container started within the last look is not guarded yet.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { type FenceOrder, fencerSocket, monotonicNs, procStartTime } from '../../lib/cluster/fencer-protocol.ts';
import { swarmTaskContainers } from '../../store/kinds/container.ts';
import type { Store } from '../../store/store.ts';

const LOOK_MS = 250;
const RECONNECT_MS = 500;

export interface FencerLinkOptions {
  execRoot: string;
  store: Pick<Store, 'list'> & Parameters<typeof swarmTaskContainers>[0];
  /** When the lease could expire at etcd, less the margin (performance.now() ms; -Infinity: now). */
  deadline: () => number;
  log: Logger;
}

/** cmd/fencer: the compiled module beside this one's, or the source when run from source. */
function fencerScript(): string {
  const here = import.meta.url;
  if (here.endsWith('/fencer-link.ts')) return fileURLToPath(new URL('../../cmd/fencer.ts', here));
  if (here.endsWith('/fencer-link.js')) return fileURLToPath(new URL('../../cmd/fencer.js', here));
  return fileURLToPath(new URL('./cmd/fencer.js', here)); // the bundle, at the top of build/
}

export class FencerLink {
  private readonly opts: FencerLinkOptions;
  private readonly socketPath: string;
  private sock: Socket | null = null;
  private connected = false;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private spawnedAt = -Infinity;
  /** What the fencer was last told (deadline ms, pids), to send only changes. */
  private sent = '';

  constructor(opts: FencerLinkOptions) {
    this.opts = opts;
    this.socketPath = fencerSocket(opts.execRoot);
  }

  start(): void {
    this.connect();
    this.timer = setInterval(() => this.look(), LOOK_MS);
    this.timer.unref();
  }

  /** Closes the connection: the fencer then guards what it was last told, until the deadline. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.sock?.end();
    this.sock = null;
  }

  private connect(): void {
    if (this.stopped) return;
    const sock = connect(this.socketPath);
    this.sock = sock;
    sock.unref();
    sock.on('connect', () => {
      this.connected = true;
      this.sent = '';
      this.look();
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      const was = this.connected;
      this.connected = false;
      if (this.sock !== sock || this.stopped) return;
      this.sock = null;
      // Nobody answered (or the fencer went): start one, unless one was started just now.
      if (!was && performance.now() - this.spawnedAt > 5000) this.spawn();
      setTimeout(() => this.connect(), was ? 0 : RECONNECT_MS).unref();
    });
  }

  private spawn(): void {
    this.spawnedAt = performance.now();
    const logFile = `${this.opts.execRoot}/cluster-fencer.log`;
    let fd: number | undefined;
    try {
      fd = openSync(logFile, 'a');
      const child = spawn(process.execPath, ['--max-old-space-size=16', fencerScript(), this.socketPath], { detached: true, stdio: ['ignore', 'ignore', fd] });
      child.on('error', (err) => this.opts.log.warn({ err: err.message }, 'starting the cluster fencer failed'));
      child.unref();
      this.opts.log.info({ pid: child.pid, socket: this.socketPath }, 'cluster fencer started');
    } catch (err) {
      this.opts.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'starting the cluster fencer failed');
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** Tells the fencer the deadline and the processes, when either changed. */
  private look(): void {
    if (!this.connected || !this.sock) return;
    const deadlineMs = this.opts.deadline();
    const pids = this.clusterPids();
    const key = `${Math.floor(deadlineMs)} ${pids.map(([p, s]) => `${p}:${s}`).join(',')}`;
    if (key === this.sent) return;
    this.sent = key;
    const deadline = Number.isFinite(deadlineMs) ? monotonicNs() + BigInt(Math.round((deadlineMs - performance.now()) * 1e6)) : 0n;
    const order: FenceOrder = { deadline: String(deadline < 0n ? 0n : deadline), pids };
    this.sock.write(`${JSON.stringify(order)}\n`);
  }

  /** The init process (and its start time) of every swarm task container running here. */
  private clusterPids(): Array<[number, string]> {
    const { store } = this.opts;
    const out: Array<[number, string]> = [];
    for (const c of swarmTaskContainers(store)) {
      const start = c.status.pid ? procStartTime(c.status.pid) : '';
      if (start) out.push([c.status.pid!, start]);
    }
    return out.sort((a, b) => a[0] - b[0]);
  }
}
