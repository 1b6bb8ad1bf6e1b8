// A start cut off by the supervisor being out of reach (killed and being restarted: its
// connection refused or dropped) is not the container's failure: the start request stays pending
// (status.runGeneration is not advanced, so `docker start` keeps waiting) and the reconciler
// looks again after a back-off, while the desired state still asks for a new run. A start whose
// supervisor stays away past the window is recorded as failed, as any other.

/** Back-off of the first retry; doubled each time up to MAX_DELAY_MS. */
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 4000;
/** How long after the first such failure a start is still tried again. */
const WINDOW_MS = 60_000;

export class StartRetries {
  private readonly pending = new Map<string, { since: number; attempts: number; notBefore: number }>();
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** The start of `id` failed with the supervisor out of reach: true when it is to be tried again. */
  failed(id: string): boolean {
    const t = this.now();
    const p = this.pending.get(id) ?? { since: t, attempts: 0, notBefore: t };
    if (t - p.since > WINDOW_MS) {
      this.pending.delete(id);
      return false;
    }
    p.notBefore = t + Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** p.attempts);
    p.attempts++;
    this.pending.set(id, p);
    return true;
  }

  /** The start of `id` ended otherwise (ran, or failed for a reason of its own). */
  settled(id: string): void {
    this.pending.delete(id);
  }

  /** How long until the start of `id` may be tried again; undefined when none is waiting. */
  delay(id: string): number | undefined {
    const p = this.pending.get(id);
    return p && Math.max(0, p.notBefore - this.now());
  }

  forget(id: string): void {
    this.pending.delete(id);
  }
}
