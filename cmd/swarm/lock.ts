// Autolock on a manager, reconciled: the desired seal is the swarm's unlock key in etcd
// (./objects.ts UNLOCK_KEY: set by `swarm init --autolock` and `swarm update --autolock`, replaced
// by a rotation, removed when autolock is turned off), the observed one the key the node's private
// key is sealed under on disk (./state.ts). A manager whose seal differs seals its key again; a
// worker keeps its key plain. A manager started with a sealed key is locked until `swarm unlock`
// gives the key (./node.ts).
import type { Logger } from 'pino';
import { parseUnlockKey } from '../../lib/swarm/unlock-key.ts';
import type { SwarmFiles, SwarmState } from './state.ts';

export interface LockDeps {
  /** The node's state now (undefined: in no swarm, or not running). */
  state: () => SwarmState | undefined;
  /** The swarm's unlock key (undefined: autolock is off). */
  unlockKey: () => Promise<string | undefined>;
  files: SwarmFiles;
  serial: <T>(fn: () => Promise<T>) => Promise<T>;
  log: Logger;
}

export class LockReconciler {
  private readonly d: LockDeps;

  constructor(d: LockDeps) {
    this.d = d;
  }

  async look(): Promise<void> {
    const state = this.d.state();
    if (!state) return;
    try {
      const desired = state.role === 'manager' ? await this.d.unlockKey() : undefined;
      const want = desired ? parseUnlockKey(desired) : undefined;
      const have = this.d.files.unlockKey;
      if ((want && have && want.equals(have)) || (!want && !have)) return;
      await this.d.serial(async () => {
        if (this.d.state() !== state) return;
        await this.d.files.sealWith(want);
        this.d.log.info({ sealed: !!want }, want ? 'the node key is sealed by the swarm\'s unlock key' : 'the node key is kept plain: autolock is off');
      });
    } catch (err) {
      this.d.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'the node key\'s seal could not be brought in line with the swarm\'s autolock yet');
    }
  }
}
