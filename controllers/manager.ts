// Starts every controller in the order added and stops them in reverse, so a controller that
// others depend on (images before containers) is up first and down last.
import type { Logger } from 'pino';

export interface Runnable {
  readonly name?: string;
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
}

export class Manager {
  private readonly items: Runnable[] = [];
  private readonly running: Runnable[] = [];
  private readonly log: Logger | undefined;

  constructor(opts: { log?: Logger } = {}) {
    this.log = opts.log;
  }

  add(r: Runnable): void {
    this.items.push(r);
  }

  /** Starts all; if one fails, stops those already started and rethrows. */
  async start(): Promise<void> {
    for (const r of this.items) {
      if (this.running.includes(r)) continue;
      try {
        await r.start();
      } catch (err) {
        await this.stop();
        throw err;
      }
      this.running.push(r);
    }
  }

  /** Stops every started controller, last started first; one failing does not keep the others running. */
  async stop(): Promise<void> {
    while (this.running.length > 0) {
      const r = this.running.pop()!;
      try {
        await r.stop();
      } catch (err) {
        this.log?.error({ err, controller: r.name }, 'stopping controller failed');
      }
    }
  }
}
