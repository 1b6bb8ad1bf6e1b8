// Gives memory back to the system once the daemon goes quiet: once after start-up, then after
// work that made it grow.
//
// V8 keeps the pages a burst of requests needed (its heap shrinks only after a memory-reducing
// collection, run late or never on a busy process), and glibc keeps freed Buffers' memory in its
// arenas (returned only from the top of the heap, so one live allocation pins everything below
// it). Neither matters while the daemon is busy; both leave a resident set that stays at its peak
// once the work is done. So: sample the event loop's utilisation; when it has stayed low for a
// while and the resident set has grown since the last reclaim, run one memory-reducing collection
// (when the runtime exposes one) and trim malloc's arenas. A busy daemon never pays for it. The
// quiet period (8 s, when V8's own memory reducer would begin) is long enough not to fall between
// the steps of one client's work: after a memory-reducing collection V8 sizes its heap from
// scratch, so the next burst of allocation (a long log read, a pull) runs more collections while
// the heap grows again (measured: the first 100 MB pull after one took 1.2 s instead of 0.6).
// That is also the cost of the start-up reclaim (~10 MiB of start-up's garbage and the pages sized
// for it): a new daemon's first large burst, if it comes after 8 quiet seconds, starts from a
// small heap.
// Measured (2026-12-07, a daemon given three rounds of 30 runs and a 200k-line log, 12 s quiet after
// each): each reclaim gave back 15-18 MiB (105 -> 90, 121 -> 104, 121 -> 103, 120 -> 103) and held the
// event loop 80-92 ms, while the daemon was idle; at the end 103 MiB resident, against 129 MiB with
// ENGINE_MEMORY_RECLAIM=0 (no reclaim) after the same work. It stays.
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

export interface MemoryReclaimOptions {
  /** How often utilisation is sampled. Default 0.5 s. */
  intervalMs?: number;
  /** How long the loop must stay quiet before a reclaim. Default 8 s (when V8's own memory reducer would start). */
  quietMs?: number;
  /** Utilisation below this counts as quiet. Default 0.1. */
  quietBelow?: number;
  /** Growth of the resident set since the last reclaim that makes one worth it. Default 8 MiB. */
  minGrowthBytes?: number;
  /** A full, memory-reducing collection (none: only the arenas are trimmed). */
  collect?: (() => void) | null;
  /** Returns freed malloc memory to the system. */
  trim: () => void;
  /** The resident set in bytes. */
  rss?: () => number;
  /** Utilisation since the previous sample (0..1). */
  utilisation?: () => number;
  /** Told after each reclaim (for the debug log). */
  onReclaim?: (before: number, after: number, ms: number) => void;
}

export interface MemoryReclaimer {
  /** One sampling step (what the timer runs); exposed for tests. */
  tick(): void;
  stop(): void;
}

/** The V8 collection that also releases pooled pages, when node runs with --expose-gc. */
export function memoryReducingCollection(): (() => void) | null {
  const gc = globalThis.gc;
  if (typeof gc !== 'function') return null;
  return () => void gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

function loopUtilisation(): () => number {
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const u = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return u;
  };
}

export function startMemoryReclaimer(o: MemoryReclaimOptions): MemoryReclaimer {
  const intervalMs = o.intervalMs ?? 500;
  const quietTicks = Math.max(1, Math.ceil((o.quietMs ?? 8000) / intervalMs));
  const quietBelow = o.quietBelow ?? 0.1;
  const minGrowth = o.minGrowthBytes ?? 8 * 1024 * 1024;
  const rss = o.rss ?? (() => process.memoryUsage.rss());
  const utilisation = o.utilisation ?? loopUtilisation();
  // Set when the daemon first goes quiet, after one reclaim: what start-up left is the floor, and
  // only what work adds beyond it is worth a reclaim later.
  let baseline: number | null = null;
  let quiet = 0;

  const reclaim = () => {
    const before = rss();
    const t0 = performance.now();
    try {
      o.collect?.();
      o.trim();
    } catch {
      // Best effort: nothing depends on it.
    }
    baseline = rss();
    o.onReclaim?.(before, baseline, performance.now() - t0);
  };

  const tick = () => {
    if (utilisation() >= quietBelow) {
      quiet = 0;
      return;
    }
    quiet++;
    if (quiet < quietTicks) return;
    if (baseline === null) {
      // Start-up leaves garbage in V8's heap (module evaluation, the store's first read), pages
      // sized for it, and freed parser and compiler memory in malloc's arenas: one reclaim gives
      // back ~10 MiB. What is left is the floor.
      reclaim();
      return;
    }
    const now = rss();
    // Lower the baseline when memory went down by itself, so growth is counted from there.
    if (now < baseline) baseline = now;
    if (now - baseline >= minGrowth) reclaim();
  };

  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return { tick, stop: () => clearInterval(timer) };
}
