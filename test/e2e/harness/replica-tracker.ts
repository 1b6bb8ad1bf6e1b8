// Where each replica of a cluster stack runs, by the processes on the host: the daemons' APIs name
// each container's init PID (asked every few hundred ms, remembered when a daemon stops answering),
// and the host's /proc says, every 200 ms, whether each PID known still lives and when it started
// (its start time, exact, however late it was learned). A replica ran on two nodes at once when
// one of its processes started before another of its processes on another node was last seen
// alive: that overlap is certain, not an artefact of when anyone looked.
import { readFileSync } from 'node:fs';
import { procStartTime } from '../../../lib/cluster/fencer-protocol.ts';
import { dockerOk } from './clients.ts';
import type { DaemonHandle } from './daemon.ts';

/** Seconds since boot (the clock /proc's start times count on). */
export const uptime = (): number => Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);

/** When process `pid` started, in seconds since boot (ticks of 1/100 s); -1 if it is gone. */
export function startedAt(pid: number): number {
  const ticks = procStartTime(pid);
  return ticks ? Number(ticks) / 100 : -1;
}

export interface ReplicaProcess {
  replica: string;
  node: number;
  pid: number;
  startUp: number;
  lastAliveUp: number;
  /** When it was first seen gone (-1 while alive). */
  goneUp: number;
}

export interface DoubleRun {
  replica: string;
  a: ReplicaProcess;
  b: ReplicaProcess;
}

export class ReplicaTracker {
  readonly procs: ReplicaProcess[] = [];
  /** Known processes by PID and start time (a PID the kernel reuses is another process). */
  private readonly known = new Set<string>();
  private readonly daemons: readonly DaemonHandle[];
  private readonly project: string;
  private poll: NodeJS.Timeout | null = null;
  private asking = false;
  private stopped = false;

  /** `daemons[i]` is node i; `project` the cluster stack (its services' com.docker.stack.namespace label). */
  constructor(daemons: readonly DaemonHandle[], project: string) {
    this.daemons = daemons;
    this.project = project;
  }

  start(): void {
    this.poll = setInterval(() => this.look(), 200);
    void this.askLoop();
  }

  stop(): void {
    this.stopped = true;
    if (this.poll) clearInterval(this.poll);
  }

  /** The replica processes alive now, per replica name. */
  aliveNow(): Map<string, ReplicaProcess[]> {
    const out = new Map<string, ReplicaProcess[]>();
    for (const p of this.procs) if (p.goneUp < 0) out.set(p.replica, [...(out.get(p.replica) ?? []), p]);
    return out;
  }

  /** Every certain overlap of one replica's processes on two nodes. */
  doubles(): DoubleRun[] {
    const out: DoubleRun[] = [];
    for (const a of this.procs)
      for (const b of this.procs)
        if (a !== b && a.replica === b.replica && a.node !== b.node && b.startUp >= a.startUp && b.startUp < a.lastAliveUp) out.push({ replica: a.replica, a, b });
    return out;
  }

  private look(): void {
    const now = uptime();
    for (const p of this.procs) {
      if (p.goneUp >= 0) continue;
      if (startedAt(p.pid) === p.startUp) p.lastAliveUp = now;
      else p.goneUp = now;
    }
  }

  private async askLoop(): Promise<void> {
    while (!this.stopped) {
      if (!this.asking) {
        this.asking = true;
        await Promise.all(this.daemons.map((d, i) => this.ask(d, i).catch(() => {})));
        this.asking = false;
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  private async ask(d: DaemonHandle, node: number): Promise<void> {
    if (!d.pid) return;
    const dk = dockerOk(() => d);
    const ids = (await dk('ps', '-q', '--filter', `label=com.docker.stack.namespace=${this.project}`)).split('\n').filter(Boolean);
    if (ids.length === 0) return;
    for (const line of (await dk('inspect', '-f', '{{.Name}} {{.State.Pid}}', ...ids)).split('\n')) {
      const [name, pidText] = line.trim().split(' ');
      const pid = Number(pidText);
      if (!name || !pid) continue;
      const startUp = startedAt(pid);
      if (startUp < 0 || this.known.has(`${pid}:${startUp}`)) continue;
      // A replica is a service's slot (SERVICE.SLOT), whichever task runs it.
      const p: ReplicaProcess = { replica: name.replace(/^\//, '').split('.').slice(0, 2).join('.'), node, pid, startUp, lastAliveUp: uptime(), goneUp: -1 };
      this.known.add(`${pid}:${startUp}`);
      this.procs.push(p);
    }
  }
}
