// The exec processes this daemon runs, in memory: each one's stdio hub and, once it ended, its exit
// code. What the world is, as the run registry holds the containers' runs (reconcilers/container/
// runs.ts): the exec reconciler adds a process when its start effect made the hub, records the exit
// when the process ended and its stdio was collected, and `exits` wakes the reconciler then (a
// source its controller declares). Who streams an exec (the API's start, a healthcheck probe)
// watches for its hub, which is announced before the process starts, so no output is lost.
import { KeySource } from '../../controllers/source.ts';
import type { HubLike } from '../container/deps.ts';

interface Proc {
  hub: HubLike;
  exitCode: number | null;
}

export class ExecProcesses {
  private readonly procs = new Map<string, Proc>();
  private readonly watchers = new Map<string, Set<(hub: HubLike) => void>>();
  /** An exec's process ended: its id, for the exec controller. */
  readonly exits = new KeySource();

  /** Calls `fn` with the exec's hub once its start made it (before the process starts). */
  watch(id: string, fn: (hub: HubLike) => void): () => void {
    let set = this.watchers.get(id);
    if (!set) this.watchers.set(id, (set = new Set()));
    set.add(fn);
    const cur = this.procs.get(id);
    if (cur) fn(cur.hub);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.watchers.get(id) === set) this.watchers.delete(id);
    };
  }

  /** The start effect made the process's hub: those watching get it now. */
  add(id: string, hub: HubLike): void {
    this.procs.set(id, { hub, exitCode: null });
    for (const fn of this.watchers.get(id) ?? []) fn(hub);
  }

  /** The process ended and its stdio was collected. */
  exited(id: string, exitCode: number): void {
    const p = this.procs.get(id);
    if (p) p.exitCode = exitCode;
    this.exits.emit(id);
  }

  /** The exit code once the process ended; null while it runs; undefined for a process not known here. */
  exitOf(id: string): number | null | undefined {
    return this.procs.get(id)?.exitCode;
  }

  forget(id: string): void {
    this.procs.delete(id);
  }
}
