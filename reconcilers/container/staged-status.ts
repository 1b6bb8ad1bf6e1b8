// Status changes a reconcile has made but not yet written. A reconcile's steps stage theirs and
// the reconcile writes them in one store transaction when it ends (each write is a SQLite commit
// and wakes every watcher); `set` writes at once what others must see without waiting (an exit,
// a removal). Keys are never reconciled concurrently, so one entry per id suffices.
import { type ContainerStatus, Containers } from '../../store/kinds/container.ts';

import type { ReconcilerStore } from '../store-like.ts';
import { isStorageFull } from '../../store/reserve.ts';

type Mutate = (s: ContainerStatus) => ContainerStatus;

export class StagedStatus {
  private readonly staged = new Map<string, Mutate>();
  private readonly store: ReconcilerStore;

  constructor(store: ReconcilerStore) {
    this.store = store;
  }

  /** The status as the reconciler sees it: the store's, with the staged changes applied. */
  get(id: string): ContainerStatus {
    const s = this.store.get(Containers, id)!.status;
    const fn = this.staged.get(id);
    return fn ? fn(s) : s;
  }

  stage(id: string, fn: Mutate): void {
    const prev = this.staged.get(id);
    this.staged.set(id, prev ? (s) => fn(prev(s)) : fn);
  }

  /** Writes what is staged for `id` (nothing when the record is gone). */
  flush(id: string): void {
    const fn = this.staged.get(id);
    if (!fn) return;
    try {
      if (this.store.get(Containers, id)) this.store.updateStatus(Containers, id, fn);
    } catch (err) {
      // A full disk is passing: what failed to be written stays staged for the next write. Any
      // other failure would fail the same way again, so it is dropped as before.
      if (!isStorageFull(err)) this.staged.delete(id);
      throw err;
    }
    this.staged.delete(id);
  }

  /** Written now, together with anything staged before it. */
  set(id: string, fn: Mutate): void {
    this.stage(id, fn);
    this.flush(id);
  }

  drop(id: string): void {
    this.staged.delete(id);
  }
}
