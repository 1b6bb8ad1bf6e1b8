// A loop that runs only while a condition holds, as controller-runtime's manager runs the
// runnables that need leader election only on the elected replica: the swarm's orchestrator runs while
// this node leads. A controller is not started twice, so each opening builds a new one; a closing
// stops it (its reconcile in flight finishes; what it writes then is the reconciler's to fence).
// Openings and closings take effect one after the other, in the order they came.
import type { Runnable } from './manager.ts';
import type { Source } from './source.ts';

export interface GateOptions {
  name: string;
  /** Whether the gate is open now (read at start). */
  isOpen: () => boolean;
  /** Tells each change: true opens, false closes. */
  changes: Source<boolean>;
  /** A new runnable for each opening. */
  build: () => Runnable;
}

export class Gated implements Runnable {
  readonly name: string;
  private readonly opts: GateOptions;
  private current: Runnable | null = null;
  private chain: Promise<void> = Promise.resolve();
  private unsubscribe: (() => void) | null = null;
  private stopped = false;

  constructor(opts: GateOptions) {
    this.name = opts.name;
    this.opts = opts;
  }

  /** Whether a runnable is running (or starting) behind the gate now. */
  get running(): boolean {
    return !!this.current;
  }

  start(): Promise<void> {
    this.unsubscribe = this.opts.changes.subscribe((open) => this.set(open));
    this.set(this.opts.isOpen());
    return this.chain;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.set(false);
    await this.chain;
  }

  private set(open: boolean): void {
    if (open && !this.current && !this.stopped) {
      const r = (this.current = this.opts.build());
      this.chain = this.chain.then(() => r.start()).catch(() => {});
    } else if (!open && this.current) {
      const r = this.current;
      this.current = null;
      this.chain = this.chain.then(() => r.stop()).catch(() => {});
    }
  }
}
