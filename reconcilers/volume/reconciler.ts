// Volume reconciler: makes each volume record's data exist (the directory under
// `<data-root>/volumes`) and, once the spec says removed and no container names the volume any
// more, takes the data away and then deletes the record. The lifecycle is machine.ts driven with
// the pure `transition` function (controllers/machine-driver.ts), as the network reconciler does.
import type { Logger } from 'pino';
import { fromPromise, type SnapshotFrom } from 'xstate';
import { drive, topState, type MachineTimer } from '../../controllers/machine-driver.ts';
import { EngineError, isCode } from '../../lib/errors.ts';
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

interface Held {
  snapshot: Snapshot;
  timers: MachineTimer[];
}

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
  private readonly machine: Machine;
  private readonly held = new Map<string, Held>();
  /** The reconcile in flight per key, for the effects. */
  private readonly active = new Map<string, { r: VolumeResource; ctx: ReconcileContext }>();

  constructor(store: VolumeStore, driver: VolumeDriverPort) {
    this.store = store;
    this.driver = driver;
    this.machine = volumeLifecycle.provide({
      actors: {
        create: fromPromise<string, EffectInput>(async ({ input }) => (await this.driver.ensure(input.name)).mountpoint),
        teardown: fromPromise<void, EffectInput>(({ input }) => this.teardown(input.name)),
      },
    });
  }

  async reconcile(name: string, ctx: ReconcileContext): Promise<void | { requeueAfter: number }> {
    const r = this.store.get(Volumes, name);
    if (!r) {
      this.held.delete(name);
      return;
    }
    const facts: VolumeFacts = { name, now: Date.now(), inUse: r.spec.desired === 'removed' && volumeInUse(this.store, name) };
    const held = this.held.get(name) ?? this.restore(r, facts);
    const events: VolumeEvent[] = [{ type: 'OBSERVED', facts }, r.spec.desired === 'removed' ? { type: 'REMOVE' } : { type: 'APPLY' }];
    this.active.set(name, { r, ctx });
    let res;
    try {
      res = await drive(this.machine, held.snapshot, held.timers, events, { signal: ctx.signal, now: () => facts.now });
    } finally {
      this.active.delete(name);
    }
    const snap = res.snapshot;
    if (ctx.signal.aborted && snap.status !== 'done') {
      this.held.delete(name);
      throw new EngineError('Canceled', `volume ${name}: reconcile canceled`, { cause: ctx.signal.reason });
    }
    if (snap.status === 'done') this.held.delete(name);
    else this.held.set(name, { snapshot: snap, timers: res.timers });
    return this.writeOutcome(r, snap, res.requeueAfter);
  }

  private restore(r: VolumeResource, facts: VolumeFacts): Held {
    const snapshot = this.machine.resolveState({ value: settledStateOf(r.status.phase), context: restoredContext(facts, r.status.mountpoint) }) as Snapshot;
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
    const a = this.active.get(name);
    await this.driver.remove(name);
    this.store.delete(Volumes, name);
    a?.ctx.log.info({ volume: name }, 'volume removed');
  }

  private writeStatus(r: VolumeResource, patch: Partial<VolumeStatus>): void {
    try {
      this.store.updateStatus(Volumes, r.name, (s) => ({ ...s, ...patch }));
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
    }
  }
}
