// The slice of the store the container routes use (store/store.ts implements it).
import type { Store } from '../../store/store.ts';

export type ApiStore = Pick<Store, 'get' | 'list' | 'byIndex' | 'create' | 'updateSpec' | 'delete' | 'waitFor'>;
