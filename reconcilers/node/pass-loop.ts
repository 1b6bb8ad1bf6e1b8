// One pass at a time, level-triggered: a kick while a pass runs asks for one more after it; an
// interval kicks every few seconds (a missed event never strands the loop); the owner's caches of
// etcd prefixes (./prefix-cache.ts) kick on every change. The node agent and the leader's placer
// run on it.

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

  constructor(pass: () => Promise<void>, opts: PassLoopOptions) {
    this.pass = pass;
    this.opts = opts;
  }

  start(): void {
    this.timer = setInterval(() => this.kick(), this.opts.everyMs);
    this.timer.unref();
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
  }
}
