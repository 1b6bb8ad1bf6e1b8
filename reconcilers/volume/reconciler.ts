// Volume reconciler: makes each volume record's data exist (the directory under
// `<data-root>/volumes`) and, once the spec says removed and no container names the volume any
// more, takes the data away and then deletes the record. The lifecycle is machine.ts driven with
// the pure `transition` function (controllers/machine-driver.ts), as the network reconciler does.
import type { Logger } from 'pino';
import { fromPromise, type SnapshotFrom } from 'xstate';
import { topState } from '../../controllers/machine-driver.ts';
import { MachineHost, type Held } from '../../controllers/machine-host.ts';
import { isCode } from '../../lib/errors.ts';
import { Containers } from '../../store/kinds/container.ts';
import { type VolumeStatus, Volumes, type VolumeResource } from '../../store/kinds/volume.ts';
import type { VolumeDriverPort, VolumeStore } from './deps.ts';
import { restoredContext, settledStateOf, volumeLifecycle, type EffectInput, type VolumeEvent, type VolumeFacts } from './machine.ts';

export interface ReconcileContext {
  signal: AbortSignal;
  log: Logger;
}

type Machine = ReturnType<typeof volumeLifecycle.provide>;
type Snapshot = SnapshotFrom<Machine>;

/** Whether some container record (in any state) mounts the volume. */
export function volumeInUse(store: Pick<VolumeStore, 'list'>, name: string): boolean {
  return store
    .list(Containers)
    .some((c) => (c.spec.mountPoints ?? []).some((m) => m.type === 'volume' && m.name === name));
}

export class VolumeReconciler {
  readonly name = 'volume';
  readonly kind = Volumes.name;
  private readonly store: VolumeStore;
  private readonly driver: VolumeDriverPort;
  private readonly machines: MachineHost<Machine>;

  constructor(store: VolumeStore, driver: VolumeDriverPort) {
    this.store = store;
    this.driver = driver;
    const machine = volumeLifecycle.provide({
      actors: {
        create: fromPromise<string, EffectInput>(async ({ input }) => (await this.driver.ensure(input.name)).mountpoint),
        teardown: fromPromise<void, EffectInput>(({ input }) => this.teardown(input.name)),
      },
    });
    this.machines = new MachineHost(machine, { name: 'volume' });
  }

  /** Daemon shutdown: the effects under way are aborted. */
  stop(): void {
    this.machines.stop();
  }

  async reconcile(name: string, ctx: ReconcileContext): Promise<void | { requeueAfter: number }> {
    const r = this.store.get(Volumes, name);
    if (!r) {
      this.machines.forget(name);
      return;
    }
    const facts: VolumeFacts = { name, now: Date.now(), inUse: r.spec.desired === 'removed' && volumeInUse(this.store, name) };
    const held = this.machines.current(name, () => this.restore(r, facts));
    const events: VolumeEvent[] = [{ type: 'OBSERVED', facts }, r.spec.desired === 'removed' ? { type: 'REMOVE' } : { type: 'APPLY' }];
    const res = await this.machines.run(name, held, events, { signal: ctx.signal, now: () => facts.now });
    this.machines.keep(name, res);
    if (topState(res.snapshot) === 'removed') ctx.log.info({ volume: name }, 'volume removed');
    return this.writeOutcome(r, res.snapshot, res.requeueAfter);
  }

  private restore(r: VolumeResource, facts: VolumeFacts): Held<Machine> {
    const snapshot = this.machines.machine.resolveState({ value: settledStateOf(r.status.phase), context: restoredContext(facts, r.status.mountpoint) }) as Snapshot;
    return { snapshot, timers: [] };
  }

  private writeOutcome(r: VolumeResource, snap: Snapshot, requeueAfter: number | undefined): void | { requeueAfter: number } {
    const c = snap.context;
    switch (topState(snap)) {
      case 'removed':
        return;
      case 'ready':
        if (r.status.phase !== 'ready' || r.status.observedGeneration < r.generation || r.status.mountpoint !== c.mountpoint) {
          this.writeStatus(r, { phase: 'ready', error: '', mountpoint: c.mountpoint, observedGeneration: r.generation });
        }
        return;
      case 'failed':
        // Written on change only: a status write wakes this loop, the controller's back-off paces the retry.
        if (r.status.phase !== 'failed' || r.status.error !== c.error) this.writeStatus(r, { phase: 'failed', error: c.error, observedGeneration: r.generation });
        throw c.cause;
      case 'removing':
        if (r.status.phase !== 'removing' || r.status.error !== c.error) this.writeStatus(r, { phase: 'removing', error: c.error });
        // Waiting on a container: looked at again when the machine's timer is due.
        if (requeueAfter !== undefined) return { requeueAfter };
        throw c.cause ?? new Error(`volume ${r.name}: removal stalled`);
      default:
        throw c.cause ?? new Error(`volume ${r.name}: reconcile ended in ${topState(snap)}`);
    }
  }

  private async teardown(name: string): Promise<void> {
    await this.driver.remove(name);
    this.store.delete(Volumes, name);
  }

  private writeStatus(r: VolumeResource, patch: Partial<VolumeStatus>): void {
    try {
      this.store.updateStatus(Volumes, r.name, (s) => ({ ...s, ...patch }));
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
    }
  }
}
