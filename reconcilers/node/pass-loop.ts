// One pass at a time, level-triggered: a kick while a pass runs asks for one more after it; an
// interval kicks every few seconds (a missed event never strands the loop); a watched etcd prefix
// kicks on every change. The node agent and the leader's placer run on it.
import type { Etcd3 } from 'etcd3';
import { isWatchCanceled, watchPrefix } from './etcd-watch.ts';

/** How soon a watch etcd canceled is made again. */
const REWATCH_MS = 500;

export interface PassLoopOptions {
  everyMs: number;
  /** A pass runs only while this holds (the placer: while leading). */
  when?: () => boolean;
  onError: (err: unknown) => void;
}

export class PassLoop {
  private readonly pass: () => Promise<void>;
  private readonly opts: PassLoopOptions;
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly cancels: Array<() => Promise<void>> = [];
  private readonly watched = new Set<string>();

  constructor(pass: () => Promise<void>, opts: PassLoopOptions) {
    this.pass = pass;
    this.opts = opts;
  }

  start(): void {
    this.timer = setInterval(() => this.kick(), this.opts.everyMs);
    this.timer.unref();
  }

  /** Kicks on every change under `prefix` (once per prefix; the client re-watches across reconnects). */
  async watchPrefix(client: Etcd3, prefix: string): Promise<void> {
    if (this.watched.has(prefix) || this.stopped) return;
    this.watched.add(prefix);
    try {
      const w = await watchPrefix(client, prefix);
      w.on('put', () => this.kick());
      w.on('delete', () => this.kick());
      w.on('error', (err) => {
        // Canceled by etcd (resumed from a compacted revision): watched again, and a pass now.
        if (!isWatchCanceled(err) || this.stopped) return;
        this.watched.delete(prefix);
        setTimeout(() => void this.watchPrefix(client, prefix).catch(() => {}), REWATCH_MS).unref();
        this.kick();
      });
      this.cancels.push(() => w.cancel());
    } catch (err) {
      this.watched.delete(prefix);
      throw err;
    }
  }

  kick(): void {
    if (this.stopped || (this.opts.when && !this.opts.when())) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch((err: unknown) => this.opts.onError(err))
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => {});
    for (const c of this.cancels) await c().catch(() => {});
  }
}
