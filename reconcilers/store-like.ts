// The slice of the store the reconcilers use (store/store.ts implements it).
import type { Store } from '../store/store.ts';

export type ReconcilerStore = Pick<Store, 'get' | 'list' | 'byIndex' | 'updateSpec' | 'updateStatus' | 'delete'>;
