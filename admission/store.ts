// The slice of the store admission reads and writes (store/store.ts implements it): what a create
// route and a reconciler writing desired state (a stack's containers) both hand it.
import type { Store } from '../store/store.ts';

/** Writes made through `tx` inside `transaction` commit together or not at all. */
export type AdmissionTx = Pick<Store, 'get' | 'list' | 'create' | 'updateSpec' | 'delete'>;

export interface AdmissionStore extends Pick<Store, 'get' | 'list' | 'byIndex' | 'create' | 'updateSpec' | 'delete'> {
  transaction<R>(fn: (tx: AdmissionTx) => R): R;
}
