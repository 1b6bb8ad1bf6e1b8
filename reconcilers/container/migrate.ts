// Container records written before desired state became a level carried request counters
// (spec.startSeq, spec.stop.seq, spec.kill.seq against status.startSeq/stopSeq/killSeq). They are
// rewritten once at start-up, before any controller or route reads them: the start counter is the
// run generation (a start asked for and not yet seen stays pending), the stop options stay, a
// pending kill is dropped (a one-off signal, not state: the container's level still applies).
import type { ContainerSpec, ContainerStatus } from '../../store/types.ts';
import { KIND } from '../../store/types.ts';
import type { ReconcilerStore } from '../store-like.ts';

interface CounterSpec {
  startSeq?: number;
  stop?: { seq?: number; signal?: string; timeout?: number | null };
  kill?: unknown;
}
interface CounterStatus {
  startSeq?: number;
  stopSeq?: number;
  killSeq?: number;
}

/** Rewrites every container record that still has counters; answers how many it rewrote. */
export function migrateContainerRecords(store: Pick<ReconcilerStore, 'list' | 'updateSpec' | 'updateStatus'>): number {
  let n = 0;
  for (const r of store.list<ContainerSpec & CounterSpec, ContainerStatus & CounterStatus>(KIND.container)) {
    if (typeof r.spec.runGeneration === 'number' && typeof r.status.runGeneration === 'number') continue;
    store.updateStatus<ContainerSpec & CounterSpec, ContainerStatus & CounterStatus>(KIND.container, r.name, (s) => {
      const { startSeq, stopSeq: _stop, killSeq: _kill, ...rest } = s;
      return { ...rest, runGeneration: rest.runGeneration ?? startSeq ?? 0 };
    });
    store.updateSpec<ContainerSpec & CounterSpec, ContainerStatus & CounterStatus>(KIND.container, r.name, (sp) => {
      const { startSeq, stop, kill: _kill, ...rest } = sp;
      const stopOptions = stop ? { signal: stop.signal, timeout: stop.timeout ?? null } : rest.stopOptions;
      return { ...rest, runGeneration: rest.runGeneration ?? startSeq ?? 0, stopOptions };
    });
    n++;
  }
  return n;
}
