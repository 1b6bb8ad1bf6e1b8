// A counting semaphore shared by every pull (downloads) or push (uploads) of the daemon, so the
// --max-concurrent-* limits hold across concurrent operations.
export class Limiter {
  private max: number;
  private active = 0;
  private readonly queue: Array<() => void> = [];

  constructor(max: number) {
    this.max = Math.max(1, max);
  }

  setMax(max: number): void {
    this.max = Math.max(1, max);
    this.drain();
  }

  /** Wait for a slot; `onWait` runs when the caller has to queue. Returns the release function. */
  async acquire(signal: AbortSignal, onWait?: () => void): Promise<() => void> {
    signal.throwIfAborted();
    if (this.active >= this.max || this.queue.length) {
      onWait?.();
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal.removeEventListener('abort', abort);
          resolve();
        };
        const abort = () => {
          const i = this.queue.indexOf(go);
          if (i >= 0) this.queue.splice(i, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', abort, { once: true });
        this.queue.push(go);
      });
    } else {
      this.active++;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      this.drain();
    };
  }

  private drain(): void {
    while (this.active < this.max && this.queue.length) {
      this.active++;
      this.queue.shift()!();
    }
  }
}
