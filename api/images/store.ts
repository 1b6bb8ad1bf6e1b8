// The slice of the store the image routes use: ApiStore plus an atomic multi-write transaction
// (untag + mark removed, tag moves). store/store.ts implements it; cmd wires it.
import type { ApiStore } from '../containers/store.ts';

/** Writes made through `tx` inside `transaction` commit together or not at all. */
export type StoreTx = Pick<ApiStore, 'get' | 'list' | 'create' | 'updateSpec' | 'delete'>;

export interface ImageStore extends ApiStore {
  transaction<R>(fn: (tx: StoreTx) => R): R;
}
