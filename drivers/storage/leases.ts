// Who holds which layers: leases (an operation about to reference layers from a new image) and
// applies on top of a parent. A held layer is never removed. When a lease lets go of layers nothing
// else holds, the release listeners hear of them (the image reconciler collects the ones no image
// took up, such as a failed pull's).
import type { Logger } from 'pino';
import { failedPrecondition } from '../../lib/errors.ts';
import type { LayerLease } from './types.ts';

export class LayerHolds {
  private readonly held = new Map<string, number>();
  private readonly listeners = new Set<(chainIds: string[]) => void>();
  private readonly exists: (chainId: string) => boolean;
  private readonly log: Logger | undefined;

  /** `exists`: whether the store has the layer (only present layers are reported on release). */
  constructor(exists: (chainId: string) => boolean, log?: Logger) {
    this.exists = exists;
    this.log = log;
  }

  hold(chainId: string): void {
    this.held.set(chainId, (this.held.get(chainId) ?? 0) + 1);
  }

  /** True when nothing holds the layer any more. */
  unhold(chainId: string): boolean {
    const n = (this.held.get(chainId) ?? 0) - 1;
    if (n > 0) {
      this.held.set(chainId, n);
      return false;
    }
    this.held.delete(chainId);
    return true;
  }

  isHeld(chainId: string): boolean {
    return this.held.has(chainId);
  }

  lease(): LayerLease {
    const chainIds = new Set<string>();
    let released = false;
    return {
      add: (chainId) => {
        if (released) throw failedPrecondition('layer lease already released');
        if (chainIds.has(chainId)) return;
        chainIds.add(chainId);
        this.hold(chainId);
      },
      release: () => {
        if (released) return;
        released = true;
        const freed = [...chainIds].filter((c) => this.unhold(c) && this.exists(c));
        if (freed.length === 0) return;
        for (const fn of this.listeners) {
          try {
            fn(freed);
          } catch (err) {
            this.log?.warn({ err }, 'layer release listener failed');
          }
        }
      },
    };
  }

  onRelease(fn: (chainIds: string[]) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
