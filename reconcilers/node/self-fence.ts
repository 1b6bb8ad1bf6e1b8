// Self-fencing: a node that cannot renew its lease stops its cluster-placed containers before
// the lease could have expired at etcd, by its own monotonic clock, so that the leader — which
// re-places a node's replicas only once its lease has expired — never finds them still running
// here. What the node knows for sure is when it SENT each keep-alive that etcd answered: etcd
// renewed the lease on receiving it, so the lease lives at least until that send time + TTL.
//
//   renewed at s (the send time of the oldest keep-alive answered)
//   s + max(TTL/2, TTL - margin - TTL/6)
//                      no renewal since: fencing starts (cluster containers get SIGTERM)
//   s + TTL - margin   the fence deadline: whatever still runs gets SIGKILL, whatever its grace
//   s + TTL            the earliest the lease can expire at etcd; the leader re-places after it
//
// Keep-alives go every TTL/3, so fencing starts only after one has gone unanswered for most of an
// interval and the next is late (a busy moment does not stop everything). The margin covers the clock rates of two machines and the kill itself; it must leave time
// to stop (margin < TTL/2: the option `fence.margin` is refused otherwise, lib/cluster/store-url.ts). Once fenced, the node starts
// nothing cluster-placed until it holds a lease again AND has read its tasks under it.
// The timer logic is here, pure and clock-injected (unit-tested with a fake clock); the task runner
// does the stopping (./task-runner.ts), membership feeds the lease's events (./membership.ts).

export interface FenceClock {
  /** Monotonic milliseconds. */
  now(): number;
  /** Runs `fn` after `ms`; answers the cancel. */
  after(ms: number, fn: () => void): () => void;
}

export const monotonicClock: FenceClock = {
  now: () => performance.now(),
  after(ms, fn) {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref();
    return () => clearTimeout(t);
  },
};

export type FenceState =
  /** No lease held since the start: nothing cluster-placed starts; nothing is stopped either. */
  | 'unheld'
  /** The lease is renewed in time. */
  | 'held'
  /** Renewal overdue: cluster containers are being stopped (deadline `killAt`). */
  | 'fencing'
  /** Past the deadline: whatever still ran was killed; waiting for a lease and the tasks. */
  | 'fenced';

export interface SelfFenceOptions {
  ttlMs: number;
  marginMs: number;
  clock?: FenceClock;
  /** Stop every cluster-placed container: SIGTERM now, SIGKILL at `killAt` (clock ms) at the latest. */
  onFence: (killAt: number) => void;
  /** The deadline: kill whatever cluster-placed still runs. */
  onDeadline: () => void;
  /** Fenced no more: a lease is held and the tasks were read under it. */
  onRelease: () => void;
}

export class SelfFence {
  private readonly opts: SelfFenceOptions;
  private readonly clock: FenceClock;
  private st: FenceState = 'unheld';
  /** Send times of keep-alives not answered yet, oldest first. */
  private readonly outstanding: number[] = [];
  /** The send time of the last keep-alive (or grant) etcd answered. */
  private renewedSentAt = -Infinity;
  private cancelTimer: (() => void) | null = null;
  /** A lease was granted or renewed since the node was fenced (tasks still to be read under it). */
  private regranted = false;
  /** When fencing began (clock ms). */
  private fencedAt = Infinity;

  constructor(opts: SelfFenceOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? monotonicClock;
  }

  get state(): FenceState {
    return this.st;
  }

  /** Cluster-placed containers may start (a lease is held and nothing is fenced). */
  get startsAllowed(): boolean {
    return this.st === 'held';
  }

  /** The lease lives at etcd at least until then (clock ms); -Infinity before any grant. */
  get leaseAtLeastUntil(): number {
    return this.renewedSentAt + this.opts.ttlMs;
  }

  /** A lease grant was sent at `sentAt` and answered. */
  granted(sentAt: number): void {
    this.outstanding.length = 0;
    // A grant sent after the fence began counts as a renewal then (renew() marks it).
    this.renew(sentAt);
    if (this.st === 'unheld') this.release();
  }

  keepaliveSent(): void {
    this.outstanding.push(this.clock.now());
  }

  /** A keep-alive was answered (the oldest outstanding one: the stream answers in order). */
  keepaliveAnswered(): void {
    const sentAt = this.outstanding.shift();
    if (sentAt !== undefined) this.renew(sentAt);
  }

  /** The keep-alive stream broke: its unanswered requests will never be answered. */
  keepaliveBroken(): void {
    this.outstanding.length = 0;
  }

  /**
   * The lease is gone (etcd answered that it expired, or it was revoked): the leader may re-place
   * now, so the deadline is now.
   */
  lost(): void {
    this.renewedSentAt = Math.min(this.renewedSentAt, this.clock.now() - this.opts.ttlMs + this.opts.marginMs);
    this.outstanding.length = 0;
    this.regranted = false;
    if (this.st === 'held') this.startFencing();
  }

  /** The task runner read this node's tasks from etcd: under a lease granted after the fence, that ends it. */
  tasksRead(): void {
    if ((this.st === 'fenced' || this.st === 'fencing') && this.regranted) this.release();
  }

  stop(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
  }

  private renew(sentAt: number): void {
    if (sentAt <= this.renewedSentAt) return;
    this.renewedSentAt = sentAt;
    if (this.st === 'held') this.arm();
    // A renewal sent after the fence began: the lease never expired, so the leader has re-placed
    // nothing; the tasks read from now on end the fence. (A fence under way completes.)
    else if (this.st !== 'unheld' && sentAt >= this.fencedAt) this.regranted = true;
  }

  private release(): void {
    this.st = 'held';
    this.regranted = false;
    this.arm();
    this.opts.onRelease();
  }

  /**
   * How long after the last renewal's send time fencing starts: TTL/6 before the kill (the time a
   * container gets for its stop signal), at TTL/2 at the earliest. Keep-alives go every TTL/3: one
   * may take up to TTL - margin - TTL/6 - TTL/3 to be answered (0.9 s at TTL 3, 5.5 s at 15)
   * before a node fences, so a slow answer or a busy moment does not stop everything.
   */
  private get fenceAfter(): number {
    const { ttlMs, marginMs } = this.opts;
    return Math.max(ttlMs / 2, ttlMs - marginMs - ttlMs / 6);
  }

  /** While held: fencing starts at renewed + fenceAfter unless a renewal comes first. */
  private arm(): void {
    this.cancelTimer?.();
    const at = this.renewedSentAt + this.fenceAfter;
    this.cancelTimer = this.clock.after(at - this.clock.now(), () => {
      this.cancelTimer = null;
      if (this.st !== 'held') return;
      if (this.clock.now() < this.renewedSentAt + this.fenceAfter) return this.arm();
      this.startFencing();
    });
  }

  private startFencing(): void {
    this.cancelTimer?.();
    this.st = 'fencing';
    this.fencedAt = this.clock.now();
    this.regranted = false;
    const killAt = this.renewedSentAt + this.opts.ttlMs - this.opts.marginMs;
    this.opts.onFence(killAt);
    this.cancelTimer = this.clock.after(killAt - this.clock.now(), () => {
      this.cancelTimer = null;
      if (this.st !== 'fencing') return;
      this.st = 'fenced';
      this.opts.onDeadline();
    });
  }
}
